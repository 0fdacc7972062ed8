"""`gitsleep doctor` through the real CLI: each step printed as `label: value`, redacted
and escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.redact import Redactor
from gitsleep.commands.doctor_cmd import _Shower
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo


def test_doctor_prints_each_step_of_one_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    done = run_cli(capsys, "--repo", str(work), "doctor", "--backend", "offline")
    assert done.code == 0, done.err
    labels = [line.split(":", 1)[0] for line in done.out.splitlines()
              if line and not line.startswith(" ")]
    assert labels == ["backends", "models", "task", "answer", "judge"]


def test_a_step_is_redacted_escaped_and_a_block_indented(
        capsys: pytest.CaptureFixture[str]) -> None:
    secret = "sk-proj-" + "Zq7" * 12
    show = _Shower(Redactor.from_env({}))
    show("answer", f"key {secret}\n\x1b[2Jdone", block=True)
    show("exit", "0")
    out = capsys.readouterr().out
    assert secret not in out and "\x1b" not in out
    assert out.splitlines()[0] == "answer:" and out.splitlines()[2] == "    \\x1b[2Jdone"
    assert out.splitlines()[-1] == "exit: 0"
