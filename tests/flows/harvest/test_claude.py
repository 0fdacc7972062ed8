"""Harvest's Claude Code reader: the conversation kept, the rest skipped."""

from __future__ import annotations

from pathlib import Path

from gitsleep.flows.harvest import claude
from gitsleep.flows.harvest.sessions import ReadStats
from tests.support.harvest import BRIEF, FIX, KEEP_ALL
from tests.support.transcripts import (
    claude_file,
    claude_lines,
    write_jsonl,
)


def test_claude_reader_keeps_the_conversation_and_skips_the_rest(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    path = claude_file(tmp_path / "home", repo, [(BRIEF, "Here is a brief."), (FIX, "Fixed.")],
                       session_id="s-1", branch="feature/x", skill="brief-writer")
    stats = ReadStats()
    (session,) = claude.read(path, stats, KEEP_ALL)
    assert [t.user for t in session.turns] == [BRIEF, FIX]  # no tool result, meta, sidechain
    assert [t.answer for t in session.turns] == ["Here is a brief.", "Fixed."]
    assert (session.session_id, session.cwd, session.branch) == ("s-1", str(repo), "feature/x")
    assert session.skills_used == {"brief-writer", "clear"}
    assert session.tools_used["Skill"] == 1
    assert session.started is not None and session.ended > session.started
    assert stats.skipped == {"sidechain line": 1}


def test_claude_sidechain_files_are_not_read(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "agent-a1b2.jsonl", claude_lines(tmp_path, [(BRIEF, "ok")]))
    stats = ReadStats()
    assert list(claude.read(path, stats, KEEP_ALL)) == []
    assert stats.skipped == {"sub-agent (sidechain) file": 1}
