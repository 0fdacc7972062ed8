"""`gitsleep log` where there is no history to read: each case one line in the user's
words, naming no flag they did not pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo

CONFIG = """\
version: 1
backend: offline
skills:
  - name: writer
    skill: skills/writer/SKILL.md
    tasks:
      - path: evals/writer/tasks.jsonl
"""


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gitsleep: error: "), err
    return lines[0]


def test_outside_git_says_so_without_naming_base(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".gitsleep.yml").write_text(CONFIG)
    result = run_cli(capsys, "--repo", str(plain), "log")
    assert result.code == 2
    line = one_error_line(result.err)
    assert "--base" not in line
    assert f"{plain} is not inside a git repository (run `git init`" in line


def test_no_commit_yet_and_a_base_that_is_no_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    (empty / ".gitsleep.yml").write_text(CONFIG)
    result = run_cli(capsys, "--repo", str(empty), "log")
    assert result.code == 2
    line = one_error_line(result.err)
    assert "has no commits yet" in line and "--base" not in line

    work, _ = make_repo(tmp_path)
    commit_files(work, {".gitsleep.yml": CONFIG}, "config")
    result = run_cli(capsys, "--repo", str(work), "log", "--base", "nope")
    assert result.code == 2
    assert "--base nope: not a commit in" in one_error_line(result.err)
    assert run_cli(capsys, "--repo", str(work), "log").code == 0
