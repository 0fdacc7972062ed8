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
