"""Untrusted text never drives the terminal.

An agent's output, a model's reply and a commit trailer someone pushed are text gitsleep
prints. Printed raw, a control sequence in them runs in the user's terminal: OSC 52
writes the clipboard, CSI clears the screen or recolours it, OSC 8 hides a link behind
harmless text, DCS asks the terminal to answer, a bare ESC resets it, an 8-bit C1 byte
does the same without ESC, and backspace or carriage return overwrite what was printed.
Each command that prints such text shows every control character escaped instead
(`\\x1b]52;c;...`), through the real CLI with a fake agent that prints them all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.inputs.test_agent_config import project
from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.fake_agents.hostile_tty import SEQUENCES
from tests.support.gitrepo import git

# What a terminal acts on: C0 controls but tab and newline (CR and BS included), DEL, C1.
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def hostile_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int) -> Path:
    monkeypatch.setenv("FAKE_TTY_EXIT", str(exit_code))
    program = install("hostile_tty", tmp_path)
    return project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")


def test_visible_escapes_every_control_and_keeps_text_tabs_and_newlines() -> None:
    from gitsleep.base.terminal import visible

    assert visible("plain text, é, 日本, ⚠️\tand\na newline") == (
        "plain text, é, 日本, ⚠️\tand\na newline")
    assert visible("a\x1b]52;c;aGk=\x07b") == "a\\x1b]52;c;aGk=\\x07b"
    assert visible("\x9b31m\x08\x7f\x00") == "\\x9b31m\\x08\\x7f\\x00"
    assert visible("line\r\nnext\rover") == "line\nnext\\rover"  # CRLF is a line end
    assert visible("\u202eevil\u2066\u2028") == "\\u202eevil\\u2066\\u2028"
    for sequence in SEQUENCES:
        assert not RAW.search(visible(sequence)), sequence


def test_doctor_shows_an_agents_control_sequences_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: doctor printed the agent's version line, answer and stderr raw: the OSC 52
    in them wrote the user's clipboard, the rest cleared and recoloured the screen."""
    repo = hostile_repo(tmp_path, monkeypatch, 0)
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 0, result.err
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert not RAW.search(text), (where, RAW.search(text))
    version = next(line for line in result.out.splitlines() if line.startswith("version:"))
    assert version.startswith("version: hostile-tty 1.0") and "\\x9b31m" in version
    assert "    ## Answer \\x1b]52;c;cm0gLXJmIH4K\\x07" in result.out  # the answer block
    assert "    looks fine\\rEVIL" in result.out and "safe\\x08\\x08\\x08\\x08evil" in result.out
    assert "\\x9b31m" in result.out and "\\x1bP+q544e" in result.out
    assert "warning: \\x1b]52;c;" in result.out  # the stderr tail
    assert "\\x00nul" in result.out


def test_doctor_and_the_error_line_escape_them_when_the_agent_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The failed call's error (the agent's stderr) reaches stderr as `gitsleep: error:`;
    its 8-bit C1 controls (CSI, OSC, ST without ESC) went through raw."""
    repo = hostile_repo(tmp_path, monkeypatch, 2)
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 3
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert not RAW.search(text), (where, RAW.search(text))
    last = result.err.strip().splitlines()[-1]
    assert last.startswith("gitsleep: error: doctor: the agent's call failed: agent "
                           "hostile_tty exited 2; stderr: warning:")
    assert "\\x9b31m" in last and "\\x9d0;title\\x9c" in last


def test_consolidate_progress_and_summary_escape_an_agents_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every answer fails with the agent's stderr as its error; -v prints progress lines
    and the summary names the failure: neither may carry a raw control."""
    repo = hostile_repo(tmp_path, monkeypatch, 2)
    result = run_cli(capsys, "--repo", str(repo), "-v", "consolidate", "--dry-run",
                     "--output-dir", str(tmp_path / "out"))
    assert result.code != 0 and "brief-writer: aborted" in result.err
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert not RAW.search(text), (where, RAW.search(text))


def test_status_escapes_control_characters_in_a_pushed_trailer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gitsleep branch and a note anyone with push access can write: the trailers
    `status` prints came from that commit message."""
    from tests.inputs.test_agent_config import EXAMPLE
    from tests.support.gitrepo import isolate_git, make_repo

    isolate_git(monkeypatch, tmp_path)
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
             for p in EXAMPLE.rglob("*") if p.is_file()}
    work, _ = make_repo(tmp_path, files)
    branch = "gitsleep/brief-writer"
    git(work, "checkout", "--quiet", "-b", branch)
    message = ("gitsleep: brief-writer\n\nGitsleep-Skill: brief-writer\n"
               "Gitsleep-Decision: accepted\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\n"
               "Gitsleep-Val: 0.1 -> 0.9\x9b31m\nGitsleep-Test: 0.2 -> 0.8\r\x08\n")
    git(work, "commit", "--quiet", "--allow-empty", "-m", message)
    sha = git(work, "rev-parse", "HEAD")
    note = json.dumps({"commit": sha, "branch": branch, "skill": "brief-writer"})
    git(work, "notes", "--ref=gitsleep", "add", "-m", note, sha)
    git(work, "checkout", "--quiet", "main")
    result = run_cli(capsys, "--repo", str(work), "status")
    assert result.code == 0, result.err
    assert f"brief-writer: {branch} at {sha[:12]}: accepted\\x1b]52;c;" in result.out
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert not RAW.search(text), (where, RAW.search(text))


def test_a_log_record_shows_control_characters_escaped() -> None:
    """Log records carry text from elsewhere (a remote's refusal of a notes push, a
    library's message about a server's reply): the log line escapes it too."""
    import logging

    from gitsleep.base.logs import RedactingFormatter
    from gitsleep.base.redact import Redactor

    record = logging.LogRecord("gitsleep", logging.WARNING, __file__, 1,
                               "could not push: %s", ("remote: \x1b]52;c;aGk=\x07 \x9b2J",),
                               None)
    line = RedactingFormatter(Redactor()).format(record)
    assert not RAW.search(line), line
    assert line.endswith("could not push: remote: \\x1b]52;c;aGk=\\x07 \\x9b2J")


def test_harvest_prints_a_models_control_sequences_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The LLM miner's reply is model text: the reasons its tasks were dropped quote it
    (an unknown op, a judge kind, a field name), and harvest prints them."""
    from tests.e2e.test_harvest_run import example_files
    from tests.support.fake_openai import FakeOpenAIServer
    from tests.support.gitrepo import isolate_git, make_repo
    from tests.support.transcripts import claude_file

    home = isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITSLEEP_MODEL", "GITSLEEP_BACKEND",
                 "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    work, _ = make_repo(tmp_path, example_files())
    claude_file(home, work, [("Write a decision brief on rotating the deploy keys.", "Draft."),
                             ("No, add a Key Risks section.", "Done.")])
    bad = "\x1b]52;c;cm0gLXJmIH4K\x07\x9b2J\x1b[31m"
    reply = {"tasks": [
        {"prompt": f"Write a brief {bad}", "judge": {"kind": f"rule{bad}"}},
        {"prompt": f"Write a brief {bad} 2",
         "judge": {"kind": "rule", "checks": [{"op": f"shout{bad}", "arg": bad}]}},
        {"prompt": f"Write a brief {bad} 3",
         "judge": {"kind": "rule", "checks": [{"op": "regex", "arg": f"({bad}"}]}},
    ]}
    config = (work / ".gitsleep.yml").read_text()
    with FakeOpenAIServer(lambda request: json.dumps(reply)) as server:
        (work / ".gitsleep.yml").write_text(
            config.replace("backend: offline", f"backend: openai\nbase_url: {server.base_url}")
            .replace("model: null", "model: small-model"))
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456789")
        result = run_cli(capsys, "--repo", str(work), "-v", "harvest", "--skill",
                         "brief-writer", "--from", "claude", "--llm")
    assert result.code == 0, result.err
    assert "llm: " in result.out and server.request_count == 1
    assert "\\x1b]52;c;" in result.out  # the model's text is shown, escaped
    for where, text in (("stdout", result.out), ("stderr", result.err)):
        assert not RAW.search(text), (where, RAW.search(text), text)
