"""`gitsleep eval` through the real CLI: one line per split, the metric explained, JSON rows
that match, and the click function named after its command."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from gitsleep.commands import eval_cmd
from gitsleep.report import metric_note
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo


def test_the_command_is_a_function_named_eval() -> None:
    assert isinstance(eval_cmd.eval, click.Command) and eval_cmd.eval.name == "eval"
    assert not hasattr(eval_cmd, "command")


def test_text_and_json_say_the_same_scores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    text = run_cli(capsys, "--repo", str(work), "eval", "--backend", "offline",
                   "--split", "val")
    assert text.code == 0, text.err
    line, note = text.out.splitlines()[:2]
    assert line.startswith("brief-writer val   n=") and "errors=0" in line
    as_json = run_cli(capsys, "--repo", str(work), "eval", "--backend", "offline",
                      "--split", "val", "--json")
    (row,) = json.loads(as_json.out)
    assert row["skill"] == "brief-writer" and row["split"] == "val" and row["simulated"]
    assert f"={row['score']:.3f}" in line and f"n={row['n']}" in line
    assert len(row["tasks"]) == row["n"]
    assert note == f"{metric_note(row['metric']).replace('`', '')}."
