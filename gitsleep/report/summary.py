"""What a night says on the terminal and in `consolidate --json`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gitsleep.base.redact import Redactor
from gitsleep.core import markdown as md
from gitsleep.core.models import EpochResult
from gitsleep.report.common import change, default_redactor, model_costs, simulated
from gitsleep.report.outcome import (
    AgentScores,
    CostSummary,
    Edits,
    PrResult,
    Scores,
    SkillSummary,
    opens_pr,
)
from gitsleep.report.triggers import summary as trigger_summary


def summary_line(result: EpochResult, *, redactor: Redactor | None = None) -> str:
    """One line for the terminal: skill, decision, scores, edit counts, reason."""
    redactor = default_redactor(redactor)
    parts = [
        f"{result.skill}: {result.decision}",
        f"val {change(result.val)}, held-out {change(result.test)}",
        f"{len(result.applied)} applied, {len(result.rejected)} rejected, "
        f"{len(result.unmatched)} unmatched edit(s)",
    ]
    if result.backend == "offline":
        parts.append("offline simulator")
    text = " | ".join(parts) + (f" — {result.reason}" if result.reason else "")
    return " ".join(md.one_line(redactor.redact(text)).split())


def no_pr_reason(result: EpochResult, pr: PrResult) -> str:
    """Why no pull request was opened or updated, in a few words."""
    if result.decision != "accepted":
        return f"the epoch was {result.decision.replace('_', ' ')}: nothing to review"
    if pr.reason:
        return pr.reason
    if not opens_pr(result):
        split = "val" if result.decided_by == "val" else "held-out"
        return f"{split} did not improve"
    return "not requested"



def json_summary(
    result: EpochResult,
    *,
    branch: str | None,
    commit: str | None,
    pr: PrResult,
    diagnostics_path: str | Path | None,
    redactor: Redactor | None = None,
) -> SkillSummary:
    """The `consolidate --json` record of the interface contract, redacted."""
    cost = result.cost
    summary = SkillSummary(
        skill=result.skill, decision=result.decision, reason=result.reason,
        metric=result.metric, val=Scores.of(result.val), test=Scores.of(result.test),
        edits=Edits.of(result), branch=branch, commit=commit,
        pr=replace(pr, reason=no_pr_reason(result, pr)) if pr.operation == "none" else pr,
        cost=CostSummary(cost.calls, cost.cache_hits, cost.prompt_tokens,
                         cost.completion_tokens, cost.seconds, model_costs(cost)),
        diagnostics=str(diagnostics_path) if diagnostics_path is not None else None,
        simulated=simulated(result.backend),
        agents=tuple(AgentScores.of(agent) for agent in result.agents),
        triggers=trigger_summary(result.triggers) if result.triggers else None,
    )
    return summary.redacted(default_redactor(redactor))
