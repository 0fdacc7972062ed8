"""`gitsleep review` through the real CLI: a head that changes no skill is not scored, and
says so, one line each; the click function is named after its command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.commands import review_cmd
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo


def test_the_command_is_a_function_named_review() -> None:
    assert review_cmd.review.name == "review" and not hasattr(review_cmd, "command")


def test_a_head_that_changes_no_skill_is_skipped(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    text = run_cli(capsys, "--repo", str(work), "review", "--base", "HEAD", "--backend",
                   "offline", "--no-comment")
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[0].startswith("brief-writer: skipped: nothing changed")
    assert lines[1].startswith("review: nothing to review (base HEAD (")
    assert lines[2] == "comment: none (--no-comment)"
    as_json = run_cli(capsys, "--repo", str(work), "review", "--base", "HEAD", "--backend",
                      "offline", "--no-comment", "--json")
    assert as_json.code == 0
    data = json.loads(as_json.out)
    assert data["verdict"] == "nothing to review" and data["exit_code"] == 0
    assert data["base"]["ref"] == "HEAD" and not data["regression"]
