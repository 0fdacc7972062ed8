"""The bundled workspace example (examples/changelog-keeper): in a committed copy
of it, an offline night learns the team's changelog convention from what the simulated
agent did in the fixture project, and held-out improves. The checks run the fixture's own
`python check.py` (its tests and a changelog lint) for real, in every workspace copy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import example_files, isolate_git, make_repo

pytestmark = pytest.mark.slow  # a whole workspace example night

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "changelog-keeper"
LEARNED = 'Always add "## [Unreleased]" to "CHANGELOG.md"'


@pytest.fixture
def copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, example_files("changelog-keeper"))
    return work


def test_the_fixture_project_passes_its_own_check_as_shipped() -> None:
    done = subprocess.run([sys.executable, "check.py"], cwd=EXAMPLE / "evals/changelog-keeper"
                          / "fixture", capture_output=True, text=True, check=False,
                          env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_validate_lists_the_fixture_command_every_night_would_run(
        copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(copy), "validate")
    assert result.code == 0, result.out + result.err
    assert ("changelog-keeper: task 'train-01': python check.py (in the workspace "
            "evals/changelog-keeper/fixture)") in result.err


def test_the_changelog_example_improves_held_out_offline(
        copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(copy), "consolidate", "--no-push", "--json")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    summary = summary[0] if isinstance(summary, list) else summary
    assert summary["decision"] == "accepted"
    assert [e["content"] for e in summary["edits"]["applied"]] == [LEARNED]
    test = summary["test"]
    assert test["n"] == 3 and test["baseline"] < test["candidate"] == 1.0
    # before: nothing under "## [Unreleased]" (the fixture's check and the bound passed)
    assert test["baseline"] == pytest.approx(0.5 * 0 + 0.5 * 0.75)
    skill = subprocess.run(["git", "show", f"{summary['branch']}:skills/changelog-keeper/"
                            "SKILL.md"], cwd=copy, capture_output=True, text=True, check=True)
    assert LEARNED in skill.stdout
    assert not (copy / "evals/changelog-keeper/fixture/__pycache__").exists()
