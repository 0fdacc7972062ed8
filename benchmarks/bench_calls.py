"""Sections 1 and 2: the model calls an epoch makes against the floor, and a re-run's cost.

The floor is what the epoch's own decisions required, counted from its `EpochResult`
alone (never from `cost.calls`):

- one answer call per distinct (document version, task id, sample) over every scoring
  pass: the same version scored twice must come from the cache;
- one judge call per distinct (task id, sample, answer text) of a rubric task: the judge
  sees only the task and the answer, so the same answer is judged once;
- one reflect call per proposal, plus one when it spent its retry (a reply that did not
  parse, or whose every edit hygiene rejected);
- one condition-judge call per distinct rule whose conditions were judged (a rule that
  gives a value under a condition: `reflect.judge_conditions`), counted with the judges.

A ratio of calls to floor above 1.00 means the cache or the schedule paid twice for
something it already knew. Each epoch also runs once with a cache that stores nothing
(`NoCache`): equal counts show the schedule itself never asks twice (it keeps the
passes it scored), so the cache's job is re-runs and repeated candidates, not the floor.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import generate
from gitsleep.backends.offline import OfflineBackend
from gitsleep.base.bundled import examples_dir
from gitsleep.core import reflect
from gitsleep.core.cache import ResponseCache
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, EpochResult, EpochSettings, Task
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.inputs.config import load_config
from gitsleep.inputs.tasks import load_skill_tasks
from gitsleep.sandbox import check_program as command_check

OFFLINE = "offline"
UNLIMITED = 10**12  # the benchmark measures calls and tokens; it must never hit a budget


class NoCache(ResponseCache):
    """A response cache that stores nothing: every request is a model call."""

    def put(self, key: str, answer: Any) -> None:
        return None


@dataclass(frozen=True)
class Floor:
    """The fewest calls an epoch's passes and proposals could have cost."""

    answers: int
    judges: int
    proposals: int

    @property
    def total(self) -> int:
        return self.answers + self.judges + self.proposals


def floor_of(result: EpochResult, tasks: Sequence[Task]) -> Floor:
    """Count the floor from the passes and proposals of `result` (see module docstring)."""
    rubric_ids = {t.id for t in tasks if t.judge.kind == "rubric"}
    answers: set[tuple[str, str, int]] = set()
    judged: set[tuple[str, int, str]] = set()
    for scoring in result.passes:
        for task in scoring.tasks:
            for sample in task.samples:
                answers.add((scoring.version, task.task_id, sample.sample))
                if task.task_id in rubric_ids and sample.answer is not None:
                    judged.add((task.task_id, sample.sample, sample.answer))
    proposals = sum(p.calls for p in result.proposals)
    conditions = {rule for p in result.proposals for rule in p.judged_rules}
    return Floor(len(answers), len(judged) + len(conditions), proposals)


PHASES = ("baseline", "reflect", "screen", "proposals", "edit alone", "merge", "leave-one-out",
          "delete evidence", "finish stopped", "train re-score", "final test", "noise", "other")


def phase_of(label: str) -> str:
    """Which step of the epoch a pass with this label belongs to (`Epoch`'s labels)."""
    if label == "baseline":
        return "baseline"
    if "re-worded" in label:  # the placebo and the gain seen afresh (`gitsleep.core.noise`)
        return "noise"
    for part, phase in (("screen on train", "screen"), ("(the rest", "finish stopped"),
                        ("without the delete", "delete evidence"),
                        ("without:", "leave-one-out"), ("merged", "merge"),
                        ("alone", "edit alone"), ("proposal", "proposals")):
        if part in label:
            return phase
    if label.startswith("after "):
        return "train re-score"
    return "final test" if label == "final" else "other"


def calls_by_phase(result: EpochResult) -> dict[str, int]:
    """Model calls per step of the epoch: where the calls above SkillOpt-Sleep's go."""
    counts = dict.fromkeys(PHASES, 0)
    for scoring in result.passes:
        counts[phase_of(scoring.label)] += scoring.calls
    counts["reflect"] += sum(p.calls for p in result.proposals)
    return {phase: n for phase, n in counts.items() if n}


# -- SkillOpt-Sleep's schedule, modelled -------------------------------------------------


@dataclass(frozen=True)
class RoundOutcome:
    """What one target's round did in our epoch, read as one SkillOpt-Sleep night's step."""

    failures: bool  # train had failures, so the optimizer was asked
    replied: bool  # some reply held edits (SkillOpt-Sleep asks again after an empty one)
    trial: bool  # an edit applied, so a candidate was scored on val
    accepted: bool  # a candidate was accepted


def round_outcomes(result: EpochResult, target: str, rounds: int) -> list[RoundOutcome]:
    """Our epoch's outcome of each round `1..rounds` for `target`.

    Our epoch stops a target early when train has no failures or the optimizer has
    nothing new; a later night would see the same documents, so it repeats that outcome
    (asked again with failures left, or not asked at all without them).
    """
    outcomes: list[RoundOutcome] = []
    for round_no in range(1, rounds + 1):
        proposals = [p for p in result.proposals if p.target == target and p.round == round_no]
        trials = [t for t in result.trials if t.target == target and t.round == round_no]
        if proposals:
            outcomes.append(RoundOutcome(
                failures=True,
                replied=any(p.edits or p.dropped for p in proposals),
                trial=bool(trials),
                accepted=any(t.accepted for t in trials),
            ))
        elif outcomes and outcomes[-1].failures and not outcomes[-1].trial:
            outcomes.append(RoundOutcome(True, outcomes[-1].replied, False, False))
        else:
            outcomes.append(RoundOutcome(False, False, False, False))
    return outcomes


def skillopt_calls(
    outcomes: Mapping[str, Sequence[RoundOutcome]],
    sizes: Mapping[str, int],
    *,
    nights: int,
    cache_across_nights: bool,
) -> int:
    """The calls SkillOpt-Sleep's consolidation schedule makes for the same work.

    Our model of its schedule (reference: its design brief, sections 6.2 and 1.6):
    one reflect->gate step per target per night, so our `rounds` become that many
    nights. Each night, in order:

    1. replay val under the current documents (the gate baseline);
    2. replay train under them (failures for reflection);
    3. skill: reflect once (asked again when the reply holds no edit), then, when an
       edit applied, replay val under the candidate (the trial);
    4. memory (when there is a memory document): re-replay train under the skill as it
       now stands, reflect once (again after an empty reply), replay val under the
       candidate when an edit applied;
    5. a final replay of val under the final documents;
    6. the held-out test split, replayed under the final documents.

    The held-out baseline (test under the original documents) is scored once before the
    first night. Its response cache is keyed by (kind, task, documents, sample) and lives
    in the process only: a replay already made in the same process is free, so step 5 is
    always a cache hit and step 4's train re-replay is free unless the skill changed.
    With `cache_across_nights` False each night is a new process (how its nightly cycle
    runs): nothing carries over. With True, one process runs every night (its best case).
    Which steps produce an edit and which candidates are accepted are taken from our
    epoch's rounds (`round_outcomes`), so both schedules do the same work; the rubric
    judge calls are folded into `sizes` (an answer plus a judge call per rubric task).
    Reflect replies are assumed to parse first time (the offline optimizer's do).
    """
    cache: set[tuple[str, tuple[int, int]]] = set()
    total = 0
    next_version = 0

    def replay(split: str, documents: tuple[int, int]) -> None:
        nonlocal total
        if (split, documents) not in cache:
            cache.add((split, documents))
            total += sizes[split]

    def new_version() -> int:
        nonlocal next_version
        next_version += 1
        return next_version

    documents = (0, 0)
    replay("test", documents)  # the held-out baseline, before night 1
    for night in range(nights):
        if not cache_across_nights:
            cache.clear()
        replay("val", documents)
        replay("train", documents)
        for target in outcomes:
            step = outcomes[target][night]
            if target == "memory":
                replay("train", documents)  # train under the skill as it now stands
            if not step.failures:
                continue
            total += 1 if step.replied else 2
            if step.trial:
                candidate = ((new_version(), documents[1]) if target == "skill"
                             else (documents[0], new_version()))
                replay("val", candidate)
                if step.accepted:
                    documents = candidate
        replay("val", documents)  # the final val replay
        replay("test", documents)
    return total


def call_sizes(tasks: Sequence[Task], repeats: int) -> dict[str, int]:
    """Calls one replay of each split costs: answers, plus judge calls for rubric tasks."""
    sizes = {"train": 0, "val": 0, "test": 0}
    for task in tasks:
        sizes[task.split] += (2 if task.judge.kind == "rubric" else 1) * max(1, repeats)
    return sizes


# -- running epochs ------------------------------------------------------------------------


@dataclass
class Workload:
    """An example to consolidate: its tasks, documents and settings."""

    name: str
    tasks: list[Task]
    documents: dict[str, str | None]
    settings: EpochSettings

    @property
    def split_counts(self) -> dict[str, int]:
        return {s: sum(1 for t in self.tasks if t.split == s) for s in ("train", "val", "test")}


def demo_workload() -> Workload:
    """The bundled brief-writer example, with its own config's settings."""
    return example_workload("brief-writer", "demo (brief-writer)")


def example_workload(name: str, title: str | None = None) -> Workload:
    """A bundled example (its skill has the example's name), with its own config."""
    root = examples_dir() / name
    config = load_config(root / ".gitsleep.yml")
    skill = config.skill(name)
    tasks = load_skill_tasks(root, skill)
    documents: dict[str, str | None] = {
        "skill": (root / skill.skill).read_text(encoding="utf-8"),
        "memory": (root / skill.memory).read_text(encoding="utf-8") if skill.memory else None,
    }
    return Workload(title or name, tasks, documents, config.epoch_settings())


def offline_settings(**changes: Any) -> EpochSettings:
    """The defaults of `.gitsleep.yml` (rounds 2, proposals 3, edit_budget 4, workers 4)."""
    base = EpochSettings(model=OFFLINE, optimizer_model=OFFLINE, judge_model=OFFLINE,
                         check_program=command_check.check_answer)
    return dataclasses.replace(base, **changes)


def generated_workload(
    n_train: int = 100,
    n_val: int = 50,
    n_test: int = 50,
    *,
    rubric_share: float = 0.0,
    memory: bool = True,
    **settings: Any,
) -> Workload:
    """Generated tasks with the skill (and memory) document; `settings` change the defaults."""
    tasks = generate.make_tasks(n_train, n_val, n_test, rubric_share=rubric_share)
    total = n_train + n_val + n_test
    changed = "".join(f", {k}={v}" for k, v in settings.items())
    return Workload(
        f"generated {total}{changed}",
        tasks,
        {"skill": generate.SKILL_DOCUMENT,
         "memory": generate.MEMORY_DOCUMENT if memory else None},
        offline_settings(**settings),
    )


@dataclass
class CallsRow:
    """One epoch of section 1, measured and modelled."""

    example: str
    splits: dict[str, int]
    rounds: int
    proposals: int
    calls: int
    cache_hits: int
    floor: Floor
    skillopt_nightly: int
    skillopt_one_process: int
    decision: str
    seconds: float
    # per target and round that ran: (candidates gated on val, accepted or not)
    rounds_run: list[tuple[str, int, int, bool]] = field(default_factory=list)
    changed: bool = False
    calls_without_cache: int | None = None  # the same epoch with NoCache
    calls_without_early_stop: int | None = None  # the same epoch scoring every val task
    val_share: float = 1.0  # val tasks scored per candidate, over val tasks (early stopping)
    by_phase: dict[str, int] = field(default_factory=dict)  # calls per step (calls_by_phase)

    @property
    def ratio(self) -> float:
        return self.calls / self.floor.total if self.floor.total else 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "example": self.example, "splits": self.splits, "rounds": self.rounds,
            "proposals": self.proposals, "calls": self.calls, "cache_hits": self.cache_hits,
            "calls_without_cache": self.calls_without_cache,
            "calls_without_early_stop": self.calls_without_early_stop,
            "val_share": round(self.val_share, 4),
            "floor": {**dataclasses.asdict(self.floor), "total": self.floor.total},
            "calls_over_floor": round(self.ratio, 4),
            "skillopt_nightly": self.skillopt_nightly,
            "skillopt_nightly_over_ours": round(self.skillopt_nightly / self.calls, 4),
            "skillopt_one_process": self.skillopt_one_process,
            "skillopt_one_process_over_ours": round(self.skillopt_one_process / self.calls, 4),
            "decision": self.decision, "seconds": round(self.seconds, 4),
            "rounds_run": [
                {"target": t, "round": r, "candidates": k, "accepted": a}
                for t, r, k, a in self.rounds_run
            ],
            "documents_changed": self.changed,
            "calls_by_phase": self.by_phase,
        }


def measure_epoch(
    workload: Workload,
    rounds: int,
    *,
    backend_factory: Callable[[], Backend] = OfflineBackend,
    cache: ResponseCache | None = None,
) -> tuple[CallsRow, EpochResult]:
    """Run one epoch and account for every call it made."""
    settings = dataclasses.replace(workload.settings, rounds=rounds, max_calls=UNLIMITED,
                                   max_tokens=UNLIMITED)
    started = time.perf_counter()
    result = run_epoch(workload.tasks, workload.documents, settings, backend_factory(),
                       skill="bench", cache=cache if cache is not None else ResponseCache())
    seconds = time.perf_counter() - started
    targets = ["skill"] + (["memory"] if workload.documents.get("memory") is not None else [])
    outcomes = {t: round_outcomes(result, t, rounds) for t in targets}
    sizes = call_sizes(workload.tasks, settings.gate.repeats)
    ran = sorted({(p.target, p.round) for p in result.proposals},
                 key=lambda tr: (targets.index(tr[0]), tr[1]))
    rounds_run = [
        (t, r, sum(1 for g in result.trials if g.target == t and g.round == r),
         any(g.accepted for g in result.trials if g.target == t and g.round == r))
        for t, r in ran
    ]
    candidates = len(result.trials) * workload.split_counts["val"]
    scored = sum(len(p.tasks) for p in result.passes if p.split == "val" and p.label != "baseline")
    row = CallsRow(
        example=workload.name,
        splits=workload.split_counts,
        rounds=rounds,
        proposals=settings.proposals,
        calls=result.cost.calls,
        cache_hits=result.cost.cache_hits,
        floor=floor_of(result, workload.tasks),
        skillopt_nightly=skillopt_calls(outcomes, sizes, nights=rounds,
                                        cache_across_nights=False),
        skillopt_one_process=skillopt_calls(outcomes, sizes, nights=rounds,
                                            cache_across_nights=True),
        decision=result.decision,
        seconds=seconds,
        rounds_run=rounds_run,
        changed=result.changed,
        val_share=scored / candidates if candidates else 1.0,
        by_phase=calls_by_phase(result),
    )
    return row, result


def without_early_stop(workload: Workload) -> Workload:
    """The same workload scoring every candidate on every val task (for the comparison)."""
    return dataclasses.replace(
        workload, settings=dataclasses.replace(workload.settings, early_stop=False))


class EarlyStopChangedADecision(AssertionError):
    """Early stopping must never change what an epoch decides or writes."""


def calls_section(
    workloads: Sequence[Workload], rounds: Sequence[int] = (1, 2, 3)
) -> list[CallsRow]:
    """Section 1: every workload at every round count, with and without the cache."""
    rows = []
    for workload in workloads:
        for count in rounds:
            row, result = measure_epoch(workload, count)
            row.calls_without_cache = measure_epoch(workload, count, cache=NoCache())[0].calls
            full_row, full = measure_epoch(without_early_stop(workload), count)
            if (result.decision, result.documents, [p.raw for p in result.proposals]) != (
                    full.decision, full.documents, [p.raw for p in full.proposals]):
                raise EarlyStopChangedADecision(
                    f"{workload.name}, rounds {count}: {result.decision} with early stopping, "
                    f"{full.decision} without")
            row.calls_without_early_stop = full_row.calls
            rows.append(row)
    return rows


# -- section 2: the same epoch again, from the persistent cache ------------------------------


@dataclass
class RerunResult:
    example: str
    rounds: int
    first_calls: int
    first_cache_hits: int
    first_seconds: float
    rerun_calls: int
    rerun_cache_hits: int
    rerun_seconds: float
    same_decision: bool

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def rerun_section(
    workload: Workload, rounds: int = 3, directory: Path | None = None
) -> RerunResult:
    """Run an epoch with an on-disk cache, then again with a fresh process's (empty) memory."""
    with tempfile.TemporaryDirectory(prefix="gitsleep-bench-cache-") as tmp:
        where = directory or Path(tmp)
        first, first_result = measure_epoch(workload, rounds, cache=ResponseCache(where))
        again, again_result = measure_epoch(workload, rounds, cache=ResponseCache(where))
    return RerunResult(
        example=workload.name,
        rounds=rounds,
        first_calls=first.calls,
        first_cache_hits=first.cache_hits,
        first_seconds=first.seconds,
        rerun_calls=again.calls,
        rerun_cache_hits=again.cache_hits,
        rerun_seconds=again.seconds,
        same_decision=(first_result.decision == again_result.decision
                       and first_result.documents == again_result.documents),
    )


# -- the cost formula -------------------------------------------------------------------------


@dataclass
class CostModel:
    """Per-round averages measured in section 1, for the calls-per-night formula."""

    candidates_per_round: float  # k: candidate documents gated on val per round that ran
    accept_rate: float  # a: share of rounds that accepted an edit (then train is re-scored)
    val_share: float = 1.0  # s: share of val a candidate is scored on (early stopping)

    def epoch_calls(self, train: int, val: int, test: int, *, rounds: int, proposals: int,
                    targets: int = 1, changed: float = 1.0) -> float:
        per_round = (proposals + self.candidates_per_round * self.val_share * val
                     + self.accept_rate * train)
        # a changed night: the final test pass and the placebo val pass (the noise)
        return train + val + test + targets * rounds * per_round + changed * (test + val)


def cost_model(rows: Sequence[CallsRow]) -> CostModel:
    ran = [entry for row in rows for entry in row.rounds_run]
    if not ran:
        return CostModel(0.0, 0.0)
    trials = sum(k for row in rows for _, _, k, _ in row.rounds_run)
    return CostModel(
        candidates_per_round=sum(k for _, _, k, _ in ran) / len(ran),
        accept_rate=sum(1 for *_, a in ran if a) / len(ran),
        val_share=(sum(row.val_share * sum(k for _, _, k, _ in row.rounds_run) for row in rows)
                   / trials) if trials else 1.0,
    )


# -- thrifty nights: screening on train before val ------------------------------


@dataclass
class ThriftyRow:
    """One epoch run twice, `search: thorough` and `search: thrifty`."""

    example: str
    rounds: int
    proposals: int
    thorough_calls: int
    thrifty_calls: int
    skillopt_nightly: int  # modelled from the thorough epoch's rounds
    screened: int  # proposals thrifty kept off val
    same_decision: bool  # decision equal (accepted, rejected, ...)
    same_documents: bool  # the documents each ended with equal
    thorough_val: float | None
    thrifty_val: float | None
    thorough_test: float | None
    thrifty_test: float | None
    thorough_gain: float = 0.0  # held-out final - baseline (0 when not scored: no PR)
    thrifty_gain: float = 0.0
    thrifty_val_scored: bool = True  # thrifty scored val (a candidate passed its screen)
    thorough_phase: dict[str, int] = field(default_factory=dict)
    thrifty_phase: dict[str, int] = field(default_factory=dict)

    @property
    def saved(self) -> float:
        return 1.0 - self.thrifty_calls / self.thorough_calls if self.thorough_calls else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["calls_saved_share"] = round(self.saved, 4)
        data["skillopt_over_thorough"] = round(self.skillopt_nightly / self.thorough_calls, 4)
        data["skillopt_over_thrifty"] = round(self.skillopt_nightly / self.thrifty_calls, 4)
        return data


def held_out_gain(result: EpochResult) -> float:
    """Held-out final minus baseline; 0 when held-out was not scored (nothing accepted)."""
    test = result.test
    if test.baseline is None or test.candidate is None:
        return 0.0
    return test.candidate - test.baseline


class NoisyOptimizer(OfflineBackend):
    """The offline simulator, except that every proposal after a round's first proposes a
    rule that fixes nothing (an answer closing line no check asks for): what a small real
    optimizer often does (the real-model runs' `ignored` and `did_not_help` verdicts).
    The first proposal is the simulator's own, so a round can still learn."""

    def complete(self, call: ModelCall) -> Answer:
        index = (call.seed or 0) % reflect.SEEDS_PER_ROUND % reflect.RETRY_SEED_SHIFT
        if call.purpose != "propose" or index == 0:
            return super().complete(call)
        edit = {"op": "add", "content": f'Always include "Thanks for reading ({index})."',
                "anchor": "", "rationale": "a closing line reads well"}
        return Answer(json.dumps({"edits": [edit]}), None, 100, 30)


class HopelessOptimizer(NoisyOptimizer):
    """Every proposal adds a rule no check asks for: the night of a small real optimizer
    that learns nothing (SkillOpt-Sleep rejected every such night on the real-model runs),
    where every thrifty proposal is screened out on train."""

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose != "propose":
            return super().complete(call)
        index = (call.seed or 0) % reflect.SEEDS_PER_ROUND % reflect.RETRY_SEED_SHIFT
        edit = {"op": "add", "content": f'Always include "Thanks for reading ({index + 1})."',
                "anchor": "", "rationale": "a closing line reads well"}
        return Answer(json.dumps({"edits": [edit]}), None, 100, 30)


def thrifty_section(
    workloads: Sequence[tuple[Workload, Callable[[], Backend]]],
    rounds: Sequence[int] = (1, 2, 3),
) -> list[ThriftyRow]:
    """Each workload at each round count with `search: thorough` and `search: thrifty`:
    calls, SkillOpt-Sleep's modelled schedule over each, and whether the decisions, the
    documents and the final val and held-out scores match."""
    rows = []
    for workload, factory in workloads:
        thrifty = dataclasses.replace(
            workload, settings=dataclasses.replace(workload.settings, search="thrifty"))
        name = workload.name + (", hopeless optimizer" if factory is HopelessOptimizer
                                else ", noisy optimizer" if factory is NoisyOptimizer else "")
        for count in rounds:
            full, full_result = measure_epoch(workload, count, backend_factory=factory)
            lean, lean_result = measure_epoch(thrifty, count, backend_factory=factory)
            rows.append(ThriftyRow(
                example=name, rounds=count, proposals=workload.settings.proposals,
                thorough_calls=full.calls, thrifty_calls=lean.calls,
                skillopt_nightly=full.skillopt_nightly,
                screened=sum(1 for t in lean_result.trials if t.screened),
                same_decision=full_result.decision == lean_result.decision,
                same_documents=full_result.documents == lean_result.documents,
                thorough_val=full_result.val.candidate, thrifty_val=lean_result.val.candidate,
                thorough_test=full_result.test.candidate, thrifty_test=lean_result.test.candidate,
                thorough_gain=held_out_gain(full_result), thrifty_gain=held_out_gain(lean_result),
                thrifty_val_scored=lean_result.val.baseline is not None,
                thorough_phase=full.by_phase, thrifty_phase=lean.by_phase,
            ))
    return rows
