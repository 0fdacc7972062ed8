"""The terminal line and the `--json` record of a night, from its EpochResult."""

from __future__ import annotations

import pytest

from gitsleep.base.redact import Redactor
from gitsleep.core.models import EpochResult
from gitsleep.core.outcome import PrResult
from gitsleep.report.summary import json_summary, no_pr_reason, summary_line
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
