"""`gitsleep status` after every way a team merges gitsleep's branch, and after nights
that left no branch: real git, a bare origin, whole offline nights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, example_repo, git

pytestmark = pytest.mark.slow  # each test runs a whole offline night

BRANCH = "gitsleep/brief-writer"
SKILL_MD = "skills/brief-writer/SKILL.md"
MERGED = "merged into the base: the next `gitsleep consolidate` starts a new epoch from it"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch)[0]


def night(capsys: pytest.CaptureFixture[str], work: Path) -> dict[str, Any]:
    done = run_cli(capsys, "--repo", str(work), "consolidate", "--no-push", "--json")
    assert done.code == 0, done.err
    data: dict[str, Any] = json.loads(done.out)
    return data


def status(capsys: pytest.CaptureFixture[str], work: Path, *extra: str
           ) -> tuple[dict[str, Any], str]:
    """(the JSON row, the text line) of the only skill."""
    as_json = run_cli(capsys, "--repo", str(work), "status", "--json", *extra)
    assert as_json.code == 0, as_json.err
    (row,) = json.loads(as_json.out)
    text = run_cli(capsys, "--repo", str(work), "status", *extra)
    assert text.code == 0, text.err
    return row, text.out


def test_a_fast_forward_merge_is_merged(work: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert night(capsys, work)["decision"] == "accepted"
    git(work, "merge", "--quiet", "--ff-only", BRANCH)
    row, text = status(capsys, work)
    assert row["merged"] is True
    assert MERGED in text and "out of date" not in text


def test_a_squash_merge_is_merged(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert night(capsys, work)["decision"] == "accepted"
    git(work, "merge", "--quiet", "--squash", BRANCH)
    git(work, "commit", "--quiet", "--no-verify", "-m", "Squash gitsleep's night")
    row, text = status(capsys, work)
    assert row["merged"] is True
    assert MERGED in text


def test_a_rebase_merge_onto_a_moved_base_is_merged(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit = night(capsys, work)["commit"]
    commit_files(work, {"NOTES.md": "the base moved on\n"}, "unrelated work")
    git(work, "cherry-pick", commit)  # what "Rebase and merge" leaves on the base
    row, text = status(capsys, work)
    assert row["merged"] is True
    assert MERGED in text


def test_an_unmerged_branch_is_not_merged(work: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    night(capsys, work)
    commit_files(work, {"NOTES.md": "the base moved on\n"}, "unrelated work")
    row, text = status(capsys, work)
    assert row["merged"] is False
    assert "out of date" in text


def test_standing_on_the_gitsleep_branch_is_not_a_merge(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    night(capsys, work)
    git(work, "switch", "--quiet", BRANCH)
    row, text = status(capsys, work)
    assert row["merged"] is False
    assert f"you are on {BRANCH} itself" in text and "--base main" in text
    row, text = status(capsys, work, "--base", "main")  # the advice works
    assert row["merged"] is False and "out of date" not in row.get("note", "")
    assert "up to date" in text


def test_a_merged_and_deleted_branch_says_what_the_last_night_decided(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    night(capsys, work)
    git(work, "merge", "--quiet", "--no-ff", "--no-edit", BRANCH)
    git(work, "branch", "--quiet", "-D", BRANCH)
    row, text = status(capsys, work)
    assert row["merged"] is True and row["last_night"]["decision"] == "accepted"
    assert "no gitsleep branch yet" not in text
    assert "the last night (" in text and "decided accepted" in text
    assert "the base holds its commit (merged)" in text


def test_a_night_that_committed_nothing_is_told(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = work / ".gitsleep.yml"
    commit_files(work, {".gitsleep.yml": config.read_text().replace(
        "min_delta: 0.0", "min_delta: 0.99")}, "a gate no edit passes")
    data = night(capsys, work)
    assert data["decision"] == "rejected" and data["commit"] is None
    row, text = status(capsys, work)
    assert row["exists"] is False and row["last_night"]["decision"] == "rejected"
    assert "no gitsleep branch yet" not in text
    assert "decided rejected" in text and "committed nothing" in text
