"""Several agents: a dry run's call ceiling counts every agent's answers."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep.core.agents import expand
from gitsleep.core.epoch import call_ceiling
from gitsleep.flows.prepare import read_inputs
from gitsleep.inputs.config import load_config
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo

TWO_AGENTS = """
agents:
  - {name: sim, backend: offline}
  - {name: recent, backend: offline, model: offline-recent-2}
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch)[0]


def ceiling_said(err: str) -> int:
    found = re.search(r"this epoch needs at most \d+ model calls \(ceiling (\d+)", err)
    assert found, err
    return int(found[1])


def test_a_dry_runs_ceiling_counts_both_agents_answers(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_file = work / ".gitsleep.yml"
    config_file.write_text(config_file.read_text(encoding="utf-8") + TWO_AGENTS
                           + "budget: {max_calls: 1}\n", encoding="utf-8")
    config = load_config(config_file)
    skill = config.skill("brief-writer")
    tasks, documents = read_inputs(work, skill)
    settings = config.epoch_settings(skill="brief-writer")
    one = call_ceiling(replace(settings, agents=()), tasks, False)
    both = call_ceiling(settings, expand(tasks, settings.agents), False)
    assert both > one and call_ceiling(settings, tasks, False) == both

    said = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")
    assert ceiling_said(said.err) == both


def test_a_branch_already_up_to_date_still_shows_each_agents_recorded_scores(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config_file = work / ".gitsleep.yml"
    config_file.write_text(config_file.read_text(encoding="utf-8") + TWO_AGENTS,
                           encoding="utf-8")
    first = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--no-push")
    assert first.code == 0, first.err
    again = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--no-push")
    assert again.code == 0, again.err
    before, after = json.loads(first.out), json.loads(again.out)
    assert "up to date" in after["reason"] or "already records" in after["reason"]
    assert [a["name"] for a in after["agents"]] == ["sim", "recent"]
    assert [a["test"] for a in after["agents"]] == [
        {k: v for k, v in a["test"].items() if k in ("baseline", "candidate", "n")}
        for a in before["agents"]]
