"""Workspace tasks through an agent CLI that edits files (`backend: command`): the folder is
read at the commit, copied per call with the skill installed, judged after the agent ran,
deleted; cached answers keep their outcomes. A real git repository and real processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo
from tests.support.skills import CHANGELOG_SKILL

PY = sys.executable
SKILL = CHANGELOG_SKILL
NOT_UNCOMMITTED = "import sys; sys.exit('UNCOMMITTED' in open('CHANGELOG.md').read())"


def task(tid: str, split: str, *checks: dict) -> str:
    return json.dumps({"id": tid, "split": split, "workspace": "evals/fx",
                       "prompt": f"Add a changelog entry for the new --watch flag ({tid}).",
                       "judge": {"kind": "rule", "checks": list(checks)}}) + "\n"


CHECKS = (
    {"op": "command", "arg": [PY, "-c", NOT_UNCOMMITTED]},
    {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "--watch flag"}},
    {"op": "file_exists", "arg": "docs/watch.md"},
    {"op": "changed_files_max", "arg": 2},
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    agent = install("editor", tmp_path)
    work, _ = make_repo(tmp_path, {
        ".gitsleep.yml": ("version: 1\nbackend: command\noptimizer_backend: offline\n"
                          f"agent: {{command: [{json.dumps(str(agent))}]}}\n"
                          "skills:\n  - name: changelog\n    skill: SKILL.md\n"
                          "    tasks: [evals/tasks.jsonl]\n"),
        "SKILL.md": SKILL.format(rules="- Keep entries short."),
        "evals/fx/CHANGELOG.md": "# Changelog\n",
        "evals/tasks.jsonl": task("v1", "val", *CHECKS) + task("t1", "train", *CHECKS),
    })
    return work


def scores(result_out: str) -> dict[str, dict]:
    return {t["id"]: t for row in json.loads(result_out) for t in row["tasks"]}


def test_eval_judges_what_the_agent_did_in_the_workspace(
        repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("FAKE_AGENT_RUNS", str(runs))
    (repo / "evals/fx/CHANGELOG.md").write_text("# Changelog\nUNCOMMITTED\n")  # not read
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    v1 = scores(result.out)["v1"]
    # command (read at the commit) and file_contains and the bound pass; no docs page
    assert (v1["hard"], v1["soft"]) == (0.0, 0.75)
    assert "file_exists 'docs/watch.md'" in v1["reason"]
    assert "does not exist in the workspace" in v1["reason"]
    assert (repo / "evals/fx/CHANGELOG.md").read_text() == "# Changelog\nUNCOMMITTED\n"
    assert not (repo / "evals/fx/docs").exists()  # the agent worked on a copy
    assert runs.read_text().count("run") == 1

    again = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(again.out)["v1"] == v1  # the cached answer kept its outcomes
    assert runs.read_text().count("run") == 1  # and the agent was not run again


def test_a_skill_that_asks_for_docs_passes_and_a_changed_fixture_rescores(
        repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv("FAKE_AGENT_RUNS", str(runs))
    commit_files(repo, {"SKILL.md": SKILL.format(rules="- Write a docs page for each flag.")})
    first = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert scores(first.out)["v1"]["hard"] == 1.0, first.out
    commit_files(repo, {"evals/fx/CHANGELOG.md": "# Changelog\nUNCOMMITTED no more\n"})
    second = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    v1 = scores(second.out)["v1"]
    assert (v1["hard"], v1["soft"]) == (0.0, 0.75)  # the committed fixture fails the command
    assert v1["reason"].startswith(f'failed: command ["{PY}", "-c", ') and "exited 1" in (
        v1["reason"])
    assert runs.read_text().count("run") == 2  # a new tree id: a new call, not the cache


def test_an_uncommitted_workspace_folder_stops_before_any_call(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "evals/new").mkdir()
    (repo / "evals/new/a.txt").write_text("x\n")
    (repo / "evals/tasks.jsonl").write_text(
        (repo / "evals/tasks.jsonl").read_text().replace("evals/fx", "evals/new"))
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 2
    assert "workspace 'evals/new' is not a folder of the repository at commit" in result.err
    assert "commit the folder" in result.err


def test_a_backend_that_cannot_work_in_a_folder_is_refused_before_any_call(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # a model API answers with text only (the offline simulator works in folders since h12)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    config = repo / ".gitsleep.yml"
    config.write_text(config.read_text().replace(
        "backend: command\n", "backend: openai\nmodel: m\nbase_url: http://127.0.0.1:9/v1\n", 1))
    git(repo, "commit", "-qam", "openai")
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    assert validate.code == 1 and "GS136" in validate.out
    assert "backend: command" in validate.out
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 2 and "Traceback" not in result.err
    assert ("evals/tasks.jsonl:1: task 'v1' has a workspace, and the openai backend answers "
            "with text only: workspace tasks need `backend: command`") in result.err
    assert not (repo / ".gitsleep/cache").exists() or not any(
        (repo / ".gitsleep/cache").rglob("*.json"))  # no call was made


def test_a_dry_run_night_over_workspace_tasks_finishes(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The epoch shows the optimizer the failed workspace checks (the offline optimizer has
    no directive for them, so it proposes nothing) and ends without an error."""
    result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err


def test_every_workspace_copy_and_the_run_cache_are_deleted(
        repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    seen = tmp_path / "seen.txt"
    # the check records the folder it ran in: a workspace copy under the scratch folder
    record = f"import os; open({str(seen)!r}, 'a').write(os.getcwd() + '\\n')"
    (repo / "evals/tasks.jsonl").write_text(
        task("v1", "val", {"op": "command", "arg": [PY, "-c", record]},
             {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "--watch"}})
        + task("v2", "val", {"op": "changed_files_max", "arg": 0}))
    git(repo, "commit", "-qam", "tasks")
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    rows = scores(result.out)
    assert rows["v1"]["hard"] == 1.0
    assert rows["v2"]["reason"] == (
        "failed: changed_files_max 0 [1 file(s) changed, at most 0 allowed: CHANGELOG.md]")
    ran_in = Path(seen.read_text().strip())
    assert ran_in.is_relative_to(scratch) and not ran_in.exists()
    assert list(scratch.iterdir()) == []  # workspaces, the tree cache, answer files: gone


def test_a_workspace_check_that_cannot_start_stops_the_run_exit_3(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A check program found at validation but unable to start (a bad interpreter line)
    stops the night like a broken agent: never a zero for the skill."""
    (repo / "evals/fx/check.sh").write_text("#!/nonexistent/interpreter\n")
    (repo / "evals/fx/check.sh").chmod(0o755)
    (repo / "evals/tasks.jsonl").write_text(
        task("v1", "val", {"op": "command", "arg": ["./check.sh"]}))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "check script")
    assert run_cli(capsys, "--repo", str(repo), "validate").code == 0
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 3, result.err
    assert "check command './check.sh' not found" in result.err
