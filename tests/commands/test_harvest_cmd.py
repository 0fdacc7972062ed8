"""`gitsleep harvest` through the real CLI: what it read, kept, mined and masked, one line
each, and the same counts as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.commands import harvest_cmd
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo
from tests.support.harvest import BRIEF, FIX
from tests.support.transcripts import write_jsonl


def test_the_command_is_a_function_named_harvest() -> None:
    assert harvest_cmd.harvest.name == "harvest" and not hasattr(harvest_cmd, "command")


def test_text_then_json_of_a_jsonl_harvest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    log = write_jsonl(tmp_path / "log.jsonl", [{"prompt": BRIEF, "answer": "Draft.",
                                                "feedback": FIX}])
    text = run_cli(capsys, "--repo", str(work), "harvest", "--skill", "brief-writer",
                   "--from", "jsonl", str(log))
    assert text.code == 0, text.err
    lines = text.out.splitlines()
    assert lines[0].startswith("read 1 session(s) in 1 file(s) from jsonl")
    assert lines[2] == "mined 1 task(s)"
    assert ("1 task(s) marked review: pending appended to "
            "evals/brief-writer/harvested.jsonl") in text.out
    again = run_cli(capsys, "--repo", str(work), "harvest", "--skill", "brief-writer",
                    "--from", "jsonl", str(log), "--json")
    summary = json.loads(again.out)
    assert summary["skill"] == "brief-writer" and summary["from"] == "jsonl"
    assert summary["output"] == "evals/brief-writer/harvested.jsonl"
    assert summary["tasks"] == 0  # the task is in the file already
