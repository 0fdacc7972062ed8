"""Harvest's plain JSONL reader: feedback is a follow-up turn."""

from __future__ import annotations

from pathlib import Path

from gitsleep.flows.harvest import plain
from gitsleep.flows.harvest.sessions import ReadStats
from tests.support.harvest import BRIEF, KEEP_ALL
from tests.support.transcripts import (
    write_jsonl,
)


def test_plain_jsonl_feedback_is_a_follow_up(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "log.jsonl", [
        {"prompt": BRIEF, "answer": "Draft.", "feedback": "you forgot the Confidence line"},
        {"answer": "no prompt here"},
    ])
    stats = ReadStats()
    (session,) = plain.read(path, stats, KEEP_ALL)
    assert [t.user for t in session.turns] == [BRIEF, "you forgot the Confidence line"]
    assert session.session_id == "log.jsonl:1"
    assert stats.skipped == {"line without a prompt": 1}
