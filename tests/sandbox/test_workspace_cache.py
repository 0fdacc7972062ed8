"""A cached workspace answer carries the outcomes of the checks it was judged with, by check
index: it must never be paired with other checks. Editing a `file_contains` text (not only
a `command`) re-runs the agent; an unchanged task still hits, and a changed text check,
judged afresh from the answer, keeps the hit. Real git repositories, the offline agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.sandbox import workspace
from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, example_repo

TASKS = "evals/changelog-keeper/tasks.jsonl"
OLD = '"text": "## [Unreleased]"'
NEW = '"text": "## [1.0.0]"'  # the untouched fixture's CHANGELOG.md has "## [1.0.0] - ..."


def context(*checks: list[object]) -> dict[str, object]:
    return {"workspace": {"folder": "evals/fx", "repo": "/r", "tree": "t1",
                          "checks": [list(c) for c in checks]}}


FILE = ["file_contains", json.dumps({"path": "CHANGELOG.md", "text": "## [Unreleased]"})]
COMMAND = ["command", json.dumps(["python", "check.py"])]


def test_the_key_holds_every_check_judged_in_the_workspace_at_its_index() -> None:
    base = workspace.call_key(context(FILE, COMMAND, ["no_refusal", None]), "answer")
    assert base == workspace.call_key(context(FILE, COMMAND, ["no_refusal", None]), "answer")
    edited = ["file_contains", json.dumps({"path": "CHANGELOG.md", "text": "## [1.0.0]"})]
    assert base != workspace.call_key(context(edited, COMMAND, ["no_refusal", None]), "answer")
    assert base != workspace.call_key(context(FILE, COMMAND, ["file_exists", "a.md"]),
                                      "answer")
    assert base != workspace.call_key(context(FILE, ["changed_files_max", 1], COMMAND),
                                      "answer")
    # a text check is judged from the answer on every run: editing it keeps the hit,
    # moving a workspace check to another index does not (outcomes are stored by index)
    assert base == workspace.call_key(context(FILE, COMMAND, ["contains", "x"]), "answer")
    assert base != workspace.call_key(context(["contains", "x"], FILE, COMMAND), "answer")


def _eval(capsys: pytest.CaptureFixture[str], repo: Path) -> tuple[dict, str]:
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    (row,) = json.loads(result.out)
    return row, result.err


def test_an_edited_file_contains_check_rescores_instead_of_reusing_old_outcomes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo, _ = example_repo(tmp_path, monkeypatch, "changelog-keeper")
    first, err = _eval(capsys, repo)
    assert first["score"] == pytest.approx(0.375)
    assert "3 model calls, 0 cache hits" in err
    again, err = _eval(capsys, repo)  # unchanged tasks: every answer from the cache
    assert again["score"] == pytest.approx(0.375)
    assert "0 model calls, 3 cache hits" in err

    text = (repo / TASKS).read_text(encoding="utf-8")
    assert OLD in text
    commit_files(repo, {TASKS: text.replace(OLD, NEW)}, "check for 1.0.0")
    edited, err = _eval(capsys, repo)
    reasons = [t["reason"] for t in edited["tasks"]]
    assert not any("does not contain '## [Unreleased]'" in r for r in reasons), reasons
    assert edited["score"] == pytest.approx(1.0), reasons
    assert "3 model calls, 0 cache hits" in err  # the agent re-ran against the new check
    after, err = _eval(capsys, repo)  # and the edited task hits again
    assert after["score"] == pytest.approx(1.0)
    assert "0 model calls, 3 cache hits" in err
