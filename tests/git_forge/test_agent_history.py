"""Several agents: `log` and `status` read each agent's scores back from the
commit's `Gitsleep-Val-<name>` / `Gitsleep-Test-<name>` trailers, in a real repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import init_repo, run_cli
from tests.support.gitrepo import git

BRANCH = "gitsleep/example-skill"
AGENT_TRAILERS = ("Gitsleep-Val-small: 0.250 -> 0.500\nGitsleep-Test-small: 0.000 -> 1.000\n"
                  "Gitsleep-Val-large: 0.750 -> 0.500\nGitsleep-Test-large: 0.500 -> 1.000\n")


def record_epoch(work: Path, agents: str) -> str:
    """An accepted epoch's commit on the gitsleep branch, with its proving note, as a night
    of two agents writes it (the documents need not change for log and status)."""
    base = git(work, "rev-parse", "HEAD").strip()
    message = ("gitsleep(example-skill): val 0.500 -> 0.500, held-out 0.250 -> 1.000\n\n"
               "Decision: accepted\n\nGitsleep-Skill: example-skill\nGitsleep-Decision: "
               "accepted\nGitsleep-Metric: mixed\nGitsleep-Val: 0.500 -> 0.500\n"
               f"Gitsleep-Test: 0.250 -> 1.000\n{agents}Gitsleep-Base: {base}\n")
    sha = git(work, "commit-tree", f"{base}^{{tree}}", "-p", base, "-m", message).strip()
    git(work, "update-ref", f"refs/heads/{BRANCH}", sha)
    note = json.dumps({"skill": "example-skill", "commit": sha, "branch": BRANCH,
                       "edits": {"applied": [{}]}, "cost": {"calls": 4}})
    git(work, "notes", "--ref=gitsleep", "add", "-f", "-m", note, sha)
    return sha


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Path:
    return init_repo(tmp_path, monkeypatch, capsys)[0]


def test_log_shows_each_agent_under_its_epoch(work: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    sha = record_epoch(work, AGENT_TRAILERS)
    shown = run_cli(capsys, "--repo", str(work), "log")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert sha[:12] in lines[1]
    assert lines[2:] == ["    agent small: val 0.250 -> 0.500, held-out 0.000 -> 1.000",
                         "    agent large: val 0.750 -> 0.500, held-out 0.500 -> 1.000"]
    data = json.loads(run_cli(capsys, "--repo", str(work), "log", "--json").out)
    assert data[0]["agents"] == [
        {"name": "small", "val": {"baseline": 0.25, "candidate": 0.5},
         "test": {"baseline": 0.0, "candidate": 1.0}},
        {"name": "large", "val": {"baseline": 0.75, "candidate": 0.5},
         "test": {"baseline": 0.5, "candidate": 1.0}}]


def test_log_of_a_night_of_one_agent_has_no_agent_lines(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record_epoch(work, "")
    shown = run_cli(capsys, "--repo", str(work), "log")
    assert len(shown.out.splitlines()) == 2 and "agent " not in shown.out
    data = json.loads(run_cli(capsys, "--repo", str(work), "log", "--json").out)
    assert "agents" not in data[0]


def test_status_shows_each_agent_from_the_branch_tip(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record_epoch(work, AGENT_TRAILERS)
    shown = run_cli(capsys, "--repo", str(work), "status")
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0].startswith(f"example-skill: {BRANCH} at ")
    assert lines[1:] == ["  agent small: val 0.250 -> 0.500, held-out 0.000 -> 1.000",
                         "  agent large: val 0.750 -> 0.500, held-out 0.500 -> 1.000"]
    rows = json.loads(run_cli(capsys, "--repo", str(work), "status", "--json").out)
    assert [a["name"] for a in rows[0]["agents"]] == ["small", "large"]
    assert rows[0]["agents"][1]["val"] == {"baseline": 0.75, "candidate": 0.5}


def test_status_of_a_night_of_one_agent_has_no_agents(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record_epoch(work, "")
    shown = run_cli(capsys, "--repo", str(work), "status")
    assert len(shown.out.splitlines()) == 1
    assert "agents" not in json.loads(run_cli(capsys, "--repo", str(work), "status",
                                              "--json").out)[0]
