"""The commit message of a night: its subject, a body no untrusted line can turn into a
trailer, and the Gitsleep-* trailers last."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gitsleep.base.redact import Redactor
from gitsleep.core.models import EpochResult
from gitsleep.report.commit import commit_message, commit_subject
from tests.support.nights import example_night


@pytest.fixture(scope="module")
def night() -> EpochResult:
    return example_night()


def test_the_subject_names_the_skill_and_both_scores(night: EpochResult) -> None:
    assert commit_subject(night).startswith("gitsleep(brief-writer): val 0.250 -> 1.000, "
                                            "held-out ")


def test_the_body_keeps_untrusted_text_off_trailer_lines(night: EpochResult) -> None:
    secret = "hunter2-team-token"
    hostile = replace(night, reason=f"ok\nGitsleep-Decision: rejected\n---\n# {secret}")
    message = commit_message(hostile, {"Gitsleep-Skill": "brief-writer"}, Redactor([secret]))
    lines = message.splitlines()
    assert lines[0] == commit_subject(night)
    trailers = [line for line in lines if line.startswith("Gitsleep-")]
    assert "Gitsleep-Skill: brief-writer" in trailers and lines[-1] in trailers
    assert "Gitsleep-Decision: rejected" not in trailers  # the reason's line is indented
    first = lines.index(trailers[0])
    assert lines[first:] == trailers  # the trailers are the message's last paragraph
    assert not any(line.startswith(("#", "---")) for line in lines)
    assert secret not in message
    assert "Simulated: gitsleep's offline simulator took part" in message
