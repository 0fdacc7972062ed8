"""`eval`'s flow: score the current documents on their splits, changing nothing.

The command reads its options and prints; this module does the scoring, in order: the
paths checked, every skill's inputs read (before any call), then each split of each skill
scored through the answer cache, its backend closed at the end of the skill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitsleep.core import agents, replay
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import SPLITS, EpochSettings, PassResult, Task
from gitsleep.core.scores import rounded, small_splits
from gitsleep.flows.prepare import Setup, make_backend, make_cache, read_inputs
from gitsleep.inputs import repo_paths


@dataclass(frozen=True)
class SplitRow:
    """One skill's split, scored (`result` None: the split has no tasks)."""

    skill: str
    split: str
    n: int
    metric: str
    result: PassResult | None = None
    json: dict[str, Any] = field(default_factory=dict)  # the `--json` row, redacted
    agents: tuple[dict[str, Any], ...] = ()  # several agents: each one's score


@dataclass(frozen=True)
class EvalOutcome:
    """Every scored split in order, the gate's metric, and the splits too small to trust."""

    rows: list[SplitRow]
    metric: str
    small: list[str]


def agent_rows(result: PassResult, tasks: list[Task],
               settings: EpochSettings) -> list[dict[str, Any]]:
    """Several agents: each agent's score over its own answers (none for one agent)."""
    return [{"name": name, "model": settings.model_for(name), "n": len(ids),
             "score": rounded(agents.only_agent(result, ids).mean)}
            for name, ids in agents.agent_ids(tasks).items()]


def _json_row(skill: str, split: str, n: int, result: PassResult, settings: EpochSettings,
              simulated: bool, per_agent: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "skill": skill, "split": split, "n": n,
        "score": rounded(result.mean), "metric": settings.gate.metric,
        "errors": result.errors,
        "tasks": [{"id": t.task_id, "hard": rounded(t.hard),
                   "soft": rounded(t.soft), "score": rounded(t.value),
                   "reason": next((s.score.reason for s in t.samples if s.score),
                                  next((s.error for s in t.samples if s.error), ""))}
                  for t in result.tasks],
    }
    if simulated:  # as consolidate's --json: offline scores say so
        row["simulated"] = True
    if per_agent:
        row["agents"] = per_agent
    return row


def evaluate(setup: Setup, skills: tuple[str, ...], split: str) -> EvalOutcome:
    """Score `skills` (all when empty) on `split` (`all`: train, val and test)."""
    splits = [name for name in SPLITS if split in ("all", name)]
    rows: list[SplitRow] = []
    small: list[str] = []
    chosen = setup.skills(skills)
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen], runs=False)
    inputs = [(skill, *read_inputs(setup.repo, skill, setup.say)) for skill in chosen]
    # eval proposes nothing: it needs the agent's model, and a judge model only when a
    # task it scores has a rubric judge (checked before any call is made)
    rubric = any(t.judge.kind == "rubric" for _, tasks, _ in inputs for t in tasks
                 if t.split in splits)
    roles = ("judge",) if rubric else ()
    settings = setup.config.epoch_settings(roles=roles)  # the gate's metric, for the note
    for skill, tasks, documents in inputs:
        settings = setup.config.epoch_settings(roles=roles, skill=skill.name)
        purposes = ("answer", "judge") if rubric else ("answer",)
        runner = CallRunner.for_settings(make_backend(setup, skill.name, purposes), settings,
                                         cache=make_cache(setup))
        try:
            for name in splits:
                in_split = agents.expand([t for t in tasks if t.split == name],
                                         settings.agents)
                if not in_split:
                    rows.append(SplitRow(skill.name, name, 0, settings.gate.metric))
                    continue
                tick = setup.counter(f"{skill.name}: scoring {name}",
                                     len(in_split) * max(1, settings.gate.repeats))
                result = replay.score_split(runner, in_split, documents, settings,
                                            label="eval", split=name, on_answer=tick)
                per_agent = agent_rows(result, in_split, settings)
                row = _json_row(skill.name, name, len(in_split), result, settings,
                                runner.backend.simulated, per_agent)
                rows.append(SplitRow(skill.name, name, len(in_split), settings.gate.metric,
                                     result, setup.redactor.redact_obj(row), tuple(per_agent)))
        finally:
            runner.backend.close()
        cost = runner.cost
        setup.say(f"{skill.name}: {cost.calls} model calls, {cost.cache_hits} cache hits")
        counts = {n: sum(1 for t in tasks if t.split == n) for n in ("val", "test")}
        if split in ("all", "val", "test"):
            few = small_splits(counts["val"] if split in ("all", "val") else 0,
                               counts["test"] if split in ("all", "test") else 0)
            if few:
                small.append(f"{skill.name}: {' and '.join(few)}")
    return EvalOutcome(rows, settings.gate.metric, small)
