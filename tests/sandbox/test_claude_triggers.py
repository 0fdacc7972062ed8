"""The Claude Code trigger harness against a fake `claude` on PATH that streams stream-json."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from gitsleep.backends.offline import OfflineBackend
from gitsleep.base.errors import BackendError, UsageError
from gitsleep.core import triggers as tr
from gitsleep.sandbox.claude_triggers import ClaudePicker, picks_in

FAKE = Path(__file__).parents[1] / "support" / "fake_agents" / "claude_stream.py"
CATALOG = [tr.Listing("release-notes", "Writes release notes."),
           tr.Listing("scribe", "Writes commit messages.")]


@pytest.fixture
def claude(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`claude` on PATH (the fake), a clean home, and the log of its runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "runs.jsonl"))
    return tmp_path


def pick(events: str, monkeypatch: pytest.MonkeyPatch, *, description: str = "Commit notes.",
         timeout: float = 20.0) -> tuple[str | None, str | None]:
    monkeypatch.setenv("FAKE_CLAUDE_EVENTS", events)
    backend = ClaudePicker(OfflineBackend(), env=dict(os.environ), timeout=timeout)
    call = tr.pick_call(tr.with_description(CATALOG, "scribe", description), "commit this",
                        "m", 0, "scribe")
    answer = backend.complete(call)
    return tr.read_pick(answer.text, [s.name for s in CATALOG]), answer.error


def runs(where: Path) -> list[dict[str, object]]:
    log = where / "runs.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [json.loads(line) for line in lines]


@pytest.mark.slow
def test_a_pick_late_in_the_stream_counts_and_the_candidate_is_installed(
        claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert pick("text,tool:Bash,text,tool:Grep,skill:scribe", monkeypatch,
                description="Writes commit messages for staged diffs.") == ("scribe", None)
    assert pick("text,read:scribe", monkeypatch) == ("scribe", None)  # a read of its file
    assert pick("text,tool:Bash", monkeypatch) == (None, None)  # no skill, not an error
    seen = runs(claude)
    assert seen[0]["skills"] == {"release-notes": "Writes release notes.",
                                 "scribe": "Writes commit messages for staged diffs."}
    assert seen[0]["query"] == "commit this"
    assert seen[0]["argv"] == ["-p", "--output-format", "stream-json", "--verbose"]
    assert len({run["cwd"] for run in seen}) == 3  # one folder per run
    assert not any(Path(str(run["cwd"])).exists() for run in seen)  # and gone after it


@pytest.mark.slow
def test_a_sibling_picked_first_does_not_hide_the_candidate(
        claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert pick("skill:release-notes,text,skill:scribe", monkeypatch) == ("scribe", None)
    assert pick("skill:release-notes,text", monkeypatch) == ("release-notes", None)


def test_a_shadowing_personal_copy_is_refused_before_any_call(
        claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    personal = claude / "home" / ".claude" / "skills" / "scribe"
    personal.mkdir(parents=True)
    (personal / "SKILL.md").write_text("---\nname: scribe\n---\n", encoding="utf-8")
    backend = ClaudePicker(OfflineBackend(), env=dict(os.environ), timeout=20)
    with pytest.raises(UsageError, match="a personal skill of the same name shadows"):
        backend.refuse_shadowing(s.name for s in CATALOG)
    with pytest.raises(BackendError, match="shadows the project's"):
        pick("skill:scribe", monkeypatch)
    assert runs(claude) == []  # claude never ran


@pytest.mark.slow
def test_a_run_past_the_timeout_is_an_error_never_a_wrong_pick(
        claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SLEEP", "30")
    picked, error = pick("skill:scribe", monkeypatch, timeout=0.5)
    assert picked is None and error == "claude timed out after 0.5s (triggers.timeout)"


def test_picks_are_read_from_every_event_and_junk_is_no_pick() -> None:
    stream = "\n".join([
        "not json", json.dumps([1, 2]),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Skill", "input": {"skill": "/scribe"}}]}}),
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "name": "Bash",
             "input": {"command": "cat .claude/skills/release-notes/SKILL.md"}}]}})])
    assert picks_in(stream, ["release-notes", "scribe"]) == ["scribe", "release-notes"]
