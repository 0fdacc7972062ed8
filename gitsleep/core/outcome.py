"""A night's outcome per skill, typed: written once, read by every place that shows it.

`SkillSummary` is the `consolidate --json` object (the interface contract's shape); the
CLI, the demo and the Action's outputs read its fields, never a dict by key. `NoteFacts`
is what `gitsleep log` reads from a diagnostics note (its structure, never a commit
message's prose). Both serialise only at the edge (`to_json`); `from_json` accepts JSON
anyone could have written (a results file, a pushed note): every field is type-checked
and a wrong one reads as unknown, never as an exception.

`opens_pr` is the one "open a pull request?" rule for an epoch's result: the epoch
decided it with `gate.improves` (held-out, else val); nothing else re-derives it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gitsleep.core.scores import rounded

if TYPE_CHECKING:
    from gitsleep.base.redact import Redactor
    from gitsleep.core.models import AgentSummary, EditOutcome, EpochResult, SplitSummary

PR_BODY_LIMIT = 65_536  # GitHub's limit on a pull request's body, in characters


def opens_pr(result: EpochResult) -> bool:
    """Whether this epoch's result asks for a pull request (created or updated)."""
    return result.decision == "accepted" and result.pr_eligible


# -- reading JSON anyone could have written ------------------------------------------------


def _text(value: object, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _opt_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def number(value: object) -> float | None:
    """A finite number, or None (a bool, a string, NaN or infinity is no score)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        found = float(value)
    except OverflowError:  # an integer too large for a float: no score gitsleep wrote
        return None
    return found if math.isfinite(found) else None


def count(value: object) -> int | None:
    """A plausible count (0 <= n < 10**12), or None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**12:
        return None
    return value


def section(data: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`data[key]` when it is an object, else an empty one."""
    value = data.get(key)
    return value if isinstance(value, Mapping) else {}


# -- the parts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """One split's mean score before and after, and its task count."""

    baseline: float | None = None
    candidate: float | None = None
    n: int = 0

    @classmethod
    def of(cls, summary: SplitSummary) -> Scores:
        return cls(summary.baseline, summary.candidate, summary.n)

    def to_json(self) -> dict[str, Any]:
        return {"baseline": rounded(self.baseline), "candidate": rounded(self.candidate),
                "n": self.n}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scores:
        return cls(number(data.get("baseline")), number(data.get("candidate")),
                   count(data.get("n")) or 0)


@dataclass(frozen=True)
class PickRow:
    """One query of a trigger pass: the skill it should pick, and the picks before and after."""

    query: str
    expected: str
    before: str
    after: str

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "expected": self.expected, "before": self.before,
                "after": self.after}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PickRow:
        return cls(*(_text(data.get(key), "?") for key in ("query", "expected", "before",
                                                           "after")))


@dataclass(frozen=True)
class TriggerSummary:
    """A night's trigger pass (the description tuned on which skill is picked): its
    decision, trigger accuracy, the description before and after, and the picks."""

    decision: str
    reason: str = ""
    pr_eligible: bool = False
    val: Scores = Scores()
    test: Scores = Scores()
    description_before: str = ""
    description_after: str = ""
    siblings_fell: str = ""
    picks: tuple[PickRow, ...] = ()
    noise: Mapping[str, object] | None = None  # how far val picks moved under a placebo

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason,
                "pr_eligible": self.pr_eligible, "val": self.val.to_json(),
                "test": self.test.to_json(),
                "description": {"before": self.description_before,
                                "after": self.description_after},
                "siblings_fell": self.siblings_fell,
                "picks": [row.to_json() for row in self.picks],
                "noise": dict(self.noise) if self.noise is not None else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TriggerSummary:
        described, picks = section(data, "description"), data.get("picks")
        return cls(
            decision=_text(data.get("decision"), "?"), reason=_text(data.get("reason")),
            pr_eligible=data.get("pr_eligible") is True,
            val=Scores.from_json(section(data, "val")),
            test=Scores.from_json(section(data, "test")),
            description_before=_text(described.get("before")),
            description_after=_text(described.get("after")),
            siblings_fell=_text(data.get("siblings_fell")),
            picks=tuple(PickRow.from_json(p) for p in picks if isinstance(p, Mapping))
            if isinstance(picks, list) else (),
            noise=dict(data["noise"]) if isinstance(data.get("noise"), Mapping) else None)


@dataclass(frozen=True)
class AgentScores:
    """One agent's scores in a night of several: its name, model and backend, and its val
    and held-out before and after."""

    name: str
    model: str = ""
    backend: str = ""
    val: Scores = Scores()
    test: Scores = Scores()

    @classmethod
    def of(cls, agent: AgentSummary) -> AgentScores:
        return cls(agent.name, agent.model, agent.backend, Scores.of(agent.val),
                   Scores.of(agent.test))

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "backend": self.backend,
                "val": self.val.to_json(), "test": self.test.to_json()}

    @classmethod
    def from_json(cls, data: object) -> AgentScores:
        found = data if isinstance(data, Mapping) else {}
        return cls(_text(found.get("name"), "?"), _text(found.get("model")),
                   _text(found.get("backend")), Scores.from_json(section(found, "val")),
                   Scores.from_json(section(found, "test")))


@dataclass(frozen=True)
class EditRecord:
    """One proposed edit and what became of it (the reason is empty for an applied one)."""

    op: str = ""
    content: str = ""
    anchor: str = ""
    rationale: str = ""
    target: str = ""
    reason: str = ""

    @classmethod
    def of(cls, outcome: EditOutcome) -> EditRecord:
        edit = outcome.edit
        return cls(edit.op, edit.content, edit.anchor, edit.rationale, edit.target,
                   outcome.reason)

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "content": self.content, "anchor": self.anchor,
                "rationale": self.rationale, "target": self.target, "reason": self.reason}

    @classmethod
    def from_json(cls, data: object) -> EditRecord:
        found = data if isinstance(data, Mapping) else {}
        return cls(*(_text(found.get(k)) for k in
                     ("op", "content", "anchor", "rationale", "target", "reason")))


@dataclass(frozen=True)
class Edits:
    """The epoch's edits: applied, rejected by the gate, and those that changed nothing."""

    applied: tuple[EditRecord, ...] = ()
    rejected: tuple[EditRecord, ...] = ()
    unmatched: tuple[EditRecord, ...] = ()

    @classmethod
    def of(cls, result: EpochResult) -> Edits:
        return cls(*(tuple(EditRecord.of(o) for o in outcomes)
                     for outcomes in (result.applied, result.rejected, result.unmatched)))

    def to_json(self) -> dict[str, list[dict[str, str]]]:
        return {"applied": [e.to_json() for e in self.applied],
                "rejected": [e.to_json() for e in self.rejected],
                "unmatched": [e.to_json() for e in self.unmatched]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Edits:
        def kind(name: str) -> tuple[EditRecord, ...]:
            items = data.get(name)
            return tuple(EditRecord.from_json(i) for i in items) if isinstance(items, list) \
                else ()

        return cls(kind("applied"), kind("rejected"), kind("unmatched"))


@dataclass(frozen=True)
class PrResult:
    """What happened to the skill's pull request; `reason` says why there is none."""

    operation: str = "none"  # created | updated | closed | none (create-pull-request's words)
    number: int | None = None
    url: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"operation": self.operation, "number": self.number,
                                "url": self.url}
        if self.operation == "none":
            data["reason"] = self.reason
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PrResult:
        return cls(_text(data.get("operation")) or "none", count(data.get("number")),
                   _opt_text(data.get("url")), _opt_text(data.get("reason")))


@dataclass(frozen=True)
class CostSummary:
    """Model calls, cache hits, tokens and seconds of the epoch; `by_model` per model."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    by_model: Mapping[str, Mapping[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "cache_hits": self.cache_hits,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "seconds": round(self.seconds, 3),
                "by_model": {m: dict(used) for m, used in self.by_model.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CostSummary:
        models = {str(m): {str(k): v for k, v in used.items() if number(v) is not None}
                  for m, used in section(data, "by_model").items()
                  if isinstance(used, Mapping)}
        calls, hits, prompt, completion = (count(data.get(k)) or 0 for k in (
            "calls", "cache_hits", "prompt_tokens", "completion_tokens"))
        return cls(calls, hits, prompt, completion, number(data.get("seconds")) or 0.0, models)


# -- one skill's night -------------------------------------------------------------------


@dataclass(frozen=True)
class SkillSummary:
    """One skill's night as `consolidate --json` prints it (the interface contract).

    `simulated` (offline simulator), `up_to_date` with `recorded_decision` (the branch
    already held this result), `uncommitted` (documents or task files with changes
    git has not committed), `agents` (each agent's scores in a night of several) and
    `groups` (per split and group: scores and wrong values) appear in the JSON only
    when set.
    """

    skill: str
    decision: str
    reason: str = ""
    metric: str = ""
    val: Scores = Scores()
    test: Scores = Scores()
    edits: Edits = Edits()
    branch: str | None = None
    commit: str | None = None
    pr: PrResult = PrResult()
    cost: CostSummary = CostSummary()
    diagnostics: str | None = None
    simulated: bool = False
    up_to_date: bool = False
    recorded_decision: str | None = None
    uncommitted: tuple[str, ...] = ()
    agents: tuple[AgentScores, ...] = ()
    # per split and task, the tools the agent called before and after (tasks with traces)
    tool_calls: Mapping[str, Mapping[str, Mapping[str, list[str] | None]]] = field(
        default_factory=dict)
    noise: Mapping[str, object] | None = None  # the night's noise and sign tests, if measured
    # per split (val, test) and group of a key whose checks want different values: n, the
    # means and the wrong values (answers carrying another group's value), before and after
    groups: tuple[Mapping[str, object], ...] = ()
    triggers: TriggerSummary | None = None  # a trigger pass, when the night ran one

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "skill": self.skill, "decision": self.decision, "reason": self.reason,
            "metric": self.metric, "val": self.val.to_json(), "test": self.test.to_json(),
            "edits": self.edits.to_json(), "branch": self.branch, "commit": self.commit,
            "pr": self.pr.to_json(), "cost": self.cost.to_json(),
            "diagnostics": self.diagnostics,
        }
        if self.simulated:  # additions to the contract's keys, only when true
            data["simulated"] = True
        if self.up_to_date:
            data["recorded_decision"] = self.recorded_decision
            data["up_to_date"] = True
        if self.uncommitted:
            data["uncommitted"] = list(self.uncommitted)
        if self.agents:
            data["agents"] = [agent.to_json() for agent in self.agents]
        if self.tool_calls:
            data["tool_calls"] = {split: {task: dict(calls) for task, calls in tasks.items()}
                                  for split, tasks in self.tool_calls.items()}
        if self.noise is not None:
            data["noise"] = dict(self.noise)
        if self.groups:
            data["groups"] = [dict(row) for row in self.groups]
        if self.triggers is not None:
            data["triggers"] = self.triggers.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SkillSummary:
        """A summary from JSON anyone could have written: a wrong field reads as unknown."""
        uncommitted, agents = data.get("uncommitted"), data.get("agents")
        return cls(
            skill=_text(data.get("skill"), "?"), decision=_text(data.get("decision"), "?"),
            reason=_text(data.get("reason")), metric=_text(data.get("metric")),
            val=Scores.from_json(section(data, "val")),
            test=Scores.from_json(section(data, "test")),
            edits=Edits.from_json(section(data, "edits")),
            branch=_opt_text(data.get("branch")), commit=_opt_text(data.get("commit")),
            pr=PrResult.from_json(section(data, "pr")),
            cost=CostSummary.from_json(section(data, "cost")),
            diagnostics=_opt_text(data.get("diagnostics")),
            simulated=data.get("simulated") is True, up_to_date=data.get("up_to_date") is True,
            recorded_decision=_opt_text(data.get("recorded_decision")),
            uncommitted=tuple(p for p in uncommitted if isinstance(p, str))
            if isinstance(uncommitted, list) else (),
            agents=tuple(AgentScores.from_json(a) for a in agents)
            if isinstance(agents, list) else (),
            tool_calls=_tool_calls(data.get("tool_calls")),
            noise=data["noise"] if isinstance(data.get("noise"), dict) else None,
            groups=tuple(row for row in data["groups"] if isinstance(row, dict))
            if isinstance(data.get("groups"), list) else (),
            triggers=TriggerSummary.from_json(data["triggers"])
            if isinstance(data.get("triggers"), Mapping) else None,
        )

    def redacted(self, redactor: Redactor) -> SkillSummary:
        """The same summary with every string (model names included) redacted."""
        from gitsleep.core.models import to_dict

        return SkillSummary.from_json(redactor.redact_obj(to_dict(self.to_json())))

    def as_up_to_date(self, recorded_edits: Edits) -> SkillSummary:
        """This run decided nothing: it says so (`up_to_date`) and repeats what the branch
        records, its decision (one of the contract's values) with the edits behind it."""
        return replace(self, edits=recorded_edits, recorded_decision=self.decision,
                       up_to_date=True)


def _names(value: Any) -> list[str] | None:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None


def _tool_calls(raw: Any) -> dict[str, dict[str, dict[str, list[str] | None]]]:
    """`tool_calls` as anyone could have written it: what is not a name list reads as none."""
    if not isinstance(raw, Mapping):
        return {}
    return {str(split): {str(task): {side: _names(calls.get(side))
                                     for side in ("before", "after")}
                         for task, calls in tasks.items() if isinstance(calls, Mapping)}
            for split, tasks in raw.items() if isinstance(tasks, Mapping)}


# -- what `log` reads from a diagnostics note -----------------------------------------------


@dataclass(frozen=True)
class NoteFacts:
    """What `gitsleep log` reads from an epoch's diagnostics note, every field checked."""

    skill: str | None = None
    decision: str | None = None
    metric: str | None = None
    val: tuple[float | None, float | None] = (None, None)
    test: tuple[float | None, float | None] = (None, None)
    applied: int | None = None  # edits applied; None when the note does not say
    calls: int | None = None
    cache_hits: int | None = None  # answers the response cache gave (0 calls, still a night)
    usd: float | None = None

    @classmethod
    def from_json(cls, note: Mapping[str, Any]) -> NoteFacts:
        """The facts of a note anyone could have pushed: wrong types read as unknown."""
        splits = section(note, "splits")

        def pair(name: str) -> tuple[float | None, float | None]:
            split = section(splits, name)
            return number(split.get("baseline")), number(split.get("candidate"))

        applied = section(note, "edits").get("applied")
        usd = number(section(note, "extra").get("estimated_usd"))
        return cls(
            skill=_opt_text(note.get("skill")), decision=_opt_text(note.get("decision")),
            metric=_opt_text(note.get("metric")), val=pair("val"), test=pair("test"),
            applied=len(applied) if isinstance(applied, list) else None,
            calls=count(section(note, "cost").get("calls")),
            cache_hits=count(section(note, "cost").get("cache_hits")),
            usd=usd if usd is not None and usd >= 0 else None,
        )
