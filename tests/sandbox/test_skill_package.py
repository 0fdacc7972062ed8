"""Whole skill packages. A skill's `package: <folder>` (scripts/,
references/, templates/) is installed beside the skill document in every workspace, and
in the agent's folder on text tasks, so a skill that says "run scripts/check.sh" works;
the folder is read from git at the commit, validated like a workspace, never edited.
Real git repositories, a real agent process that runs the script."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.inputs.config import load_config
from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo

SKILL = """---
name: notes
description: Checks the notes.
---

# Notes skill

Before you answer, run scripts/check.sh and report what it says.

<!-- gitsleep:learned:start -->
## Learned rules
- Keep it short.
<!-- gitsleep:learned:end -->
"""
# the package's script: proves it was installed beside the skill, and leaves a report in
# the workspace (a workspace task checks it; it is the agent's work, the script is not)
CHECK_SH = ('echo "PACKAGE-OK $(cat references/house-style.txt)"\n'
            'echo "checked" > REPORT.md\n')


def task(tid: str, split: str, *checks: dict, workspace: str | None = None) -> str:
    row: dict = {"id": tid, "split": split, "prompt": f"Check the notes ({tid}).",
                 "judge": {"kind": "rule", "checks": list(checks)}}
    if workspace:
        row["workspace"] = workspace
    return json.dumps(row) + "\n"


def config(package: str = "skills/notes") -> str:
    return ("version: 1\nbackend: command\noptimizer_backend: offline\n"
            f"agent: {{command: [{json.dumps(str(AGENT))}]}}\n"
            "skills:\n  - name: notes\n    skill: skills/notes/SKILL.md\n"
            f"    package: {package}\n    tasks: [evals/tasks.jsonl]\n")


AGENT = Path()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    global AGENT
    isolate_git(monkeypatch, tmp_path)
    AGENT = install("runner", tmp_path)
    work, _ = make_repo(tmp_path, {
        ".gitsleep.yml": config(),
        "skills/notes/SKILL.md": SKILL,
        "skills/notes/scripts/check.sh": CHECK_SH,
        "skills/notes/references/house-style.txt": "plain-words\n",
        "evals/fx/notes.md": "# Notes\n",
        "evals/tasks.jsonl": (
            task("v1", "val", {"op": "contains", "arg": "PACKAGE-OK plain-words"})
            + task("w1", "val", {"op": "contains", "arg": "scripts/check.sh: exit 0"},
                   {"op": "file_exists", "arg": "REPORT.md"},
                   {"op": "changed_files_max", "arg": 1}, workspace="evals/fx")
            + task("t1", "train", {"op": "contains", "arg": "PACKAGE-OK"})),
    })
    return work


def scores(out: str) -> dict[str, dict]:
    return {t["id"]: t for row in json.loads(out) for t in row["tasks"]}


def test_a_skill_that_runs_its_packaged_script_works_in_text_and_workspace_tasks(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    rows = scores(result.out)
    assert rows["v1"]["hard"] == 1.0, rows["v1"]  # a text task: installed in its folder
    # a workspace task: installed beside AGENTS.md; only the script's REPORT.md counts
    assert rows["w1"]["hard"] == 1.0, rows["w1"]
    assert not (repo / "evals/fx/REPORT.md").exists()


def test_without_the_package_the_script_is_missing(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_files(repo, {".gitsleep.yml": config().replace("    package: skills/notes\n", "")})
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    assert scores(result.out)["v1"]["hard"] == 0.0


def test_a_changed_package_rescores_and_an_uncommitted_change_is_not_used(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(first.out)["v1"]["hard"] == 1.0
    (repo / "skills/notes/references/house-style.txt").write_text("uncommitted\n")
    same = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(same.out)["v1"]["hard"] == 1.0  # read from git at HEAD
    git(repo, "commit", "-qam", "new house style")
    changed = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(changed.out)["v1"]["hard"] == 0.0  # a new tree: the agent ran again


@pytest.mark.parametrize(("package", "wanted"), [
    ("../outside", "must be a relative path inside the repository"),
    ("/etc", "must be a relative path inside the repository"),
    (".", "must be a folder below the repository root"),
    ("evals", "holds the task file evals/tasks.jsonl"),
])
def test_a_bad_package_name_is_one_line_naming_the_field(
        tmp_path: Path, package: str, wanted: str) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(config(package))
    with pytest.raises(UsageError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message and "package" in message and wanted in message, message


def test_a_missing_or_escaping_package_folder_stops_before_any_call(
        repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    commit_files(repo, {".gitsleep.yml": config("skills/missing")})
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    assert validate.code == 1 and "GS137" in validate.out + validate.err
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 2 and "package 'skills/missing' does not exist" in result.err
    (tmp_path / "secret").mkdir()
    os.symlink(tmp_path / "secret", repo / "skills/notes/linked")
    commit_files(repo, {".gitsleep.yml": config("skills/notes")})
    git(repo, "add", "skills/notes/linked")
    git(repo, "commit", "-qm", "link out")
    again = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert again.code == 2 and "leaves the workspace folder" in again.err
    assert "Traceback" not in again.err


def test_the_offline_simulator_installs_the_package_in_its_workspaces(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A check that runs the package's script passes only when the package was installed
    beside the skill document (AGENTS.md, at the workspace root, for the simulator)."""
    commit_files(repo, {
        ".gitsleep.yml": config().replace("backend: command\n", "backend: offline\n"),
        "evals/tasks.jsonl": task("w1", "val",
                                  {"op": "command", "arg": ["sh", "scripts/check.sh"]},
                                  workspace="evals/fx")
        + task("t1", "train", {"op": "no_refusal"}, workspace="evals/fx"),
    })
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    assert scores(result.out)["w1"]["hard"] == 1.0, result.out
    offline = config().replace("backend: command\n", "backend: offline\n")
    commit_files(repo, {".gitsleep.yml": offline.replace("    package: skills/notes\n", "")})
    without = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(without.out)["w1"]["hard"] == 0.0
    assert "scripts/check.sh" in scores(without.out)["w1"]["reason"]
