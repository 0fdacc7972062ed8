"""Harvest's order of steps in a real repository: sources checked, the skill's own tasks
read so none is mined twice, the new tasks appended marked review: pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.flows.harvest.flow import HarvestRequest, default_output, harvest
from gitsleep.flows.prepare import Setup
from tests.support.gitrepo import example_repo
from tests.support.harvest import BRIEF, FIX
from tests.support.transcripts import write_jsonl


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    work, _ = example_repo(tmp_path, monkeypatch)
    return Setup.load(work, None, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")},
                      progress=lambda _line: None)


def test_a_corrected_session_becomes_one_pending_task_appended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setup = _setup(tmp_path, monkeypatch)
    log = write_jsonl(tmp_path / "log.jsonl", [{"prompt": BRIEF, "answer": "Draft.",
                                                "feedback": FIX}])
    done = harvest(setup, HarvestRequest(skill="brief-writer", source="jsonl", paths=(log,)))
    assert done.relative == default_output("brief-writer") and done.branch is None
    assert done.counts.tasks == 1
    (line,) = (setup.repo / done.relative).read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record["prompt"] == BRIEF and record["review"] == "pending"
    again = harvest(setup, HarvestRequest(skill="brief-writer", source="jsonl", paths=(log,)))
    assert again.counts.tasks == 0  # already in the file: never mined twice
    assert len((setup.repo / done.relative).read_text(encoding="utf-8").splitlines()) == 1


def test_a_missing_source_and_an_outside_output_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    setup = _setup(tmp_path, monkeypatch)
    with pytest.raises(UsageError, match="no such file or folder"):
        harvest(setup, HarvestRequest(skill="brief-writer", source="jsonl",
                                      paths=(tmp_path / "absent.jsonl",)))
    with pytest.raises(UsageError, match="--from jsonl needs the JSONL files"):
        harvest(setup, HarvestRequest(skill="brief-writer", source="jsonl"))
    log = write_jsonl(tmp_path / "log.jsonl", [{"prompt": BRIEF, "answer": "x"}])
    with pytest.raises(UsageError, match="must be inside the repository"):
        harvest(setup, HarvestRequest(skill="brief-writer", source="jsonl", paths=(log,),
                                      output=tmp_path / "elsewhere.jsonl"))
