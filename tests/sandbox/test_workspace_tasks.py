"""Task files with a workspace and the workspace/command check ops: every bad input is one
line naming the file, the task and the fix (validate: exit 1; a run: exit 2), found before
any model call."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import Problem
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import check_skill_tasks, load_skill_tasks

TASKS = "evals/ws/tasks.jsonl"
PY = sys.executable
CONTAINS = {"op": "contains", "arg": "watch"}


def skill() -> SkillConfig:
    return SkillConfig.model_validate({"name": "cl", "skill": "SKILL.md",
                                       "tasks": [{"path": TASKS, "split": "val"}]})


def record(tid: str = "cl-01", *checks: dict, **extra: object) -> dict:
    data: dict = {"id": tid, "prompt": f"Add a changelog entry ({tid}).",
                  "judge": {"kind": "rule", "checks": list(checks) or [CONTAINS]}}
    data.update(extra)
    return data


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "evals/fx").mkdir(parents=True)
    (root / "evals/fx/CHANGELOG.md").write_text("# Changelog\n")
    script = root / "evals/fx/check.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    os.chmod(script, 0o755)
    return root


def check(repo: Path, *records: dict) -> tuple[list, list[Problem]]:
    path = repo / TASKS
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return check_skill_tasks(repo, skill())


def errors(problems: list[Problem]) -> list[str]:
    return [f"{p.code} {p.message}" for p in problems if p.is_error]


def only_error(problems: list[Problem], code: str) -> str:
    found = errors(problems)
    assert len(found) == 1, found
    assert found[0].startswith(code), found
    return found[0]


def test_a_workspace_task_and_the_four_ops_parse(repo: Path) -> None:
    tasks, problems = check(repo, record(
        "cl-01",
        {"op": "command", "arg": [PY, "-m", "pytest", "-q"]},
        {"op": "command", "arg": ["./check.sh"]},
        {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "--watch"}},
        {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "regex": "(?m)^- .*watch"}},
        {"op": "file_exists", "arg": "docs/watch.md"},
        {"op": "changed_files_max", "arg": 3},
        workspace="./evals/fx/"))
    assert errors(problems) == []
    (task,) = tasks
    assert task.workspace == "evals/fx"
    args = [c.arg for c in task.judge.checks]
    assert json.loads(str(args[0])) == [PY, "-m", "pytest", "-q"]
    assert json.loads(str(args[2])) == {"path": "CHANGELOG.md", "text": "--watch"}
    assert args[4:] == ["docs/watch.md", 3]


def test_a_text_task_may_use_command(repo: Path) -> None:
    tasks, problems = check(repo, record("t1", {"op": "command", "arg": [PY, "-c", "pass"]}))
    assert errors(problems) == [] and tasks[0].workspace is None


@pytest.mark.parametrize(("workspace", "words"), [
    ("evals/missing", "does not exist"),
    ("evals/fx/CHANGELOG.md", "is not a folder"),
    ("../elsewhere", "inside the repository"),
    ("/etc", "inside the repository"),
    (".", "not the root itself"),
    ("", "must name a folder"),
    (3, "must be a string"),
])
def test_a_bad_workspace_is_one_error_naming_task_and_fix(repo: Path, workspace: object,
                                                          words: str) -> None:
    _, problems = check(repo, record(workspace=workspace))
    message = only_error(problems, "GS13")
    assert "task 'cl-01'" in message and "workspace" in message and words in message


def test_a_workspace_through_a_symlink_out_of_the_repo_is_refused(repo: Path,
                                                                  tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, repo / "evals/linked")
    _, problems = check(repo, record(workspace="evals/linked"))
    assert "leaves the repository" in only_error(problems, "GS131")


def test_a_symlink_inside_the_workspace_leading_out_is_refused(repo: Path) -> None:
    os.symlink("../../../secret", repo / "evals/fx/escape")
    _, problems = check(repo, record(workspace="evals/fx"))
    message = only_error(problems, "GS131")
    assert "escape" in message and "leaves the workspace" in message


@pytest.mark.parametrize(("arg", "words"), [
    ("pytest -q", "must be a list of strings"),
    ([], "is empty"),
    ([PY, 3], "only strings"),
    (["gitsleep-no-such-program", "-q"], "not on PATH"),
    (["./check.sh"], "empty scratch folder"),  # no workspace: a relative path means nothing
])
def test_bad_command_args_are_one_line_each(repo: Path, arg: object, words: str) -> None:
    _, problems = check(repo, record("t1", {"op": "command", "arg": arg}))
    message = only_error(problems, "GS13")
    assert "task 't1'" in message and "command" in message and words in message


def test_a_workspace_program_must_exist_in_the_workspace(repo: Path) -> None:
    _, problems = check(repo, record("t1", {"op": "command", "arg": ["./missing.sh"]},
                                     workspace="evals/fx"))
    assert "does not exist" in only_error(problems, "GS133")


@pytest.mark.parametrize(("op", "arg", "words"), [
    ("file_exists", "", "relative path"),
    ("file_exists", "../out.md", "relative path"),
    ("file_exists", "/etc/passwd", "relative path"),
    ("file_exists", ["a.md"], "relative path"),
    ("file_contains", {"path": "CHANGELOG.md"}, '"text" or a "regex"'),
    ("file_contains", {"path": "a", "text": "x", "regex": "x"}, '"text" or a "regex"'),
    ("file_contains", {"path": "a", "text": ""}, "non-empty"),
    ("file_contains", {"path": "a", "regex": "("}, "invalid regex"),
    ("file_contains", {"path": "../a", "text": "x"}, "relative path"),
    ("file_contains", {"path": "a", "text": "x", "mode": "all"}, "unknown key"),
    ("file_contains", "CHANGELOG.md", '{"path"'),
    ("changed_files_max", -1, "non-negative whole number"),
    ("changed_files_max", "three", "non-negative whole number"),
    ("changed_files_max", 1.5, "non-negative whole number"),
    ("changed_files_max", True, "non-negative whole number"),
])
def test_bad_workspace_op_args(repo: Path, op: str, arg: object, words: str) -> None:
    _, problems = check(repo, record("t1", {"op": op, "arg": arg}, workspace="evals/fx"))
    message = only_error(problems, "GS1")
    assert "task 't1'" in message and op in message and words in message


@pytest.mark.parametrize("op, arg", [("file_exists", "a.md"), ("changed_files_max", 2),
                                     ("file_contains", {"path": "a", "text": "b"})])
def test_a_workspace_op_needs_a_workspace(repo: Path, op: str, arg: object) -> None:
    _, problems = check(repo, record("t1", {"op": op, "arg": arg}))
    message = only_error(problems, "GS135")
    assert op in message and '"workspace"' in message


def test_a_run_stops_on_the_first_with_one_line_exit_2(repo: Path) -> None:
    check(repo, record("cl-01", workspace="evals/nope"))
    with pytest.raises(UsageError) as caught:
        load_skill_tasks(repo, skill())
    text = str(caught.value)
    assert caught.value.exit_code == 2 and "\n" not in text
    assert text.startswith(f"{TASKS}:1: task 'cl-01': workspace")


# --- the command op end to end, on text tasks, with the offline backend ---------------------

SKILL_DOC = """---
name: writer
description: Writes short briefs.
---

# Writer

<!-- gitsleep:learned:start -->
## Learned rules
- Always include "Risks"
<!-- gitsleep:learned:end -->
"""
WANTS = ("import os, sys; text = open(os.environ['GITSLEEP_ANSWER']).read(); "
         "print('looked for', sys.argv[1]); sys.exit(0 if sys.argv[1] in text else 1)")


def cli_repo(tmp_path: Path, checks: dict[str, list[str]]) -> Path:
    root = tmp_path / "cli"
    (root / "skills/writer").mkdir(parents=True)
    (root / "evals").mkdir()
    (root / ".gitsleep.yml").write_text(
        "version: 1\nbackend: offline\nskills:\n  - name: writer\n"
        "    skill: skills/writer/SKILL.md\n    tasks:\n      - path: evals/t.jsonl\n"
        "        split: val\n")
    (root / "skills/writer/SKILL.md").write_text(SKILL_DOC)
    lines = [json.dumps({"id": tid, "prompt": f"Write a brief about {tid}.",
                         "judge": {"kind": "rule", "checks": [{"op": "command", "arg": argv}]}})
             for tid, argv in checks.items()]
    (root / "evals/t.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_eval_runs_command_checks_on_the_answers(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_cli

    repo = cli_repo(tmp_path, {"has-risks": [PY, "-c", WANTS, "Risks"],
                               "has-rollback": [PY, "-c", WANTS, "Rollback plan"]})
    result = run_cli(capsys, "--repo", str(repo), "eval", "--json")
    assert result.code == 0, result.err
    rows = {t["id"]: t for row in json.loads(result.out) for t in row["tasks"]}
    assert rows["has-risks"]["hard"] == 1.0
    assert rows["has-rollback"]["hard"] == 0.0
    reason = rows["has-rollback"]["reason"]
    assert "exited 1: looked for Rollback plan" in reason
    assert reason.startswith(f'failed: command ["{PY}", "-c", ')  # the argv, as written


def test_a_check_program_that_cannot_start_stops_the_run_exit_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_cli

    broken = tmp_path / "broken-check"
    broken.write_text("#!/nonexistent/interpreter\n")  # found and executable; cannot start
    os.chmod(broken, 0o755)
    repo = cli_repo(tmp_path, {"t1": [str(broken)]})
    result = run_cli(capsys, "--repo", str(repo), "eval")
    assert result.code == 3, result.err
    assert "check command" in result.err and "not found" in result.err


def test_validate_refuses_a_check_program_not_on_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_cli

    repo = cli_repo(tmp_path, {"t1": ["gitsleep-no-such-checker", "--strict"]})
    result = run_cli(capsys, "--repo", str(repo), "validate")
    assert result.code == 1
    assert ("evals/t.jsonl:1: GS133 task 't1': check 1: command program "
            "'gitsleep-no-such-checker' is not on PATH") in result.out
    assert run_cli(capsys, "--repo", str(repo), "eval").code == 2


def test_validate_lists_every_command_a_night_would_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support.cli import run_cli

    repo = cli_repo(tmp_path, {"has-risks": [PY, "-c", WANTS, "Risks"],
                               "plain": ["true"]})
    result = run_cli(capsys, "--repo", str(repo), "validate")
    assert result.code == 0, result.out + result.err
    assert "commands a night would run (2, from committed task files" in result.err
    assert f"writer: task 'has-risks': {PY} -c " in result.err
    assert "writer: task 'plain': true (in a scratch folder, the answer in $GITSLEEP_ANSWER)" in (
        result.err)


def test_a_changed_check_command_rescores_cached_answers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The response cache keys the model call; a check is judged afresh on every (cached)
    answer, so a changed command re-scores without a new model call."""
    from tests.support.cli import run_cli

    repo = cli_repo(tmp_path, {"t1": [PY, "-c", WANTS, "Risks"]})
    first = run_cli(capsys, "--repo", str(repo), "eval", "--json")
    assert json.loads(first.out)[0]["tasks"][0]["hard"] == 1.0
    assert any((repo / ".gitsleep/cache").rglob("*.json"))  # the answer is cached
    task_file = repo / "evals/t.jsonl"
    task_file.write_text(task_file.read_text().replace('"Risks"', '"Rollback"'))
    second = run_cli(capsys, "--repo", str(repo), "eval", "--json")
    assert json.loads(second.out)[0]["tasks"][0]["hard"] == 0.0


def test_the_offline_optimizer_proposes_nothing_for_a_failed_command() -> None:
    from gitsleep.backends.offline import directive_for

    assert directive_for("command", json.dumps(["pytest", "-q"])) is None


def test_a_workspace_answer_is_scored_from_its_outcomes_and_its_text() -> None:
    from gitsleep.core.judges import score_local
    from gitsleep.core.models import Check, Judge

    judge = Judge("rule", (Check("contains", "entry"),
                           Check("command", json.dumps(["false"])),
                           Check("file_exists", "docs/watch.md")))
    score = score_local(judge, "Added the entry.", {1: (True, ""), 2: (False, "docs/watch.md "
                                                                          "does not exist")})
    assert (score.hard, round(score.soft, 3)) == (0.0, 0.667)
    assert "docs/watch.md does not exist" in score.reason
    # an outcome the backend did not give is a failed check with a reason, never a run of
    # the command in a scratch folder and never a pass
    missing = score_local(judge, "Added the entry.", {})
    assert missing.soft == 1 / 3 and "not judged in the workspace" in missing.reason
