"""`gitsleep demo` prints what its night decided: the decision, both scores, the edits, the
commit message and the pull request it would open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.commands import demo_cmd
from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git


def test_the_command_is_a_function_named_demo() -> None:
    assert demo_cmd.demo.name == "demo" and not hasattr(demo_cmd, "command")


def test_text_and_json_tell_the_same_night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    as_json = run_cli(capsys, "demo", "--json")
    assert as_json.code == 0, as_json.err
    summary = json.loads(as_json.out)
    text = run_cli(capsys, "demo")
    assert text.code == 0, text.err
    assert f"decision: {summary['decision']} - " in text.out
    val = summary["val"]
    assert f"val:      {val['baseline']:.3f} -> {val['candidate']:.3f} (n={val['n']})" in text.out
    assert "Commit message" in text.out and "Pull request it would open" in text.out
    assert "removed now" in text.out
