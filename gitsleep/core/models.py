"""The data types of an epoch, defined once.

Everything the core produces (diagnostics, commit message, PR body) is rendered from
these records; nothing downstream recomputes a score. They are plain dataclasses so the
hot path (scoring thousands of answers) stays cheap; `to_dict` turns any of them into
JSON-ready data.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeGuard, get_args

from gitsleep.core.check_ops import FORMAT_OPS, OPS, TRACE_OPS, CheckOp

# the trace and tool types live beside their judges and runners; named here with the rest
from gitsleep.core.tools import ToolSpec as ToolSpec
from gitsleep.core.trace import ToolCall as ToolCall
from gitsleep.core.trace import Trace as Trace

if TYPE_CHECKING:
    from gitsleep.core.triggers import TriggerNight

Split = Literal["train", "val", "test"]
# Where progress lines go, one at a time: stderr in the CLI, a list in tests, nothing with -q.
ProgressLines = Callable[[str], None]
EditOp = Literal["add", "replace", "delete", "template"]
Decision = Literal["accepted", "rejected", "no_edits", "aborted"]
SPLITS: tuple[Split, ...] = get_args(Split)
TARGETS = ("skill", "memory")
# a skill's name: lowercase words joined by hyphens (the config refuses any other; a
# recorded note naming another is not gitsleep's)
SKILL_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")  # \Z: whole, no final newline
EDIT_OPS: tuple[EditOp, ...] = get_args(EditOp)
DECISIONS: tuple[Decision, ...] = get_args(Decision)


def is_split(value: object) -> TypeGuard[Split]:
    return isinstance(value, str) and value in SPLITS


def is_edit_op(value: object) -> TypeGuard[EditOp]:
    return isinstance(value, str) and value in EDIT_OPS


@dataclass(frozen=True)
class Check:
    """One rule check: `op` applied with `arg` (an int for the char bounds)."""

    op: CheckOp
    arg: str | int | None = None
    # a trajectory check (tool_called, tool_not_called): a regex the called tool's
    # arguments (canonical JSON) must match; None: any arguments
    args_regex: str | None = None

    @property
    def text(self) -> str:
        """The arg as text, "" when there is none: what the op table's functions take."""
        return "" if self.arg is None else str(self.arg)

    def label(self) -> str:
        if self.arg is None:
            return self.op
        spec = OPS.get(self.op)
        if spec is not None and spec.arg_shape in ("argv", "file_text", "tool_pair"):
            return f"{self.op} {self.arg}"  # canonical JSON, as the task file wrote it
        shown = f"{self.op} {self.arg!r}"
        return shown if self.args_regex is None else f"{shown} args_regex {self.args_regex!r}"


@dataclass(frozen=True)
class Judge:
    """How an answer is scored: `rule` checks, an `exact` answer, or an LLM `rubric`."""

    kind: str  # rule | exact | rubric
    checks: tuple[Check, ...] = ()
    answer: str | None = None
    rubric: str | None = None

    @property
    def format_only(self) -> bool:
        return self.kind == "rule" and bool(self.checks) and all(
            c.op in FORMAT_OPS for c in self.checks
        )

    @property
    def reads_trace(self) -> bool:
        """Whether a check judges the tools the agent called (only a trace can score it)."""
        return self.kind == "rule" and any(c.op in TRACE_OPS for c in self.checks)


@dataclass(frozen=True)
class Trigger:
    """A trigger task's question: should this skill be picked for the query, and when
    not, which sibling skill it belongs to (None: no skill in particular)."""

    should_trigger: bool
    expect: str | None = None


@dataclass(frozen=True)
class Task:
    """A prompt plus its judge, in exactly one split. A trigger task's prompt is the
    user's query and `trigger` says which skill should be picked for it (its judge is
    the pick, `gitsleep.core.triggers`); every other task has `trigger` None."""

    id: str
    prompt: str
    split: Split
    judge: Judge
    system: str | None = None
    tags: tuple[str, ...] = ()
    source: str = ""  # the task file it came from (for messages)
    line: int | None = None  # 1-based line in that file when known
    review: str | None = None  # "pending": harvested, not yet read by a person (left out of runs)
    workspace: str | None = None  # a repository folder the agent works in
    # where a run reads the workspace from: the git tree id of `workspace` at the commit
    # the tasks were read at, and the checkout whose object store holds it (set on load)
    workspace_tree: str | None = None
    workspace_repo: str | None = None
    # the skill's package folder, pinned on load like a workspace: (folder, git tree id,
    # checkout); installed beside the skill document in the agent's folder
    package: tuple[str, str, str] | None = None
    # several agents: this task as one agent answers it; `id` is then
    # `<task id>@<agent>` (`gitsleep.core.agents.expand`), and `base_id` the task's own id
    agent: str | None = None
    # the tools the agent may call (the task's own, else its skill's), with each folder's
    # files as the edge read them from git at the base commit
    tools: tuple[ToolSpec, ...] = ()
    trigger: Trigger | None = None

    @property
    def base_id(self) -> str:
        """The task's id as its file wrote it (the same for every agent's copy)."""
        return self.id.rsplit("@", 1)[0] if self.agent else self.id


@dataclass(frozen=True)
class Score:
    """A judged answer: hard (0/1), soft (0..1) and the reason the optimizer reads."""

    hard: float
    soft: float
    reason: str
    failed: tuple[Check, ...] = ()  # failed rule checks, most useful to reflection
    # the answer games the learned block (a placeholder repeated, a required part empty):
    # failed whatever its checks said, and counted apart by the passes
    integrity: bool = False


@dataclass
class Answer:
    """One model reply. `error` set means the call failed: it is never scored."""

    text: str | None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    finish_reason: str | None = None  # "length": cut off by the token cap
    seconds: float | None = None  # wall time of the call, when the backend measures it
    tokens_known: bool = True  # False: the backend could not report tokens (an agent CLI)
    # a workspace task's checks judged in the workspace after the agent ran, by the check's
    # index in the judge: (index, passed, reason); None when the call had no workspace
    checks: tuple[tuple[int, bool, str], ...] | None = None
    # a workspace task: the agent's change as a unified diff, redacted and clipped
    diff: str | None = None
    # the tools the agent called, in order; None: the backend cannot say (not "none")
    trace: Trace | None = None
    # model requests the answer took: a tool loop makes one per turn (budgets count each)
    turns: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


@dataclass(frozen=True)
class Edit:
    """A bounded change to one learned block. Only its lines are addressable."""

    # add | replace | delete | template (an answer skeleton, one per document); a str, not
    # an EditOp: a dropped edit keeps the op the optimizer wrote, for the record
    op: str
    content: str = ""
    anchor: str = ""
    rationale: str = ""
    target: str = "skill"  # skill | memory

    def key(self) -> tuple[str, str, str, str]:
        """Identity used to remember rejections: whitespace and case do not matter."""
        norm = " ".join
        return (
            self.target,
            self.op,
            norm(self.anchor.lower().split()),
            norm(self.content.lower().split()),
        )

    def summary(self) -> str:
        if self.op == "add":
            return f"add: {self.content}"
        if self.op == "delete":
            return f"delete: {self.anchor}"
        if self.op == "template":
            return f"template: {self.content}"
        return f"replace: {self.anchor} -> {self.content}"


@dataclass(frozen=True)
class EditOutcome:
    """An edit with what became of it: applied, unmatched or rejected, and why."""

    edit: Edit
    status: str  # applied | unmatched | rejected
    reason: str = ""


@dataclass
class SampleResult:
    """One sample of one task under one document version."""

    sample: int
    answer: str | None
    error: str | None
    score: Score | None  # None when the call failed
    finish_reason: str | None = None  # "length": the answer was cut at max_answer_tokens
    diff: str | None = None  # a workspace task: what the agent changed (for reflection)
    trace: Trace | None = None  # the tools the agent called (for reflection and reports)


@dataclass
class TaskResult:
    """A task scored under one document version: repeats averaged, errors excluded."""

    task_id: str
    split: Split | Literal["rollouts"]  # rollouts: answers sampled for contrast, never gated
    samples: list[SampleResult]
    hard: float | None = None
    soft: float | None = None
    value: float | None = None  # the gate metric; None when every sample failed

    @property
    def errors(self) -> int:
        return sum(1 for s in self.samples if s.error is not None)


@dataclass
class PassResult:
    """One scoring pass: a split under one document version."""

    label: str
    split: Split | Literal["rollouts"]
    version: str  # digest of the documents scored
    tasks: list[TaskResult]
    final: bool = False  # the pass the split's reported candidate score comes from
    calls: int = 0  # model calls this pass made (cache hits excluded)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # early stopping: the pass ended after this many of its `planned` tasks, because the
    # rest could not change the gate's decision (None: every task was scored)
    stopped_after: int | None = None
    planned: int = 0
    seconds: float = 0.0  # wall time of the pass

    @property
    def scored(self) -> list[TaskResult]:
        return [t for t in self.tasks if t.value is not None]

    @property
    def mean(self) -> float | None:
        vals = [t.value for t in self.scored]
        return sum(vals) / len(vals) if vals else None  # type: ignore[arg-type]

    @property
    def errors(self) -> int:
        return sum(t.errors for t in self.tasks)

    def by_id(self) -> dict[str, TaskResult]:
        return {t.task_id: t for t in self.tasks}


@dataclass
class Proposal:
    """One optimizer reply for one target: the edits that survived parsing and hygiene."""

    target: str
    round: int
    index: int
    raw: str | None
    edits: list[Edit] = field(default_factory=list)
    dropped: list[EditOutcome] = field(default_factory=list)
    error: str | None = None
    parse_failures: int = 0
    calls: int = 0  # optimizer calls made: 1, or 2 with the retry
    contrasts: int = 0  # better/worse answer pairs shown (contrastive rollouts)
    # rules whose conditions the judge was asked which train tasks they pick (one call
    # each; the same rule asked again is answered by the cache)
    judged_rules: list[str] = field(default_factory=list)


@dataclass
class TaskDelta:
    task_id: str
    before: float | None
    after: float | None

    @property
    def status(self) -> str:
        if self.before is None or self.after is None:
            return "missing"
        if self.after > self.before:
            return "improved"
        if self.after < self.before:
            return "regressed"
        return "unchanged"


@dataclass
class GateTrial:
    """One candidate document scored on val against the current best."""

    target: str
    round: int
    proposal: int
    baseline: float | None
    candidate: float | None
    accepted: bool
    reason: str
    applied: list[Edit] = field(default_factory=list)
    unmatched: list[EditOutcome] = field(default_factory=list)
    deltas: list[TaskDelta] = field(default_factory=list)
    interval: tuple[float, float] | None = None
    # early stopping: scoring ended after this many val tasks because the candidate could
    # no longer beat the gate; it lost, and `candidate` is None (it has no full val mean)
    stopped_after: int | None = None
    # `search: thrifty`: it did not beat the current documents on the train tasks it was
    # meant to fix, so it was never scored on val (`candidate` is None)
    screened: bool = False
    # its mean beat the gate, but a rule beyond the mean refused it: that rule's words
    refusal: str = ""


@dataclass
class SplitSummary:
    """Baseline vs final scores of a split, with a paired bootstrap 95% interval."""

    baseline: float | None
    candidate: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def improved(self) -> bool:
        return (
            self.baseline is not None
            and self.candidate is not None
            and self.candidate > self.baseline
        )


@dataclass(frozen=True)
class NoiseTest:
    """The sign test on one split's per-task differences (`gitsleep.core.noise`): how many
    tasks rose and fell, the mean change, p, and whether the gain is beyond noise.
    `observations`: answers averaged per task on each side (the documents as they are and
    their re-worded copies)."""

    split: str
    n: int
    up: int
    down: int
    gain: float
    p: float
    alpha: float
    noisy: bool  # the night measured noise; without it a gain is strictly better
    observations: int
    beyond: bool

    def line(self) -> str:
        """`val +0.250 on 12 task(s), 9 up 1 down: sign test p=0.011 <= 0.1, beyond noise`."""
        moved = f"{self.split} {self.gain:+.3f} on {self.n} task(s), {self.up} up {self.down} down"
        if not self.noisy:
            return f"{moved}: no noise measured, strictly better decides" + (
                "" if self.beyond else " (not better)")
        seen = (f", {self.observations} answers a side per task"
                if self.observations > 1 else "")
        verdict = "beyond noise" if self.beyond else "not beyond noise"
        sign = "<=" if self.p <= self.alpha else ">"
        return f"{moved}{seen}: sign test p={self.p:.3g} {sign} {self.alpha:g}, {verdict}"


@dataclass
class Noise:
    """How far the night's val scores moved under a placebo (the original documents with a
    content-free sentence), and the sign tests that judged the night's gain by it."""

    tasks: int  # val tasks scored under both the baseline and the placebo
    moved: int  # of them, tasks whose score differs
    spread: float  # their mean absolute change
    alpha: float
    val: NoiseTest | None = None  # the final documents against the original, re-worded
    test: NoiseTest | None = None  # held-out, for the pull request
    note: str = ""  # a split too small for any gain to be told from noise

    @property
    def noisy(self) -> bool:
        return self.moved > 0

    def summary(self) -> str:
        """`3 of 12 val tasks moved under a placebo (mean |change| 0.125)`."""
        if not self.noisy:
            return (f"no val task of {self.tasks} moved under a placebo: no noise, strictly "
                    "better decides")
        return (f"{self.moved} of {self.tasks} val tasks moved under a placebo (mean |change| "
                f"{self.spread:.3f}): a gain must pass the sign test at {self.alpha:g}")

    def trailer(self) -> str:
        """The `Gitsleep-Noise` trailer: what moved under the placebo and each test's p.
        `val 3/12 moved; gain p=0.011 <= 0.1 (sign test); held-out p=0.145 > 0.1`."""
        said = [f"val {self.moved}/{self.tasks} moved under a placebo"]
        if not self.noisy:
            said.append("no noise, strictly better decides")
        for test in (self.val, self.test):
            if test is not None and test.noisy:
                sign = "<=" if test.p <= test.alpha else ">"
                said.append(f"{test.split} gain {test.gain:+.3f} p={test.p:.3g} {sign} "
                            f"{test.alpha:g} (sign test)")
        if self.note:
            said.append(self.note.split(":")[0] + ": too small to tell a gain from noise")
        return "; ".join(said)


@dataclass
class Cost:
    calls: int = 0
    cache_hits: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)  # model -> tokens, calls
    wall_seconds: float = 0.0  # summed over calls whose backend measures time (agent CLIs)
    unmetered_calls: int = 0  # calls whose tokens nobody reported: counted as 0, not guessed
    seconds: float = 0.0  # the epoch's wall time, start to decision
    # per model: seconds spent in its calls (summed) and the p50/p95 latency of one call
    latency: dict[str, dict[str, float]] = field(default_factory=dict)

    def estimate_usd(self, prices: dict[str, dict[str, float]]) -> float | None:
        """Estimated spend from a {model: {prompt, completion}} USD-per-1M-token table."""
        if not prices:
            return None
        total = 0.0
        for model, used in self.by_model.items():
            price = prices.get(model)
            if price is None:
                return None  # an unpriced model: no estimate rather than a wrong one
            total += usd(price, used.get("prompt_tokens", 0), used.get("completion_tokens", 0))
        return round(total, 6)


def usd(price: Mapping[str, float] | None, prompt_tokens: float,
        completion_tokens: float) -> float:
    """What tokens cost at one model's {prompt, completion} USD-per-1M-token price (no
    price: 0; callers that must not guess check for a price first)."""
    price = price or {}
    return (prompt_tokens * price.get("prompt", 0.0)
            + completion_tokens * price.get("completion", 0.0)) / 1e6


@dataclass
class AgentSummary:
    """One agent's scores in a night of several: baseline vs final per split,
    each over that agent's answers only."""

    name: str
    model: str
    backend: str
    train: SplitSummary
    val: SplitSummary
    test: SplitSummary


@dataclass
class EpochResult:
    """Everything an epoch decided and why. The edges render only from this."""

    skill: str
    decision: Decision
    reason: str
    metric: str
    backend: str
    agent_model: str
    optimizer_model: str
    judge_model: str
    train: SplitSummary
    val: SplitSummary
    test: SplitSummary
    documents: dict[str, tuple[str, str]]  # target -> (before, after)
    applied: list[EditOutcome] = field(default_factory=list)
    rejected: list[EditOutcome] = field(default_factory=list)
    unmatched: list[EditOutcome] = field(default_factory=list)
    passes: list[PassResult] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    trials: list[GateTrial] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)
    pr_eligible: bool = False  # held-out (or val, without test tasks) strictly improved
    no_pr: str = ""  # accepted but not pr_eligible: why, in a few words ('' when not known)
    decided_by: str = "test"  # which split decides the PR: test, or val when test is empty
    abort_code: int = 0  # exit code of an aborted epoch (3 backend, 6 budget), else 0
    # when every candidate tied: per failing val check, did the agent ignore the rules or
    # did they not help (gitsleep.core.diagnose)
    diagnosis: list[dict[str, object]] = field(default_factory=list)
    # what a reviewer should know about the learned rules the scores cannot show, e.g. a
    # rule that asks every answer for a text only some tasks want (gitsleep.core.honesty)
    warnings: list[str] = field(default_factory=list)
    # the val and held-out tasks per group of a key whose train checks want different
    # values (group -> task ids, `gitsleep.core.groups`): scored per group for the reviewer
    groups: dict[str, list[str]] = field(default_factory=dict)
    # per val and held-out task of those groups, what the other groups of its keys want: an
    # answer that passes one carries a wrong value (`groups.other_wants`), counted per group
    other_wants: dict[str, tuple[tuple[Check, ...], ...]] = field(default_factory=dict)
    # several agents: each agent's scores, in the configured order (empty for
    # a night of one agent), and how the gate aggregates them (mean | min)
    agents: list[AgentSummary] = field(default_factory=list)
    agent_gate: str = "mean"
    # how far val moved under a placebo and the sign tests of the night's gain (None: the
    # search changed nothing, so no noise was measured)
    noise: Noise | None = None
    # the description's trigger pass, when the skill allows it and has trigger tasks
    triggers: TriggerNight | None = None

    @property
    def changed(self) -> bool:
        return any(before != after for before, after in self.documents.values())


def to_dict(obj: Any) -> Any:
    """JSON-ready data from any of the records above (non-finite floats become null)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        for name in ("mean", "errors", "status", "improved"):
            prop = getattr(type(obj), name, None)
            if isinstance(prop, property):
                out[name] = to_dict(getattr(obj, name))
        return out
    if isinstance(obj, dict):
        return {str(k): to_dict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@dataclass(frozen=True)
class GateSettings:
    metric: str = "mixed"  # hard | soft | mixed
    mixed_weight: float = 0.5
    min_delta: float = 0.0
    no_regression: bool = False
    repeats: int = 1
    # several agents: how their scores make the one the gate compares (mean | min)
    agents: str = "mean"


@dataclass(frozen=True)
class AgentRef:
    """One of several agents, as the core knows it: a name (trailers, reports, task ids)
    and the model its answer calls name; the edge routes its calls to its backend."""

    name: str
    model: str
    backend: str = ""


class CheckProgram(Protocol):
    """Runs a text task's `command` check: its argv on the answer, seeing `pass_env` beyond
    a minimal environment; whether it passed, and why not. The core starts no process, so
    the edge gives it one (`gitsleep.sandbox.check_program.check_answer`, wired by the config)."""

    def __call__(self, argv: Sequence[str], answer: str, *,
                 pass_env: Sequence[str]) -> tuple[bool, str]: ...


@dataclass(frozen=True)
class EpochSettings:
    """What the core needs from the configuration, with nothing about files or git."""

    model: str
    optimizer_model: str
    judge_model: str
    gate: GateSettings = field(default_factory=GateSettings)
    edit_budget: int = 4
    rounds: int = 2
    proposals: int = 3
    workers: int = 4
    max_calls: int = 500
    max_tokens: int = 2_000_000
    max_error_rate: float = 0.2  # share of failed calls in one pass that aborts the epoch
    max_answer_tokens: int | None = 1024  # completion cap of an agent answer (None: no cap)
    max_reflect_tokens: int | None = 2048  # cap of an optimizer or rubric-judge reply
    block_max_lines: int = 40
    block_max_chars: int = 4000
    rollouts: int = 1  # answers per train task for contrastive reflection (1 = off)
    # stop scoring a candidate on val once it provably cannot beat the gate (off only to
    # show, in the benchmark and tests, that decisions are the same without it)
    early_stop: bool = True
    # thorough: every proposal is gated on val; thrifty: a proposal goes to val only when
    # it beats the current documents on a few train tasks it was meant to fix
    search: str = "thorough"
    max_agent_minutes: float | None = None  # wall minutes in model calls (None: no cap)
    max_cost: float | None = None  # USD at `prices` (None: no cap)
    # {model: {"prompt": USD per 1M tokens, "completion": ...}}; only a cost cap needs it
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # variables a `command` check sees beyond its minimal environment (`checks.pass_env`)
    check_pass_env: tuple[str, ...] = ()
    # what runs a text task's `command` check; None: such a check fails, saying so
    check_program: CheckProgram | None = None
    # several agents: who answers each task; empty: one agent, `model`
    agents: tuple[AgentRef, ...] = ()

    def model_for(self, agent: str | None) -> str:
        """The model an agent answers with (`model` for a night of one agent)."""
        for ref in self.agents:
            if ref.name == agent:
                return ref.model
        return self.model
