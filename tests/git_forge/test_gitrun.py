"""One git runner: every git process gitsleep starts gets `gitrun.SAFE_CONFIG`.

`init` used to call `git remote get-url` bare; history, review, the notes fetch and
`consolidate`'s status check each built their own `subprocess.run`. Now they all go
through `gitrun.git_run`, which a git trace shows: every started git carries the settings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gitsleep.flows.init import origin_repo
from gitsleep.git_forge.gitrun import SAFE_CONFIG, git_run
from tests.support.gitrepo import git, isolate_git, make_repo

PACKAGE = Path(__file__).resolve().parents[2] / "gitsleep"
# Where git may be started: gitrun alone (`git_run`, and `BlobReader`, the long-lived
# `git cat-file --batch` process the workspace reader uses). No other module starts a
# process of its own but the agent and check programs (`sandbox/processes.py`, no git).
OWN_PROCESS = {"gitrun.py"}
BYPASS = re.compile(r"subprocess\.(run|Popen|check_output|call)\(\s*\[\s*\"git\"|"
                    r"\bsafe_git\(|\brepo\.git\.[a-z_]+\(|\bgit\.Repo\.init\(")
PROCESS = re.compile(r"\bsubprocess\.(run|Popen|check_output|check_call|call)\(|"
                     r"\bos\.(system|popen|exec\w*|spawn\w*)\(")
AGENT_PROCESS = {"sandbox/processes.py"}  # agents and checks from the config, never git


def started_gits(trace: Path) -> list[list[str]]:
    """The argv of every git process a GIT_TRACE2_EVENT file saw start."""
    events = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [e["argv"] for e in events if e.get("event") == "start"]


def safe(argv: list[str]) -> bool:
    flags = {argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "-c"}
    return all(f"{key}={value}" in flags for key, value in SAFE_CONFIG.items())


def test_no_module_starts_git_around_the_runner() -> None:
    found = [f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py")) if path.name not in OWN_PROCESS
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if BYPASS.search(line)]
    assert found == []


def test_no_module_but_the_runner_and_the_sandbox_starts_a_process() -> None:
    """A git process built from parts (`safe_git(...)` handed to `Popen`) is found too:
    only gitrun starts git, and only the sandbox's process runner starts anything else."""
    found = [f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
             for path in sorted(PACKAGE.rglob("*.py"))
             if path.name not in OWN_PROCESS
             and str(path.relative_to(PACKAGE)) not in AGENT_PROCESS
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if PROCESS.search(line)]
    assert found == []


def test_inits_git_call_gets_the_safe_settings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path)
    git(work, "remote", "set-url", "origin", "https://github.com/octo/skills.git")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))

    assert origin_repo(work) == "octo/skills"
    started = started_gits(trace)
    assert started and all(safe(argv) for argv in started), started


def test_the_runner_never_waits_on_a_terminal_and_keeps_bytes(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {"raw.bin": b"\xff\xfe\x00 not utf-8\n"})
    shown = git_run(work, "show", "HEAD:raw.bin")
    assert (shown.status, shown.out) == (0, b"\xff\xfe\x00 not utf-8\n")
    # `hash-object --stdin` with no input given reads the null device, never a terminal
    assert git_run(work, "hash-object", "--stdin", timeout=30).out.strip() == (
        git_run(work, "hash-object", "--stdin", stdin=b"").out.strip())
