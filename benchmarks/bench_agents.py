"""Section 9: several agents per night, offline.

Two simulated agents that disagree read one skill: `offline` obeys every directive, while
`offline-recent-3` keeps only the last three directive lines it reads (an agent whose
attention holds the latest few instructions). The skill's hand-written part has three
directives; the first gives two of each task's checks. The optimizer learns the missing
`Risk:` line: the first agent gains it, the second gains it too but loses the first
hand-written directive, so its score falls on every task.

The same epoch is gated four ways: on each agent alone, on both with `gate.agents: mean`
and with `min`. For a one-agent night the other agent is then scored on held-out under
the documents that night accepted: what a one-agent gate would have shipped to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core import agents
from gitsleep.core.calls import CallRunner
from gitsleep.core.epoch import call_ceiling, run_epoch
from gitsleep.core.models import (
    AgentRef,
    Check,
    EpochResult,
    EpochSettings,
    GateSettings,
    Judge,
    Task,
)
from gitsleep.core.replay import score_split

SKILL = ('# Change notes\n\nWrite a short note about the change for the on-call team.\n\n'
         'Use the heading "## Decision"\nAlways include "Owner:"\nAlways include "Deadline:"\n')
CHECKS = (Check("section_present", "Decision"), Check("contains", "## Decision"),
          Check("contains", "Owner:"), Check("contains", "Deadline:"),
          Check("contains", "Risk:"))
FULL = AgentRef("full", "offline", "offline")
SHORT = AgentRef("short", "offline-recent-3", "offline")
TOPICS = ("the cache eviction", "the retry budget", "the login page", "the billing export",
          "the search index", "the nightly backup")


def workload() -> list[Task]:
    """Six train, six val and six held-out tasks, each with the same five checks."""
    tasks = []
    for split in ("train", "val", "test"):
        for n, topic in enumerate(TOPICS):
            tasks.append(Task(f"{split}-{n}", f"Write the change note for {topic}.",
                              split, Judge("rule", CHECKS)))  # type: ignore[arg-type]
    return tasks


@dataclass
class AgentsRow:
    gate: str
    decision: str
    accepted: list[str]
    # agent -> (val before, val after, held-out before, held-out after)
    scores: dict[str, tuple[float | None, float | None, float | None, float | None]]
    calls: int
    ceiling: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def settings(refs: Sequence[AgentRef], how: str = "mean") -> EpochSettings:
    return EpochSettings(model=refs[0].model, optimizer_model="offline", judge_model="offline",
                         agents=tuple(refs), gate=GateSettings(agents=how))


def held_out(document: str, ref: AgentRef) -> float | None:
    """One agent's held-out mean under `document`."""
    chosen = settings([ref])
    test = agents.expand([t for t in workload() if t.split == "test"], chosen.agents)
    return score_split(CallRunner(OfflineBackend()), test, {"skill": document}, chosen,
                       label="held-out", split="test").mean


def one_night(refs: Sequence[AgentRef], how: str, label: str) -> tuple[AgentsRow, EpochResult]:
    chosen = settings(refs, how)
    result = run_epoch(workload(), {"skill": SKILL, "memory": None}, chosen, OfflineBackend(),
                       skill="change-notes")
    scores = {a.name: (a.val.baseline, a.val.candidate, a.test.baseline, a.test.candidate)
              for a in result.agents}
    final = result.documents["skill"][1]
    for other in (FULL, SHORT):  # who was not in the night: under what it accepted
        if other.name not in scores:
            scores[f"{other.name} (not gated)"] = (None, None, held_out(SKILL, other),
                                                   held_out(final, other))
    row = AgentsRow(label, result.decision, [o.edit.summary() for o in result.applied], scores,
                    result.cost.calls, call_ceiling(chosen, workload(), False), result.reason)
    return row, result


def agents_section() -> list[AgentsRow]:
    plans = [([FULL], "mean", "full alone"), ([SHORT], "mean", "short alone"),
             ([FULL, SHORT], "mean", "full + short, mean"),
             ([FULL, SHORT], "min", "full + short, min")]
    return [one_night(refs, how, label)[0] for refs, how, label in plans]
