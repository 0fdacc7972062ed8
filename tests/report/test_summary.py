"""The terminal line and the `--json` record of a night, from its EpochResult, and its
reasons in words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitsleep.base.redact import Redactor
from gitsleep.core.models import EpochResult
from gitsleep.core.outcome import PrResult
from gitsleep.report.summary import json_summary, night_lines, no_pr_reason, summary_line
from tests.report.test_report import make_result
from tests.support.nights import example_night


@pytest.fixture(scope="module")
def night() -> EpochResult:
    return example_night()


def test_the_line_says_decision_scores_edits_and_the_simulator(night: EpochResult) -> None:
    line = summary_line(night)
    assert line.startswith("brief-writer: accepted | val 0.250 -> 1.000, held-out ")
    assert f"{len(night.applied)} applied" in line and "offline simulator" in line
    assert "\n" not in line


def test_the_json_record_is_the_result_redacted(night: EpochResult) -> None:
    secret = "hunter2-team-token"
    summary = json_summary(night, branch="gitsleep/brief-writer", commit="abc",
                           pr=PrResult(operation="none"), diagnostics_path=None,
                           redactor=Redactor([secret]))
    assert summary.decision == "accepted" and summary.simulated
    assert summary.val.baseline == 0.25 and summary.val.candidate == 1.0
    assert summary.cost.calls == night.cost.calls
    assert summary.pr.reason == no_pr_reason(night, PrResult(operation="none"))
    assert len(summary.edits.applied) == len(night.applied)


def test_why_no_pull_request(night: EpochResult) -> None:
    assert no_pr_reason(night, PrResult(operation="none", reason="no token")) == "no token"
    assert no_pr_reason(night, PrResult(operation="none")) == "not requested"


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


def test_held_out_wrong_values_show_beside_vals_and_say_why_no_pr_opened() -> None:
    """The night keeps its documents, but its held-out approve answers now carry
    `Verdict: reject`: `--json`, diagnostics.json and the per-group table show the count
    per split and group, before and after, and `pr.reason` says why no PR opened."""
    from gitsleep.report.diagnostics_json import diagnostics
    from gitsleep.report.pull_request import pr_body
    from tests.support.nights import pinned_on_held_out_night

    night = pinned_on_held_out_night()
    approve = next(name for name in night.groups if "approve" in name)
    summary = json_summary(night, branch="gitsleep/dependency-review", commit="abc",
                           pr=PrResult(operation="none"), diagnostics_path=None)
    assert summary.pr.reason == "held-out answers carry another group's value"
    record = summary.to_json()
    assert record["pr"]["reason"] == summary.pr.reason
    for rows in (record["groups"], diagnostics(night, {}, redactor=Redactor())["group_scores"]):
        wrong = {(r["split"], r["group"]): (r["wrong_baseline"], r["wrong_candidate"])
                 for r in rows}
        assert wrong[("test", approve)] == (0, 3) and wrong[("val", approve)] == (0, 0)
    body = pr_body(night, rerun="gitsleep consolidate", redactor=Redactor())
    held_row = next(line for line in body.splitlines()
                    if line.startswith("| held-out (test) |") and "approve" in line)
    assert held_row.endswith("| 0 -> 3 |")
    # a summary read back from its JSON keeps the rows
    assert type(summary).from_json(record).to_json()["groups"] == record["groups"]


def test_the_json_group_rows_have_three_decimals_like_every_score() -> None:
    result = make_result(n_test=3)
    final = next(p for p in result.passes if p.split == "test" and p.label == "final")
    final.tasks[0] = replace(final.tasks[0], value=0.0, hard=0.0, soft=0.0)
    result = replace(result, groups={"contains Confidence:": [t.task_id for t in final.tasks]})
    summary = json_summary(result, branch=None, commit=None, pr=PrResult(operation="none"),
                           diagnostics_path=None, redactor=Redactor())
    (row,) = summary.to_json()["groups"]
    assert (row["split"], row["n"], row["baseline"], row["candidate"]) == ("test", 3, 0.0, 0.667)
