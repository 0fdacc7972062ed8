"""`gitsleep demo --example scribe`: the bundled trigger example, offline, end to end."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git


@pytest.mark.slow
def test_the_demo_lifts_held_out_trigger_accuracy_with_no_sibling_falling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = run_cli(capsys, "demo", "--example", "scribe", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    triggers = data["triggers"]
    assert data["decision"] == "accepted" and triggers["pr_eligible"]
    assert (triggers["test"]["baseline"], triggers["test"]["candidate"]) == (0.4, 1.0)
    assert triggers["siblings_fell"] == ""
    assert triggers["description"]["before"] == \
        "Helps with notes and text about project changes."
    sibling_rows = [p for p in triggers["picks"] if p["expected"] in ("release-notes",
                                                                       "sql-helper")]
    assert sibling_rows and all(p["after"] == p["expected"] for p in sibling_rows)
    plain = run_cli(capsys, "demo", "--example", "scribe")
    assert "triggers: val 0.400 -> 1.000 (n=5)   held-out 0.400 -> 1.000 (n=5)" in plain.out
