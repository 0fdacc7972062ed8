"""The commit message of an accepted epoch: subject, body and the Gitsleep-* trailers."""

from __future__ import annotations

from collections.abc import Mapping

from gitsleep.base.redact import Redactor
from gitsleep.core import markdown as md
from gitsleep.core.models import EpochResult
from gitsleep.core.scores import fmt_score
from gitsleep.git_forge.record import trailer_values
from gitsleep.report.common import (
    SPLIT_NAMES,
    agent_gate_note,
    agent_line,
    agent_tradeoffs,
    change,
    integrity_counts,
    noise_line,
    simulated,
    small_sample_note,
    task_changes,
)
from gitsleep.report.triggers import commit_lines, headline

COMMIT_TASK_LINES = 50  # per split: the rest is in diagnostics.json


def commit_subject(result: EpochResult) -> str:
    """`gitsleep(<skill>): val <b> -> <c>, held-out <b> -> <c>` on one line."""
    skill = md.one_line(result.skill)
    if result.val.n == 0 and result.triggers is not None:  # the trigger pass alone
        return f"gitsleep({skill}): description, {headline(result.triggers)}"
    return f"gitsleep({skill}): val {change(result.val)}, held-out {change(result.test)}"


def commit_message(
    result: EpochResult, trailers: Mapping[str, str], redactor: Redactor
) -> str:
    """Subject, body (edits, gate reasons, per-task changes) and the Gitsleep-* trailers.

    Every body line we do not write ourselves is indented and folded to one line, so
    untrusted text can neither start a `Key: value` trailer line, a `#` comment that git
    strips, nor a `---` line that ends the message for `git interpret-trailers`.
    """

    def line(text: str, limit: int = 300) -> str:
        return md.clip(" ".join(md.one_line(redactor.redact(text)).split()), limit)

    body: list[str] = [f"Decision: {line(result.decision, 40)} (metric {line(result.metric, 40)})"]
    reason = line(result.reason, 500)
    if reason:
        body.append(f"  {reason}")
    if simulated(result.backend):
        body.append(f"Simulated: gitsleep's offline simulator took part (backend "
                    f"{line(result.backend, 60)}), not only real models.")
    if small_sample_note(result):
        body.append(small_sample_note(result))
    if noise_line(result):
        body.append(line(noise_line(result), 800))
    if result.agents:
        body.append(f"Scores per agent ({agent_gate_note(result)}):")
        body += [f"  {line(agent_line(agent))}" for agent in result.agents]
        body += [f"  Trade-off: the change {line(text, 500)}" for text in agent_tradeoffs(result)]
    sections = (
        ("Applied edits", result.applied, "why"),
        ("Rejected by the gate", result.rejected, "gate"),
        ("Unmatched edits", result.unmatched, "reason"),
    )
    for title, outcomes, label in sections:
        if not outcomes:
            continue
        body.append(f"{title} ({len(outcomes)}):")
        for outcome in outcomes:
            edit = outcome.edit
            body.append(f"  - [{line(edit.target, 20)}] {line(edit.summary())}")
            why = line(edit.rationale if label == "why" else outcome.reason)
            if why:
                body.append(f"    {label}: {why}")
    if result.triggers is not None:
        body += commit_lines(result.triggers, line)
    if result.warnings:
        body.append(f"Review notes ({len(result.warnings)}), what the checks cannot see:")
        body += [f"  - {line(w, 400)}" for w in result.warnings]
    integrity = integrity_counts(result)
    if integrity:
        body.append("Integrity: answers that repeated a template placeholder or rule slot "
                    "or left a required section empty, scored as failing: "
                    + ", ".join(f"{line(k, 80)} {v}" for k, v in integrity.items()))
    if result.diagnosis:
        body.append("Every candidate tied; per failing check:")
        body += [f"  - {line(str(v['check']), 120)}: {line(str(v['detail']))}"
                 for v in result.diagnosis]
    for split in ("val", "test"):
        changes = task_changes(result, split)
        moved = [d for d in changes if d.status != "unchanged"]
        if not changes:
            continue
        body.append(f"Per-task changes on {SPLIT_NAMES[split]} "
                    f"({len(moved)} changed, {len(changes) - len(moved)} unchanged):")
        for delta in moved[:COMMIT_TASK_LINES]:
            body.append(f"  {line(delta.task_id, 120)}: "
                        f"{fmt_score(delta.before)} -> {fmt_score(delta.after)}")
        if len(moved) > COMMIT_TASK_LINES:
            body.append(f"  ... {len(moved) - COMMIT_TASK_LINES} more in diagnostics.json")
    # A last pass, line by line so no match can span lines, over what we wrote around the
    # untrusted text; trailer keys stay exactly as they are.
    head = [redactor.redact(text) for text in [commit_subject(result), "", *body]]
    # The trailer block: its own last paragraph, one `Key: value` per line.
    block = [f"{k}: {line(v, 200)}" for k, v in trailer_values(result, trailers).items()]
    return "\n".join([*head, "", *block]) + "\n"
