"""Harvest's Codex reader: meta, messages and tools, in every file shape Codex wrote."""

from __future__ import annotations

from pathlib import Path

from gitsleep.flows.harvest import codex
from gitsleep.flows.harvest.sessions import ReadStats
from tests.support.harvest import BRIEF, FIX, KEEP_ALL
from tests.support.transcripts import (
    codex_file,
    codex_lines,
    write_jsonl,
)


def test_codex_reader_reads_meta_messages_and_tools_once(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    path = codex_file(tmp_path / "home", repo, [(BRIEF, "Draft."), (FIX, "Fixed.")],
                      session_id="019a-cdx", branch="dev")
    stats = ReadStats()
    (session,) = codex.read(path, stats, KEEP_ALL)
    assert [t.user for t in session.turns] == [BRIEF, FIX]  # no preamble, no event echo
    assert [t.answer for t in session.turns] == ["Draft.", "Fixed."]
    assert (session.session_id, session.cwd, session.branch) == ("019a-cdx", str(repo), "dev")
    assert session.tools_used == {"shell": 2}
    assert stats.skipped == {}


def test_codex_events_stand_in_when_there_are_no_message_items(tmp_path: Path) -> None:
    lines = [line for line in codex_lines(tmp_path, [(BRIEF, "Draft.")])
             if line["payload"].get("type") != "message"]
    lines.append({"timestamp": "2026-11-20T10:00:00Z", "type": "mystery", "payload": {}})
    stats = ReadStats()
    (session,) = codex.read(write_jsonl(tmp_path / "rollout-x.jsonl", lines), stats, KEEP_ALL)
    assert [(t.user, t.answer) for t in session.turns] == [(BRIEF, "Draft.")]
    assert stats.skipped == {"unknown line type": 1}


def test_codex_older_files_without_payload_wrappers(tmp_path: Path) -> None:
    lines = [{"id": "old-1", "timestamp": "2025-05-01T10:00:00Z", "instructions": None},
             {"record_type": "state"},
             {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                               "text": BRIEF}]},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                    "text": "Draft."}]}]
    (session,) = codex.read(write_jsonl(tmp_path / "rollout-old.jsonl", lines), ReadStats(),
                            KEEP_ALL)
    assert session.session_id == "old-1" and [t.user for t in session.turns] == [BRIEF]
