"""What a night says on the terminal and in `consolidate --json`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gitsleep.base.redact import Redactor
from gitsleep.core import markdown as md
from gitsleep.core.models import EpochResult
from gitsleep.core.outcome import (
    AgentScores,
    CostSummary,
    Edits,
    PrResult,
    Scores,
    SkillSummary,
    opens_pr,
)
from gitsleep.core.scores import rounded
from gitsleep.report.common import (
    change,
    default_redactor,
    group_scores,
    model_costs,
    noise_json,
    simulated,
    small_sample_note,
    tool_calls,
)
from gitsleep.report.triggers import summary as trigger_summary

# how a night that accepted nothing reads in "the epoch ...: nothing to review"
NOT_ACCEPTED = {"rejected": "was rejected", "no_edits": "made no edits",
                "aborted": "was aborted"}


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
        done = NOT_ACCEPTED.get(result.decision, f"was {result.decision.replace('_', ' ')}")
        return f"the epoch {done}: nothing to review"
    if pr.reason:
        return pr.reason
    if not opens_pr(result):
        split = "val" if result.decided_by == "val" else "held-out"
        return result.no_pr or f"{split} did not improve"
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
        tool_calls=tool_calls(result),
        noise=noise_json(result.noise),
        groups=tuple({**row.to_json(), "baseline": rounded(row.baseline),
                      "candidate": rounded(row.candidate)} for row in group_scores(result)),
        triggers=trigger_summary(result.triggers) if result.triggers else None,
    )
    return summary.redacted(default_redactor(redactor))


def night_lines(summary: SkillSummary, result: EpochResult | None, *, dry_run: bool,
                local_reason: str | None) -> tuple[list[str], bool]:
    """What `consolidate` prints for one skill's night, and whether it goes to stderr
    (an aborted night, exit 3 or 6, is an error)."""
    err = summary.decision == "aborted"
    dry = " (dry run: nothing committed, pushed or opened)" if dry_run else ""
    decision = "up to date" if summary.up_to_date else summary.decision
    lines = [f"{summary.skill}: {decision}: {summary.reason}{dry}"]
    small = small_sample_note(result) if result is not None and not err else ""
    if small:  # an aborted run decided nothing to call a hint
        lines.append(f"  warning: {small}")
    if summary.uncommitted:
        lines.append(f"  not used: uncommitted changes to {', '.join(summary.uncommitted)}; "
                     "consolidate reads the committed base, so commit them to include "
                     "them (or try them first with --dry-run)")
    if summary.commit:
        lines.append(f"  commit {summary.commit} on {summary.branch}")
        if local_reason:
            lines.append(f"  kept local: {local_reason}")
    if summary.pr.operation != "none":
        lines.append(f"  pull request {summary.pr.operation}: {summary.pr.url}")
    if summary.diagnostics:
        lines.append(f"  diagnostics: {summary.diagnostics}")
    return lines, err
