"""Reading sessions: bad lines counted and skipped, memory bounded, any encoding."""

from __future__ import annotations

import json
from pathlib import Path

from gitsleep.flows.harvest import claude, codex, plain
from gitsleep.flows.harvest.sessions import MAX_TURNS, ReadStats
from tests.support.harvest import BRIEF, FIX, KEEP_ALL
from tests.support.transcripts import (
    claude_lines,
    codex_lines,
    write_jsonl,
)


def test_bad_lines_are_counted_and_never_stop_the_file(tmp_path: Path) -> None:
    lines = claude_lines(tmp_path, [(BRIEF, "Here."), (FIX, "Fixed.")], noise=False)
    extra = [b'{"type": "user", "message": {"content": "half a li\n',  # corrupt JSON
             b'{"type": "user", "message": {"content": "caf\xe9 latin-1"}}\n',  # not UTF-8
             b'[1, 2, 3]\n', b'{"type": "brand-new-event", "x": 1}\n', b'\n']
    path = write_jsonl(tmp_path / "s.jsonl", lines[:2], extra=extra)
    with path.open("ab") as handle:  # the conversation goes on after the bad lines
        handle.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines[2:]))
    stats = ReadStats()
    (session,) = claude.read(path, stats, KEEP_ALL)
    assert [t.user for t in session.turns] == [BRIEF, FIX]
    assert stats.skipped == {"line not JSON": 1, "line not UTF-8": 1,
                             "line not a JSON object": 1, "unknown line type": 1}


def test_a_huge_session_is_read_in_bounded_memory(tmp_path: Path) -> None:
    turns = [(f"Write a decision brief number {i} on the queue.", "x" * 50) for i in range(300)]
    lines = claude_lines(tmp_path, turns, noise=False)
    giant = {"type": "user", "message": {"content": "y" * (9 * 2**20)}}  # over the line limit
    path = write_jsonl(tmp_path / "big.jsonl", lines[:1] + [giant] + lines[1:])
    stats = ReadStats()
    (session,) = claude.read(path, stats, KEEP_ALL)
    assert session.user_turns == 300 and len(session.turns) == MAX_TURNS
    assert stats.skipped == {"line over 8 MB": 1}
    assert stats.lines == len(lines)


def test_every_source_reads_past_corrupt_and_non_utf8_lines(tmp_path: Path) -> None:
    bad = [b'{"type": "response_item", "payload": {"type": "mess\n', b"\xff\xfe\x00 junk\n"]
    sources = {
        "claude": (claude, claude_lines(tmp_path, [(BRIEF, "Draft."), (FIX, "ok")],
                                        noise=False)),
        "codex": (codex, codex_lines(tmp_path, [(BRIEF, "Draft."), (FIX, "ok")])),
        "jsonl": (plain, [{"prompt": BRIEF, "answer": "Draft.", "feedback": FIX}] * 2),
    }
    for name, (reader, lines) in sources.items():
        path = tmp_path / f"{name}.jsonl"
        with path.open("wb") as handle:
            for number, line in enumerate(lines):
                handle.write(json.dumps(line).encode() + b"\n")
                if number == 0:
                    handle.write(b"".join(bad))
        stats = ReadStats()
        found = list(reader.read(path, stats, KEEP_ALL))
        assert found and [t.user for t in found[-1].turns] == [BRIEF, FIX], name
        assert stats.skipped == {"line not JSON": 1, "line not UTF-8": 1}, name
