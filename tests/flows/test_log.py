"""`gitsleep log` and the held-out chart: history read back from real git trailers and notes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import init_repo, run_cli
from tests.support.fake_github import FakeGitHub
from tests.support.gitrepo import commit_files, git

SKILL_MD = "skills/example-skill/SKILL.md"
BRANCH = "gitsleep/example-skill"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Path:
    return init_repo(tmp_path, monkeypatch, capsys)[0]


def two_epochs(work: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """Epoch 1, then a base change and epoch 2, which restarts the branch from the base."""
    assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
    first = git(work, "rev-parse", BRANCH)
    text = (work / SKILL_MD).read_text().replace("Release notes", "Release notes, short")
    commit_files(work, {SKILL_MD: text}, "reword the skill's title")
    git(work, "push", "--quiet", "origin", "main")
    assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
    second = git(work, "rev-parse", BRANCH)
    assert first != second
    return first, second


def test_log_lists_every_epoch_from_trailers_and_notes(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = two_epochs(work, capsys)

    shown = run_cli(capsys, "--repo", str(work), "log")
    assert shown.code == 0, shown.err
    header, *rows = shown.out.splitlines()
    assert header.split() == ["date", "(UTC)", "skill", "commit", "on", "decision", "val",
                              "held-out", "edits", "calls", "cost"]
    assert len(rows) == 2
    assert rows[0].split()[2:6] == ["example-skill", first[:12], "superseded", "accepted"]
    assert rows[1].split()[2:6] == ["example-skill", second[:12], BRANCH, "accepted"]
    assert "0.208 -> 1.000  0.208 -> 1.000  2" in rows[1]

    data = json.loads(run_cli(capsys, "--repo", str(work), "log", "--json",
                              "--skill", "example-skill").out)
    assert [(e["commit"], e["where"]) for e in data] == [(first, "superseded"),
                                                         (second, "branch")]
    assert data[1]["test"] == {"baseline": 0.208, "candidate": 1.0}
    assert data[1]["edits_applied"] == 2 and data[1]["cost"]["calls"] > 0

    # merged: the epoch now lives in the base's history
    git(work, "merge", "--quiet", "--ff-only", BRANCH)
    merged = json.loads(run_cli(capsys, "--repo", str(work), "log", "--json").out)
    assert [(e["commit"], e["where"]) for e in merged] == [(first, "superseded"),
                                                           (second, "base")]


def test_log_before_any_epoch_and_for_an_unknown_skill(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = run_cli(capsys, "--repo", str(work), "log")
    assert empty.code == 0 and "no recorded epoch for any skill" in empty.out
    assert json.loads(run_cli(capsys, "--repo", str(work), "log", "--json").out) == []
    unknown = run_cli(capsys, "--repo", str(work), "log", "--skill", "nope")
    assert unknown.code == 2 and "nope" in unknown.err and "Traceback" not in unknown.err


def test_pull_request_body_charts_held_out_per_epoch_from_the_second_epoch(
        work: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeGitHub() as github:
        for key, value in github.env().items():
            monkeypatch.setenv(key, value)
        assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
        pull = next(iter(github.pulls.values()))
        assert "xychart-beta" not in pull["body"]  # one epoch: nothing to chart

        text = (work / SKILL_MD).read_text().replace("Release notes", "Release notes, short")
        commit_files(work, {SKILL_MD: text}, "reword the skill's title")
        git(work, "push", "--quiet", "origin", "main")
        assert run_cli(capsys, "--repo", str(work), "consolidate", "--push").code == 0
        body = next(iter(github.pulls.values()))["body"]

    assert "### Held-out per epoch\n\n```mermaid\nxychart-beta\n" in body
    assert '    x-axis ["before", "#1 ' in body
    assert "    line [0.208, 1.000, 1.000]\n```" in body


def test_job_summary_charts_held_out_per_epoch(
        work: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two_epochs(work, capsys)
    results = tmp_path / "results"
    results.mkdir()
    (results / "001.json").write_text(
        run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json").out)
    summary = tmp_path / "summary.md"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary),
           "GITHUB_OUTPUT": str(tmp_path / "out")}
    subprocess.run([sys.executable, "-m", "gitsleep.report.action_outputs", "publish", "--results",
                    str(results), "--exit-code", "0"], cwd=work, env=env, check=True, timeout=60)

    text = summary.read_text()
    assert "### example-skill: held-out per epoch\n\n```mermaid\nxychart-beta" in text
    assert "line [0.208, 1.000, 1.000]" in text
