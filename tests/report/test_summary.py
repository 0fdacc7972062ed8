"""What a night says on the terminal and in `consolidate --json`: its reasons in words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitsleep.report.outcome import PrResult
from gitsleep.report.summary import json_summary, night_lines, no_pr_reason
from tests.report.test_report import make_result


@pytest.mark.parametrize(("decision", "words"), [
    ("no_edits", "the epoch made no edits: nothing to review"),
    ("rejected", "the epoch was rejected: nothing to review"),
    ("aborted", "the epoch was aborted: nothing to review"),
])
def test_no_pr_reason_reads_as_a_sentence(decision: str, words: str) -> None:
    result = replace(make_result(), decision=decision)
    assert no_pr_reason(result, PrResult()) == words


def test_night_lines_name_the_commit_and_why_it_stays_local() -> None:
    result = make_result()
    summary = replace(json_summary(result, branch="gitsleep/s", commit="abc123", pr=PrResult(),
                                   diagnostics_path="runs/d.json"), uncommitted=("SKILL.md",))
    lines, err = night_lines(summary, result, dry_run=False, local_reason="a simulated night")
    assert not err
    assert lines[0].startswith(f"{result.skill}: accepted: ")
    assert "  commit abc123 on gitsleep/s" in lines
    assert "  kept local: a simulated night" in lines
    assert any(line.startswith("  not used: uncommitted changes to SKILL.md") for line in lines)
    assert lines[-1] == "  diagnostics: runs/d.json"
    aborted = replace(summary, decision="aborted")
    assert night_lines(aborted, result, dry_run=True, local_reason=None)[1] is True
