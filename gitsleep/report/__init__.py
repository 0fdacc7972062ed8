"""What an epoch says to people: commit message, diagnostics.json, PR body, summaries.

Everything here renders from an `EpochResult` (plus a few git facts the caller passes
in); no number is recomputed. Every string that came from a task file or a model is
untrusted: it is redacted first, then made harmless for where it goes (one line in a
commit body, escaped in Markdown), so it can neither leak a secret, forge a trailer,
nor break the pull-request page.

One module per thing written: `commit` (the commit message), `diagnostics_json`
(diagnostics.json and the git note), `pull_request` (title and body), `summary` (the
terminal line and `--json`); `common` holds what they share. The names below are the
public ones, so `from gitsleep import report` keeps working.
"""

from gitsleep.core.outcome import PR_BODY_LIMIT
from gitsleep.report.commit import COMMIT_TASK_LINES, commit_message, commit_subject
from gitsleep.report.common import (
    METRIC_NOTES,
    SPLIT_NAMES,
    agent_tradeoffs,
    block_diff,
    group_scores,
    integrity_counts,
    metric_note,
    model_costs,
    plural,
    simulated,
    small_sample_note,
    split_passes,
    task_changes,
)
from gitsleep.report.diagnostics_json import (
    DIAGNOSTICS_SCHEMA,
    DIAGNOSTICS_VERSION,
    RESPONSE_HEAD_CHARS,
    Diagnostics,
    ReportWriteError,
    diagnostics,
    dumps_diagnostics,
    response_head,
    write_diagnostics,
)
from gitsleep.report.pull_request import (
    ANSWER_CHARS,
    ANSWER_PAIRS,
    answer_pairs,
    held_out_chart,
    pr_body,
    pr_title,
)
from gitsleep.report.summary import json_summary, night_lines, no_pr_reason, summary_line

__all__ = [
    "ANSWER_CHARS", "ANSWER_PAIRS", "COMMIT_TASK_LINES", "DIAGNOSTICS_SCHEMA",
    "DIAGNOSTICS_VERSION", "METRIC_NOTES", "PR_BODY_LIMIT", "RESPONSE_HEAD_CHARS",
    "SPLIT_NAMES", "Diagnostics", "ReportWriteError", "agent_tradeoffs",
    "answer_pairs",
    "block_diff", "commit_message", "commit_subject", "diagnostics", "dumps_diagnostics",
    "group_scores", "held_out_chart", "integrity_counts", "json_summary", "metric_note",
    "model_costs", "night_lines", "no_pr_reason", "plural", "pr_body", "pr_title",
    "response_head", "simulated", "small_sample_note", "split_passes",
    "summary_line", "task_changes", "write_diagnostics",
]
