"""`gitsleep review`, the pure part: score a skill's base and head documents on one exam
(the base's tasks, judges and settings; the head's only with --trust-head), judge the change
per split, list what the head changed in the exam, and say it to people (a PR comment,
JSON, terminal lines).

Scoring goes through the same `replay.score_split` as a night, the interval through the
gate's own paired bootstrap (`gate.summarise`) and "beyond noise" through the night's placebo
and sign test (`gitsleep.core.noise`), so a review and a night agree on what a score, a
change and noise are. Nothing here touches git or the forge (`review/edges.py` reads
the base from git and talks to GitHub). Untrusted text (task ids, answers, judge reasons)
is redacted, then clipped, then escaped before it reaches Markdown, and shown escaped on
one line before it reaches a terminal (or a CI log, where a line is an instruction).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gitsleep.base.redact import Redactor
from gitsleep.base.terminal import visible
from gitsleep.core import agents, gate, groups, judges, noise, replay
from gitsleep.core import markdown as md
from gitsleep.core.calls import CallRunner, Tick, no_tick
from gitsleep.core.models import Check, EpochSettings, PassResult, Split, Task, TaskResult
from gitsleep.core.ports import ModelCall
from gitsleep.core.scores import fmt_score, rounded
from gitsleep.flows.review.triggers import TriggerReview
from gitsleep.flows.review.triggers import markdown as picks_markdown

MARKER = "<!-- gitsleep:review -->"  # finds the one review comment of a pull request
REVIEW_SPLITS: tuple[Split, ...] = ("val", "test")
BOTH = "both"  # a person's change: val and held-out judged together, as one set of tasks
PICKS = "triggers"  # the skill's picks decided: it has no val or held-out body task
SPLIT_NAMES = {"val": "val", "test": "held-out", BOTH: "val + held-out",
               PICKS: "trigger tasks"}
ANSWER_CHARS = 160  # an answer's head in the comment; the whole answer is one re-run away
REASON_CHARS = 160
TASK_ROWS = 20  # changed tasks shown per skill; the rest are counted
EXAM_IDS = 10  # task ids named per line of the head's exam changes; the rest are counted
COMMENT_LIMIT = 60_000  # below GitHub's 65,536-character limit for a comment body

Verdict = Literal["regressed", "improved", "no clear change", "no tasks", "skipped"]
Counter = Callable[[str, int], Tick]


@dataclass(frozen=True)
class TaskChange:
    """One task whose score differs between the base and the head documents."""

    task_id: str
    split: Split
    before: float | None
    after: float | None
    answer_before: str
    answer_after: str
    reason_after: str


@dataclass(frozen=True)
class SplitReview:
    """One split (or `BOTH`, val and held-out together): the mean before and after, n, the
    paired 95% interval of the change, and the per-task changes the sign test reads.
    `noisy`: the base's scores moved under a placebo, so a change must be beyond noise
    (`gitsleep.core.noise`); otherwise the interval decides, as it always did."""

    split: str
    n: int
    before: float | None
    after: float | None
    ci_low: float | None
    ci_high: float | None
    errors: int = 0
    changed: tuple[TaskChange, ...] = ()
    diffs: tuple[float, ...] = ()
    noisy: bool = False
    # per group of a key whose train checks want different values: the answers of its tasks
    # that carry another group's value, (base, head); and why the head adds them, or ''
    wrong: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    adds_wrong: str = ""

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    def regressed(self, min_delta: float) -> bool:
        """The `--fail-on-regression` rule: fell by more than `min_delta`, interval below 0."""
        change = self.change
        if change is None or change >= -min_delta:
            return False
        if self.noisy:
            return noise.fell(self.diffs)
        return self.ci_high is not None and self.ci_high < 0

    def improved(self, min_delta: float) -> bool:
        """Rose by more than `min_delta` (the gate's rule) and beyond noise (the interval
        above 0 when no noise was measured), without answers that carry another group's
        value more often (the gate's wrong-value rule)."""
        if not (self.before is not None and self.after is not None
                and gate.improves(self.before, self.after, min_delta)):
            return False
        if self.adds_wrong:
            return False
        if self.noisy:
            return noise.sign_p(self.diffs) <= noise.ALPHA
        return self.ci_low is not None and self.ci_low > 0

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n, "before": rounded(self.before), "after": rounded(self.after),
            "change": rounded(self.change), "ci_low": rounded(self.ci_low),
            "ci_high": rounded(self.ci_high), "errors": self.errors, "noisy": self.noisy,
            "sign_test": {"rose": sum(1 for d in self.diffs if d > 0),
                          "fell": sum(1 for d in self.diffs if d < 0),
                          "p_rise": rounded(noise.sign_p(self.diffs)),
                          "p_fall": rounded(noise.sign_p([-d for d in self.diffs])),
                          "alpha": noise.ALPHA},
            "wrong_values": {name: {"before": before, "after": after}
                             for name, (before, after) in self.wrong.items()},
            "adds_wrong_values": self.adds_wrong,
            "changed_tasks": [{"id": c.task_id, "before": rounded(c.before),
                               "after": rounded(c.after), "answer_before": c.answer_before,
                               "answer_after": c.answer_after, "reason_after": c.reason_after}
                              for c in self.changed],
        }


@dataclass(frozen=True)
class ExamChanges:
    """What the head changes in a skill's exam (its tasks, checks, judge and scoring
    settings), split by split. Listed, never used to decide unless --trust-head."""

    added: Mapping[str, Sequence[str]] = field(default_factory=dict)  # split -> task ids
    removed: Mapping[str, Sequence[str]] = field(default_factory=dict)
    changed: Mapping[str, Sequence[str]] = field(default_factory=dict)  # prompt/judge/fixture
    settings: Sequence[str] = ()  # scoring settings that differ ("judge_model", ...)
    skill_removed: bool = False  # the head drops the skill from `skills:`
    head_tasks_error: str | None = None  # the head's task files do not load
    package: Sequence[str] = ()  # files of the skill's `package:` the head changes

    @property
    def empty(self) -> bool:
        return not (any(self.added.values()) or any(self.removed.values())
                    or any(self.changed.values()) or self.settings or self.skill_removed
                    or self.head_tasks_error or self.package)

    def lines(self, used: bool) -> list[str]:
        """One plain sentence per kind of change; `used` says whether the exam was the
        head's (--trust-head) or the base's (the change was not used)."""
        fate = "used (--trust-head)" if used else "not used"
        fates = {"adds": fate, "removes": "left out (--trust-head)" if used else "still scored",
                 "changes": fate if used else "not used: the base's version was scored"}
        out = []
        for label, by_split in (("adds", self.added), ("removes", self.removed),
                                ("changes", self.changed)):
            for split, ids in by_split.items():
                if ids:
                    shown = ", ".join(ids[:EXAM_IDS])
                    more = f" and {len(ids) - EXAM_IDS} more" if len(ids) > EXAM_IDS else ""
                    out.append(f"the head {label} {len(ids)} {SPLIT_NAMES.get(split, split)} "
                               f"task(s), {fates[label]}: {shown}{more}")
        if self.settings:
            out.append(f"the head changes scoring settings, {fate}: {', '.join(self.settings)}")
        if self.package:
            shown = ", ".join(self.package[:EXAM_IDS])
            more = f" and {len(self.package) - EXAM_IDS} more" if len(
                self.package) > EXAM_IDS else ""
            out.append(f"the head changes the skill's package, {fate}: {shown}{more}")
        if self.skill_removed:
            out.append("the head removes this skill from `skills:`; it was scored as the "
                       "base has it")
        if self.head_tasks_error:
            out.append(f"the head's task files do not load: {self.head_tasks_error}")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"added": {k: list(v) for k, v in self.added.items() if v},
                "removed": {k: list(v) for k, v in self.removed.items() if v},
                "changed": {k: list(v) for k, v in self.changed.items() if v},
                "settings": list(self.settings), "skill_removed": self.skill_removed,
                "head_tasks_error": self.head_tasks_error, "package": list(self.package)}


@dataclass(frozen=True)
class AgentReview:
    """Several agents: one agent's splits, base against head, and its verdict by
    the same rule as the skill's (held-out, else val)."""

    name: str
    model: str
    splits: Mapping[str, SplitReview]
    verdict: Verdict
    decided_by: str | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "verdict": self.verdict,
                "decided_by": self.decided_by,
                "splits": {name: {k: v for k, v in s.to_json().items() if k != "changed_tasks"}
                           for name, s in self.splits.items()}}


@dataclass
class SkillReview:
    """What the review found for one skill: scored, or skipped with one line saying why."""

    skill: str
    status: Literal["scored", "skipped", "unscored"]  # unscored: no verdict could be reached
    reason: str
    changed_files: list[str] = field(default_factory=list)
    splits: dict[str, SplitReview] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    verdict: Verdict = "skipped"
    # the held-out split, or val when it has no tasks; `BOTH` for a person's change
    decided_by: str | None = None
    calls: int = 0
    cache_hits: int = 0
    exam_changes: ExamChanges | None = None
    agents: list[AgentReview] = field(default_factory=list)  # several agents: each one's
    triggers: TriggerReview | None = None  # its description (or a sibling's) changed

    @property
    def regressed_agents(self) -> list[str]:
        return [a.name for a in self.agents if a.verdict == "regressed"]

    @property
    def regressed(self) -> bool:
        """The `--fail-on-regression` rule: the aggregate regressed, or any one agent did."""
        return self.verdict == "regressed" or bool(self.regressed_agents)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "skill": self.skill, "status": self.status, "verdict": self.verdict,
            "reason": self.reason, "decided_by": self.decided_by,
            "changed_files": self.changed_files, "notes": self.notes,
            "exam_changes": (self.exam_changes or ExamChanges()).to_json(),
            "splits": {name: s.to_json() for name, s in self.splits.items()},
            "cost": {"calls": self.calls, "cache_hits": self.cache_hits}}
        if self.agents:  # a night of one agent keeps its shape
            data["agents"] = [a.to_json() for a in self.agents]
        if self.triggers is not None:
            data["triggers"] = self.triggers.to_json()
        return data


# -- scoring --------------------------------------------------------------------------------


def _first_answer(task: TaskResult | None) -> tuple[str, str]:
    """(answer, judge reason) of a task's first sample; an error is said as one."""
    if task is None:
        return "", ""
    for sample in task.samples:
        if sample.error:
            return "", f"error: {sample.error}"
        if sample.answer is not None:
            return sample.answer, sample.score.reason if sample.score else ""
    return "", ""


@dataclass(frozen=True)
class WrongValues:
    """What counts a wrong value, as a night counts it: the val and held-out tasks per group
    of a key whose train checks want different values, and what the other groups of each
    task's keys want (`gitsleep.core.groups`)."""

    named: Mapping[str, list[str]] = field(default_factory=dict)
    others: Mapping[str, tuple[tuple[Check, ...], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, tasks: Sequence[Task], settings: EpochSettings) -> WrongValues:
        keys = groups.varying_keys([t for t in tasks if t.split == "train"])
        judged = agents.expand([t for t in tasks if t.split in REVIEW_SPLITS], settings.agents)
        return cls(groups.named_groups(keys, judged), groups.other_wants(keys, judged))

    def counted(self, name: str, base: PassResult, head: PassResult
                ) -> tuple[dict[str, tuple[int, int]], str]:
        """Per group, (base, head) counts on the tasks both scored; why the head adds some."""
        if not self.others:
            return {}, ""
        both = {t.task_id for t in base.tasks} & {t.task_id for t in head.tasks}
        scored = {g: [i for i in ids if i in both] for g, ids in self.named.items()}
        scored = {g: ids for g, ids in scored.items() if ids}
        before = gate.wrong_values(base, scored, self.others)
        after = gate.wrong_values(head, scored, self.others)
        counts = {g: (before.get(g, 0), after.get(g, 0)) for g in scored}
        return counts, gate.added_wrong_values(base, head, scored, self.others, split=name)


def compare(split: Split, base: PassResult, head: PassResult, noisy: bool = False,
            wrong: WrongValues | None = None) -> SplitReview:
    """Before/after, n and the paired interval of one split, the tasks that moved, and the
    answers that carry another group's value."""
    counts, adds = (wrong or WrongValues()).counted(f"{SPLIT_NAMES[split]}", base, head)
    summary = gate.summarise(base, head, len(head.tasks))
    diffs = tuple(a - b for _, b, a in gate.paired(base, head))
    before_by_id, after_by_id = base.by_id(), head.by_id()
    changed = []
    for delta in gate.deltas(base, head):
        if delta.status == "unchanged":
            continue
        answer_before, _ = _first_answer(before_by_id.get(delta.task_id))
        answer_after, reason = _first_answer(after_by_id.get(delta.task_id))
        changed.append(TaskChange(delta.task_id, split, delta.before, delta.after,
                                  answer_before, answer_after, reason))
    changed.sort(key=lambda c: (c.after is None or c.before is None,
                                (c.after or 0.0) - (c.before or 0.0)))  # regressions first
    return SplitReview(split, summary.n, summary.baseline, summary.candidate, summary.ci_low,
                       summary.ci_high, base.errors + head.errors, tuple(changed), diffs, noisy,
                       counts, adds)


def together(splits: Mapping[str, SplitReview], base: Sequence[PassResult],
             head: Sequence[PassResult], wrong: WrongValues | None = None) -> SplitReview:
    """Val and held-out as one set of tasks (`BOTH`): a person's change was tuned on
    neither, so both are evidence, and more tasks tell a change from noise sooner. A wrong
    value added on either split is one added to the set."""
    before = PassResult("review base", "val", "", [t for p in base for t in p.tasks])
    after = PassResult("review head", "val", "", [t for p in head for t in p.tasks])
    counts, _ = (wrong or WrongValues()).counted(SPLIT_NAMES[BOTH], before, after)
    summary = gate.summarise(before, after, len(after.tasks))
    parts = [splits[s] for s in REVIEW_SPLITS if s in splits]
    changed = sorted((c for s in parts for c in s.changed),
                     key=lambda c: (c.after is None or c.before is None,
                                    (c.after or 0.0) - (c.before or 0.0)))
    adds = next((s.adds_wrong for s in parts if s.adds_wrong), "")
    return SplitReview(BOTH, summary.n, summary.baseline, summary.candidate, summary.ci_low,
                       summary.ci_high, sum(s.errors for s in parts), tuple(changed),
                       tuple(d for s in parts for d in s.diffs), any(s.noisy for s in parts),
                       counts, adds)


def _cache_key(runner: CallRunner, call: ModelCall) -> str:
    """The key `CallRunner.call` files this call's answer under (with the backend's salt).
    Should the two ever drift, a miss is counted: the bound only grows."""
    key = call.cache_key()
    salt = runner.backend.cache_salt(call)
    return hashlib.sha256(f"{key}:{salt}".encode()).hexdigest() if salt else key


def answer_call(documents: Mapping[str, str | None], task: Task, settings: EpochSettings,
                sample: int) -> ModelCall:
    """The answer call a task's copy makes: its agent's model, and its agent named so the
    backend routes it (several agents); a night of one agent's call as before."""
    return replay.answer_call(documents, task, settings.model_for(task.agent), sample,
                              settings.max_answer_tokens)


def calls_needed(runner: CallRunner, tasks: Sequence[Task],
                 base_documents: Mapping[str, str | None],
                 head_documents: Mapping[str, str | None], settings: EpochSettings) -> int:
    """The most real model calls `score_skill` makes, known before the first: each answer
    call (val and held-out tasks x `gate.repeats` x both sides) the cache does not hold,
    counted once when both sides ask the same, plus a rubric judge call for each answer
    whose judging is not cached either. Reads the cache only, so a review can refuse a
    budget it cannot keep before spending any of it."""
    seen: set[str] = set()
    needed = 0
    repeats = max(1, settings.gate.repeats)
    placebo = noise.placebo(base_documents)
    for task in agents.expand([t for t in tasks if t.split in REVIEW_SPLITS], settings.agents):
        rubric = task.judge.kind == "rubric"
        for sample in range(repeats):
            for documents in (base_documents, head_documents, placebo):
                call = answer_call(documents, task, settings, sample)
                key = _cache_key(runner, call)
                if key in seen:
                    continue
                seen.add(key)
                hit = runner.cache.get(key)
                if hit is None:
                    needed += 2 if rubric else 1
                    continue
                if rubric:
                    judge = judges.rubric_call(settings.judge_model, task.prompt,
                                               task.judge.rubric or "", hit.text or "",
                                               sample, max_tokens=settings.max_reflect_tokens)
                    judge_key = _cache_key(runner, judge)
                    if judge_key not in seen and runner.cache.get(judge_key) is None:
                        needed += 1
                    seen.add(judge_key)
    return needed


def score_skill(runner: CallRunner, tasks: Sequence[Task],
                base_documents: Mapping[str, str | None],
                head_documents: Mapping[str, str | None], settings: EpochSettings, *,
                skill: str, counter: Counter | None = None, person: bool = False,
                ) -> tuple[dict[str, SplitReview], list[AgentReview]]:
    """Score base and head documents on the same tasks, per split (`gate.repeats` samples
    each), and with several agents each agent's answers apart. The base side costs nothing
    when the cache saw it before. The base is scored once more under a placebo (a
    content-free sentence in its learned block): a task that moves there is noise, and then
    a change must pass the sign test (`gitsleep.core.noise`). `person`: the head's learned
    block is a person's change, so val and held-out are judged together (`BOTH`).
    BackendError (too many failed calls) propagates: a failing backend is exit 3, never a
    regression."""
    scored: dict[Split, tuple[PassResult, PassResult]] = {}
    ids: dict[Split, dict[str, list[str]]] = {}  # several agents: each one's task copies
    moved = False
    repeats = max(1, settings.gate.repeats)
    for split in REVIEW_SPLITS:
        in_split = agents.expand([t for t in tasks if t.split == split], settings.agents)
        if not in_split:
            continue
        passes = []
        for side, documents in (("base", base_documents), ("head", head_documents),
                                ("placebo", noise.placebo(base_documents))):
            tick = (counter(f"{skill}: scoring {split} ({side})", len(in_split) * repeats)
                    if counter else no_tick)
            passes.append(replay.score_split(runner, in_split, documents, settings,
                                             label=f"review {side}", split=split,
                                             on_answer=tick))
        moved = moved or any(d != 0 for d in noise.differences([passes[0]], [passes[2]]))
        scored[split] = (passes[0], passes[1])
        ids[split] = agents.agent_ids(in_split)
    out, by_agent = _judged(scored, ids, moved, person, settings,
                            WrongValues.of(tasks, settings))
    return out, [AgentReview(name, settings.model_for(name), splits,
                             *verdict_of(splits, settings.gate.min_delta))
                 for name, splits in by_agent.items()]


def _judged(scored: Mapping[Split, tuple[PassResult, PassResult]],
            ids: Mapping[Split, Mapping[str, list[str]]], noisy: bool, person: bool,
            settings: EpochSettings, wrong: WrongValues
            ) -> tuple[dict[str, SplitReview], dict[str, dict[str, SplitReview]]]:
    """Each split's review (and `BOTH` for a person's change), whole and per agent."""
    together_too = person and len(scored) == len(REVIEW_SPLITS)
    out: dict[str, SplitReview] = {split: compare(split, base, head, noisy, wrong)
                                   for split, (base, head) in scored.items()}
    if together_too:
        out[BOTH] = together(out, [b for b, _ in scored.values()],
                             [h for _, h in scored.values()], wrong)
    by_agent: dict[str, dict[str, SplitReview]] = {a.name: {} for a in settings.agents}
    for name, mine in by_agent.items():
        parts = {split: (agents.only_agent(base, ids[split].get(name, [])),
                         agents.only_agent(head, ids[split].get(name, [])))
                 for split, (base, head) in scored.items()}
        for split, (base, head) in parts.items():
            mine[split] = compare(split, base, head, noisy, wrong)
        if together_too:
            mine[BOTH] = together(mine, [b for b, _ in parts.values()],
                                  [h for _, h in parts.values()], wrong)
    return out, by_agent


def verdict_of(splits: Mapping[str, SplitReview], min_delta: float
               ) -> tuple[Verdict, str | None]:
    """The skill's verdict from the held-out split (val when no task is held out); from
    val and held-out together (`BOTH`) for a person's change."""
    deciding: str | None = (BOTH if BOTH in splits and splits[BOTH].n
                            else "test" if "test" in splits and splits["test"].n
                            else "val" if "val" in splits and splits["val"].n else None)
    if deciding is None:
        return "no tasks", None
    split = splits[deciding]
    if split.regressed(min_delta):
        return "regressed", deciding
    if split.improved(min_delta):
        return "improved", deciding
    return "no clear change", deciding


def with_picks(body: Verdict, picks: TriggerReview) -> Verdict:
    """The skill's verdict with its picks in it: either side regressing is a regression;
    either improving, with neither regressing, an improvement; the picks alone when the
    skill has no val or held-out body task."""
    if picks.verdict is None:
        return body
    both = {body, picks.verdict}
    if "regressed" in both:
        return "regressed"
    if "improved" in both:
        return "improved"
    return picks.verdict if body == "no tasks" else body


def overall(reviews: Sequence[SkillReview]) -> str:
    """One word for the whole review: the worst skill's verdict wins (a skill one of whose
    agents regressed is a regression)."""
    if any(r.regressed for r in reviews):
        return "regression"
    verdicts = {r.verdict for r in reviews}
    for word in ("regressed", "improved", "no clear change"):
        if word in verdicts:
            return {"regressed": "regression", "improved": "improvement"}.get(word, word)
    if any(r.status == "unscored" for r in reviews):
        return "not scored"
    return "nothing to review"


# -- saying it ------------------------------------------------------------------------------


def regression_line(reviews: Sequence[SkillReview]) -> str:
    """The one stderr line of exit 7, naming each agent that regressed (several agents)."""
    named = [f"{r.skill} agent {name}" for r in reviews for name in r.regressed_agents]
    which = f" ({one_line(', '.join(named))})" if named else ""
    both = any(r.decided_by == BOTH and r.verdict == "regressed" for r in reviews)
    what = "the val and held-out score" if both else "a held-out score"
    return f"gitsleep: {what} regressed (--fail-on-regression){which}: exit 7"


def _interval(split: SplitReview) -> str:
    if split.ci_low is None or split.ci_high is None:
        return "n/a"
    return f"{split.ci_low:+.3f} to {split.ci_high:+.3f}"


def _exam_lines(review: SkillReview, trusted_head: bool) -> list[str]:
    return review.exam_changes.lines(trusted_head) if review.exam_changes else []


def _change(split: SplitReview) -> str:
    return "n/a" if split.change is None else f"{split.change:+.3f}"


class _Prose:
    """Redact, then clip, then escape: the one road from untrusted text into Markdown."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def text(self, value: str, limit: int) -> str:
        return md.escape(self.redactor.clip(md.one_line(value), limit)) or " "

    def code(self, value: str, limit: int) -> str:
        return md.code_span(self.redactor.clip(md.one_line(value), limit)).replace("|", "\\|")

    def block(self, value: str) -> str:
        return md.fence(self.redactor.redact(value), "text")


def one_line(text: str) -> str:
    """Untrusted text for a terminal or a CI log: control characters shown escaped, and on
    one line (a task id holding `\\n::error ...` must not start a line of its own)."""
    return visible(text).replace("\n", "\\n")


def terminal_lines(review: SkillReview, metric: str, redactor: Redactor, *,
                   trusted_head: bool = False) -> list[str]:
    """What `gitsleep review` prints per skill on stdout (without --json): every piece of
    untrusted text redacted, then escaped onto its line (the redactor reads through
    invisible characters, so it goes first)."""

    def shown(text: str) -> str:
        return one_line(redactor.redact(text))

    name = shown(review.skill)
    exam = [f"  exam: {shown(line)}" for line in _exam_lines(review, trusted_head)]
    exam += [f"  picks: {shown(line)}" for line in
             (review.triggers.lines() if review.triggers is not None else [])]
    if review.status != "scored":
        return [f"{name}: {review.status}: {shown(review.reason)}", *exam]
    lines = [f"{name}: {review.verdict}"
             + (f" (decided by {SPLIT_NAMES[review.decided_by]})" if review.decided_by else "")
             + f": {shown(review.reason)}"]
    for split_name, split in review.splits.items():
        lines.append(f"  {SPLIT_NAMES[split_name]:8} n={split.n:<4} {metric} "
                     f"{fmt_score(split.before)} -> {fmt_score(split.after)}  change "
                     f"{_change(split)}  95% CI {_interval(split)}  errors={split.errors}")
        for change in split.changed[:TASK_ROWS]:
            lines.append(f"    {shown(change.task_id)}: {fmt_score(change.before)} -> "
                         f"{fmt_score(change.after)}")
        if len(split.changed) > TASK_ROWS:
            lines.append(f"    ... and {len(split.changed) - TASK_ROWS} more changed task(s)")
        if split.adds_wrong and split_name != BOTH:  # BOTH repeats a split's
            lines.append(f"    wrong values: {shown(split.adds_wrong)}")
    lines += [f"  agent {shown(a.name)} ({shown(a.model)}): {_agent_summary(a)}"
              for a in review.agents]
    lines += [f"  note: {shown(note)}" for note in review.notes]
    return lines + exam


def _agent_summary(agent: AgentReview) -> str:
    """`held-out 1.000 -> 0.500 (change -0.500, 95% CI -0.800 to -0.200): regressed`."""
    if agent.decided_by is None:
        return "no val or held-out tasks"
    split = agent.splits[agent.decided_by]
    return (f"{SPLIT_NAMES[agent.decided_by]} {fmt_score(split.before)} -> "
            f"{fmt_score(split.after)} (change {_change(split)}, 95% CI {_interval(split)}): "
            f"{agent.verdict}")


_VERDICT_TEXT = {
    "regressed": "**regressed**",
    "improved": "improved",
    "no clear change": "no clear change",
    "no tasks": "no val or held-out tasks",
}


def exam_sentence(trusted_head: bool) -> str:
    """Where the exam came from, said the same way in the comment and on the terminal."""
    if trusted_head:
        return ("scored on the head's tasks, judges and settings (--trust-head: the head's "
                "command checks, fixtures and agent settings ran)")
    return ("scored on the base's tasks, judges and settings (the head's changes to them are "
            "listed, not used; none of the head's programs ran)")


def rerun_sentence(trusted_head: bool) -> str:
    """What the re-run command will run, so nobody runs a stranger's program unawares."""
    if trusted_head:
        return ("It runs the head's command checks, fixtures and agent settings with your "
                "environment: read them first.")
    return ("It runs the base's tasks, checks and agent settings on both documents; none of "
            "the head's programs run (add --trust-head only after reading them).")


def comment_markdown(reviews: Sequence[SkillReview], *, metric: str, min_delta: float,
                     base_label: str, head_label: str, rerun: str, redactor: Redactor,
                     notes: Sequence[str] = (), trusted_head: bool = False) -> str:
    """The PR comment (and step summary): marker, verdict, table, changed tasks, the head's
    changes to the exam, re-run.

    Deterministic for the same inputs, so an unchanged review needs no API write."""
    prose = _Prose(redactor)
    out = [MARKER, f"## gitsleep review: {overall(reviews)}", "",
           f"Base {prose.text(base_label, 80)} against head {prose.text(head_label, 80)}, "
           f"{exam_sentence(trusted_head)}; metric `{metric}`, paired 95% bootstrap interval "
           f"of the change; a skill regresses when its held-out score (val and held-out "
           f"together for a person's change) falls by more than min_delta {min_delta:g} "
           f"beyond noise: the interval below zero, or where the base's scores moved under a "
           f"placebo, the sign test at {noise.ALPHA:g}.", ""]
    out += [f"> {prose.text(note, 400)}" for note in notes]
    if notes:
        out.append("")
    rows = []
    for review in reviews:
        if review.status == "skipped":
            continue
        for name, split in review.splits.items():
            rows.append([prose.text(review.skill, 60), SPLIT_NAMES[name], str(split.n),
                         fmt_score(split.before), fmt_score(split.after), _change(split),
                         _interval(split), _VERDICT_TEXT[review.verdict]
                         if name == review.decided_by else ""])
    if rows:
        out += [md.table(["skill", "split", "n", "before", "after", "change", "95% CI",
                          "verdict"], rows, "llrrrrrl"), ""]
    agent_rows = [[prose.text(review.skill, 60), prose.text(a.name, 40),
                   prose.text(a.model, 80), SPLIT_NAMES[name], str(split.n),
                   fmt_score(split.before), fmt_score(split.after), _change(split),
                   _interval(split), _VERDICT_TEXT[a.verdict] if name == a.decided_by else ""]
                  for review in reviews if review.status == "scored"
                  for a in review.agents for name, split in a.splits.items()]
    if agent_rows:
        out += ["Per agent (several agents read these documents; with --fail-on-regression "
                "any one agent's regression fails the check):", "",
                md.table(["skill", "agent", "model", "split", "n", "before", "after",
                          "change", "95% CI", "verdict"], agent_rows, "llllrrrrrl"), ""]
    skipped = [r for r in reviews if r.status != "scored"]
    for review in skipped:
        out.append(f"- {prose.text(review.skill, 60)}: {review.status}: "
                   f"{prose.text(review.reason, 300)}")
        out += [f"  - _exam:_ {prose.text(line, 400)}" for line in _exam_lines(review,
                                                                              trusted_head)]
        out += [f"  - _picks:_ {prose.text(line, 400)}" for line in
                (review.triggers.lines() if review.triggers is not None else [])]
    if skipped:
        out.append("")
    for review in reviews:
        if review.status != "scored":
            continue
        changed = [c for s in review.splits.values() for c in s.changed]
        out.append(f"### {prose.text(review.skill, 60)}")
        out.append("")
        out.append(prose.text(review.reason, 500))
        out += [f"- _note:_ {prose.text(note, 400)}" for note in review.notes]
        out += [f"- _wrong values ({SPLIT_NAMES[name]}):_ {prose.text(split.adds_wrong, 400)}"
                for name, split in review.splits.items()
                if split.adds_wrong and name != BOTH]
        out += [f"- _exam:_ {prose.text(line, 400)}" for line in _exam_lines(review,
                                                                            trusted_head)]
        out.append("")
        if review.triggers is not None:
            out += picks_markdown(review.triggers, prose.text, prose.code, prose.block)
        if not changed:
            out += ["No task's score changed.", ""] if review.splits else []
            continue
        task_rows = [[prose.text(c.task_id, 80), SPLIT_NAMES[c.split], fmt_score(c.before),
                      fmt_score(c.after), prose.text(c.answer_before, ANSWER_CHARS),
                      prose.text(c.answer_after, ANSWER_CHARS),
                      prose.text(c.reason_after, REASON_CHARS)]
                     for c in changed[:TASK_ROWS]]
        out += ["<details><summary>Tasks whose score changed "
                f"({len(changed)})</summary>", "",
                md.table(["task", "split", "before", "after", "answer before",
                          "answer after", "judge (after)"], task_rows, "llrrlll")]
        if len(changed) > TASK_ROWS:
            out.append(f"\n_and {len(changed) - TASK_ROWS} more; the re-run below lists all._")
        out += ["", "</details>", ""]
    out += ["Re-run locally, in a checkout of this change (answers are cached, so a second "
            f"run makes no model call). {rerun_sentence(trusted_head)}", "",
            md.fence(rerun + "\n", "sh")]
    body = "\n".join(out) + "\n"
    if len(body) > COMMENT_LIMIT:  # rows are bounded, so only many skills get here
        body = body[:COMMENT_LIMIT].rstrip() + "\n\n_Cut to fit GitHub's size limit; " \
            "re-run locally for the rest._\n"
    return body
