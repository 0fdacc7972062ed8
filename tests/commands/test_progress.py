"""Progress on long passes: a bar on a terminal, plain lines in logs, nothing with -q.

The terminal case runs the real CLI in a subprocess whose stderr is a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import git, isolate_git, make_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The brief-writer example (15 train, 6 val, 6 held-out tasks), committed and pushed."""
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "CI", "GITSLEEP_MODEL", "GITSLEEP_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
             for p in EXAMPLE.rglob("*") if p.is_file() and ".gitsleep" not in p.parts}
    work, _ = make_repo(tmp_path, {**files, ".gitignore": ".gitsleep/\n"})
    return work


def read_pty(master: int, process: subprocess.Popen[bytes]) -> str:
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_shows_a_progress_bar_per_pass_and_each_optimizer_call(work: Path) -> None:
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(TERM="xterm", COLUMNS="120")
    process = subprocess.Popen(
        [sys.executable, "-m", "gitsleep", "--repo", str(work), "consolidate", "--dry-run"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    try:
        shown = read_pty(master, process)
        out = process.communicate(timeout=120)[0].decode()
    finally:
        os.close(master)

    assert process.returncode == 0, shown
    assert "brief-writer: accepted" in out and "[" not in out  # results stay on stdout
    assert "brief-writer: scoring train (baseline)" in shown
    # click's bar, filling as answers arrive, with its position
    assert "brief-writer: scoring train (baseline)  [####################]  15/15" in shown
    assert "brief-writer: scoring test (final)  [####################]  6/6" in shown
    assert "optimizer call started (offline): skill round 1, proposal 1 of 3" in shown


def test_a_log_gets_plain_lines_and_quarters_on_long_passes(
        work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")

    assert result.code == 0, result.err
    lines = result.err.splitlines()
    assert "brief-writer: scoring train (baseline): 15 to score" in lines
    assert [line for line in lines if line.startswith("brief-writer: scoring train (baseline): ")
            ] == [f"brief-writer: scoring train (baseline): {n}" for n in
                  ("15 to score", "4/15", "8/15", "12/15", "15/15")]
    assert "brief-writer: scoring val (baseline): 6 to score" in lines  # short: one line
    assert not any(line.startswith("brief-writer: scoring val (baseline): 6/6")
                   for line in lines)
    assert any(line.startswith("brief-writer: optimizer call started (offline): skill round 1,"
                               " proposal 1 of 3, from ") for line in lines)
    assert "\r" not in result.err and "\x1b" not in result.err


def test_eval_shows_progress_too_and_quiet_shows_none(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loud = run_cli(capsys, "--repo", str(work), "eval", "--split", "train")
    assert "brief-writer: scoring train: 4/15" in loud.err.splitlines()

    quiet = run_cli(capsys, "--repo", str(work), "-q", "consolidate", "--dry-run")
    assert quiet.code == 0
    assert "scoring" not in quiet.err and "optimizer call" not in quiet.err
    assert "brief-writer: accepted" in quiet.out


def test_the_core_reports_progress_without_importing_click() -> None:
    probe = ("import sys; import gitsleep.core.epoch, gitsleep.core.replay, gitsleep.core.calls; "
             "print('click' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_a_cached_call_is_not_announced(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")
    again = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")
    assert "optimizer call started" in first.err
    assert "optimizer call started" not in again.err  # answered from the cache: no call
    assert git(work, "status", "--porcelain") == ""


def test_an_80_column_terminal_shows_every_label_and_status_line_whole(work: Path) -> None:
    """A cut label loses what is being scored ("...(skill rou"); the bar shrinks instead, and
    a status line too long for the terminal is printed whole on its own line."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(TERM="xterm", COLUMNS="80", LINES="24")
    process = subprocess.Popen(
        [sys.executable, "-m", "gitsleep", "--repo", str(work), "consolidate", "--dry-run"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    try:
        shown = read_pty(master, process)
        process.communicate(timeout=120)
    finally:
        os.close(master)

    assert process.returncode == 0, shown
    assert "brief-writer: scoring val (skill round 1 proposal 1)  [" in shown
    started = [line for line in shown.replace("\r", "\n").splitlines()
               if "optimizer call started (offline): skill round 1, proposal 1 of 3" in line]
    assert started and started[0].rstrip().endswith("train tasks"), started
    for line in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).replace("\r", "\n").splitlines():
        if "[#" in line or "[-" in line or "[ " in line:  # a bar line is redrawn in place
            assert len(line.rstrip()) <= 79, line


class _SlowStream:
    """A stderr that yields to other threads inside every write, as a pipe to a busy
    terminal does: unlocked writers interleave their pieces here."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def write(self, text: str) -> int:
        time.sleep(0.0005)
        self.pieces.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_progress_lines_from_worker_threads_never_glue_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The demo's progress lines on stderr glued together (7 runs of 15)
    because each worker printed its line and its newline as two unlocked writes."""
    from gitsleep.flows import prepare

    stream = _SlowStream()
    monkeypatch.setattr(sys, "stderr", stream)
    lines = [f"worker {w} line {n}" for w in range(6) for n in range(20)]

    def say(worker: int) -> None:
        for n in range(20):
            prepare._stderr(f"worker {worker} line {n}")

    threads = [threading.Thread(target=say, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    printed = "".join(stream.pieces).splitlines()
    assert sorted(printed) == sorted(lines)
