"""Run the real CLI entry point in-process and capture its exit code and output."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gitsleep.cli import main
from tests.support.gitrepo import HOST_ENV, commit_files, git, isolate_git, make_repo


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """`gitsleep ARGS`, as a user would type it; SystemExit becomes the code."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def init_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """A repository after `gitsleep init` (its example skill and tasks), committed and
    pushed to a bare `origin`; git, the forge, model and CI variables isolated from the
    host. Returns (working repository, origin)."""
    isolate_git(monkeypatch, tmp_path)
    for name in (*HOST_ENV, "CI"):
        monkeypatch.delenv(name, raising=False)
    work, origin = make_repo(tmp_path)
    assert run_cli(capsys, "--repo", str(work), "init").code == 0
    git(work, "add", "-A")
    git(work, "commit", "--quiet", "--no-verify", "-m", "gitsleep init")
    git(work, "push", "--quiet", "origin", "main")
    return work, origin


def consolidate_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str], example: Path
                        ) -> tuple[Path, dict[str, Any]]:
    """A bundled example (`examples/<name>`) committed to a fresh repository, validated
    clean, then one real `consolidate --json --no-pr`: (working repository, its JSON)."""
    isolate_git(monkeypatch, tmp_path)
    files: dict[str, str | bytes] = {p.relative_to(example).as_posix(): p.read_bytes()
                                     for p in example.rglob("*") if p.is_file()}
    work, _ = make_repo(tmp_path, files)
    commit_files(work, {".gitignore": ".gitsleep/\n"}, "ignore runs")
    assert run_cli(capsys, "--repo", str(work), "validate").code == 0
    run = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--no-pr")
    assert run.code == 0, run.err
    return work, json.loads(run.out)
