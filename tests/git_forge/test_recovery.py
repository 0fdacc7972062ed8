"""Recovery reads the pull-request decision a run recorded, not the trailers' score text,
and sits beside the run: it imports nothing above `git_forge`."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from gitsleep.git_forge import record

RECOVERY = Path(__file__).resolve().parents[2] / "gitsleep" / "git_forge" / "recovery.py"
IMPROVED = {record.VAL: "0.300 -> 0.400", record.TEST: "0.300 -> 0.400"}
FLAT = {record.VAL: "0.300 -> 0.300", record.TEST: "0.300 -> 0.300"}


def note(value: object) -> str:
    return json.dumps({"extra": {record.PR_FIELD: value}, "commit": "a" * 40})


def test_the_recorded_decision_wins_over_the_scores_text() -> None:
    """A note that says `skip` is not reopened though the trailers read as an improvement,
    and one that says `open` is finished though they do not."""
    assert record.recorded_pr(note("skip"), IMPROVED, 0.0) is False
    assert record.recorded_pr(note("open"), FLAT, 0.0) is True


def test_a_branch_without_the_field_falls_back_to_the_trailers() -> None:
    """Older branches (no `pull_request` in the note), a missing note and a foreign value."""
    for text in (json.dumps({"extra": {}}), None, "not json", note("maybe"), "[1, 2]"):
        assert record.recorded_pr(text, IMPROVED, 0.0) is True
        assert record.recorded_pr(text, FLAT, 0.0) is False


def test_the_field_round_trips_through_the_note() -> None:
    assert record.pr_field(True) == {"pull_request": "open"}
    assert record.recorded_pr(json.dumps({"extra": record.pr_field(False)}), IMPROVED, 0.0) \
        is False


def test_recovery_imports_nothing_above_git_forge() -> None:
    tree = ast.parse(RECOVERY.read_text(encoding="utf-8"))
    names = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    ours = [n for n in names if n.startswith("gitsleep")]
    allowed = ("gitsleep.git_forge", "gitsleep.core", "gitsleep.base.errors")
    assert ours and all(n.startswith(allowed) for n in ours), ours
