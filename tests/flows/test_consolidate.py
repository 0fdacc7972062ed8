"""The night's flow: a dry run writes its diagnostics and a pull-request body but never a
branch; the night itself is tested whole in tests/e2e/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.flows.consolidate import dry_run, rerun_consolidate
from gitsleep.flows.prepare import Setup
from tests.support.gitrepo import example_repo, git


def test_a_dry_run_decides_and_reports_without_touching_git(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    branches = git(work, "branch", "--list")
    setup = Setup.load(work, None, env={"PATH": "/usr/bin:/bin"}, backend="offline",
                       progress=lambda _line: None)
    outcome = dry_run(setup, setup.config.skills[0], tmp_path / "out")
    assert outcome.summary.decision == "accepted" and outcome.summary.branch is None
    assert outcome.summary.pr.reason == "dry run"
    note = json.loads((tmp_path / "out" / "diagnostics.json").read_text(encoding="utf-8"))
    assert note["decision"] == "accepted" and note["extra"]["dry_run"] is True
    assert rerun_consolidate("brief-writer") in (outcome.pr_body or "")
    assert git(work, "branch", "--list") == branches
    assert git(work, "status", "--porcelain") == ""
