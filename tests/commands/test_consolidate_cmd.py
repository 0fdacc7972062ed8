"""`gitsleep consolidate` with `--push` or `--pr` it cannot honour: exit 2 and one line,
the night's commit kept on its branch (real git, a bare origin, offline nights)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo, git

pytestmark = pytest.mark.slow  # each test runs a whole offline night

BRANCH = "gitsleep/brief-writer"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch)[0]


def one_line_refusal(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("gitsleep: error: ")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("flag", ["--push", "--pr"])
def test_a_flag_given_without_a_remote_is_exit_2_and_the_commit_stays(
        work: Path, capsys: pytest.CaptureFixture[str], flag: str) -> None:
    git(work, "remote", "remove", "origin")
    done = run_cli(capsys, "--repo", str(work), "consolidate", flag)
    assert done.code == 2, done.err
    line = one_line_refusal(done.err)
    assert flag in line and "nothing was pushed" in line and "no remote" in line
    tip = git(work, "rev-parse", "--verify", BRANCH)
    assert f"the night's commit {tip[:12]} stays on {BRANCH}" in line


def test_pr_without_a_token_is_exit_2_and_the_pushed_commit_stays(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "--repo", str(work), "consolidate", "--pr")
    assert done.code == 2, done.err
    line = one_line_refusal(done.err)
    assert "--pr: no pull request was opened" in line and "GITHUB_TOKEN" in line
    tip = git(work, "rev-parse", "--verify", BRANCH)
    assert f"the night's commit {tip[:12]} stays on {BRANCH}" in line


def test_push_with_a_remote_pushes_and_exits_0(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "--repo", str(work), "consolidate", "--push")
    assert done.code == 0, done.err
    assert git(work, "rev-parse", f"origin/{BRANCH}") == git(work, "rev-parse", BRANCH)


def test_a_skill_path_that_does_not_exist_is_said_as_validate_says_it(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = work / ".gitsleep.yml"
    config.write_text(config.read_text().replace(
        "skill: skills/brief-writer/SKILL.md", "skill: skills/nope/SKILL.md"))
    git(work, "commit", "--quiet", "-am", "a wrong path")
    done = run_cli(capsys, "--repo", str(work), "consolidate", "--no-push")
    assert done.code == 2
    line = one_line_refusal(done.err)
    assert "commit it first" not in line
    assert line == ("gitsleep: error: skills/nope/SKILL.md: document not found: create it or "
                    "fix the path in the config (validate: GS200)")
    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert "skills/nope/SKILL.md: GS200 document not found: create it or fix the path" \
        in checked.out
