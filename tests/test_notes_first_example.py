"""The bundled trajectory example (examples/notes-first): a skill that answers "from what
you know" while every task checks that the agent searched the team's notes for the task's
topic. `gitsleep demo --example notes-first` learns to search, offline, and held-out lifts;
the pull request shows per task what was called before and after."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git

pytestmark = pytest.mark.slow  # a whole night


@pytest.fixture
def demo_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def test_the_demo_learns_to_search_and_lifts_held_out(
        demo_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "demo", "--example", "notes-first", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["decision"] == "accepted"
    assert (data["test"]["baseline"], data["test"]["candidate"], data["test"]["n"]) == (
        0.25, 1.0, 6)
    assert [e["content"] for e in data["edits"]["applied"]] == [
        'Call the "search" tool before you answer.']
    assert all(calls == {"before": [], "after": ["search"]}
               for calls in data["tool_calls"]["test"].values())


def test_the_pull_request_shows_the_calls_before_and_after(
        demo_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "demo", "--example", "notes-first")
    assert result.code == 0, result.err
    assert "| h-offsite | 0.250 | 1.000 | improved | all 2 checks passed; tools: no tool -> " \
           "search |" in result.out


def test_doctor_shows_what_the_agent_called_and_judges_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.gitrepo import commit_files, example_repo

    work, _ = example_repo(tmp_path, monkeypatch, "notes-first")
    args = ("--repo", str(work), "doctor", "--skill", "notes-first", "--task",
            "t-release-cadence")
    skipped = run_cli(capsys, *args)
    assert skipped.code == 0, skipped.err
    assert "tool calls:\n    (no tool was called)" in skipped.out
    assert "judge: hard 0.00, soft 0.50: failed: tool_called 'search'" in skipped.out
    skill = work / "skills/notes-first/SKILL.md"
    commit_files(work, {"skills/notes-first/SKILL.md": skill.read_text()
                        + '\nCall the "search" tool before you answer.\n'}, "search first")
    called = run_cli(capsys, *args)
    assert called.code == 0, called.err
    assert ('1. search({"query":"How often do we ship a release?"}) -> release-cadence.md: '
            in called.out)
    assert "judge: hard 1.00, soft 1.00" in called.out
