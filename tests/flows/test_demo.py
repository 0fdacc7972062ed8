"""The demo's flow: a bundled example in a fresh repository with a bare origin, one real
night of the offline simulator, its branch pushed."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.flows.demo import EXAMPLE, example_names, make_demo_repo, run_demo
from tests.support.gitrepo import git, isolate_git


def test_the_examples_a_demo_can_run_include_the_default() -> None:
    names = example_names()
    assert EXAMPLE in names and "dependency-review" in names and names == sorted(names)


def test_a_demo_night_commits_and_pushes_its_branch(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    done = run_demo(tmp_path / "demo", quiet=True)
    summary = done.outcome.summary
    assert summary.decision == "accepted" and summary.simulated
    assert summary.branch == f"gitsleep/{EXAMPLE}" and summary.commit
    origin = tmp_path / "demo" / "origin.git"
    assert git(origin, "rev-parse", f"refs/heads/{summary.branch}") == summary.commit
    assert done.repo == tmp_path / "demo" / "repo" and done.setup.repo == done.repo.resolve()


def test_the_demo_repository_is_one_commit_on_main(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    repo = make_demo_repo(tmp_path, "dependency-review")
    assert git(repo, "rev-list", "--count", "main") == "1"
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / ".gitsleep.yml").is_file()
