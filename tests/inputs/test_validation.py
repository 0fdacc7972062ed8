"""Repository validation without a model: the bundled example is clean, and each kind of
problem is found with its file, line and code."""

from __future__ import annotations

import shutil
from pathlib import Path

from gitsleep.inputs.config import load_config
from gitsleep.inputs.validation import (
    frontmatter_problems,
    secret_problems,
    split_lines,
    validate_repo,
)
from tests.support.gitrepo import EXAMPLES


def _example(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLES / "brief-writer", root)
    return root


def test_the_bundled_example_has_no_error(tmp_path: Path) -> None:
    root = _example(tmp_path)
    report = validate_repo(root, load_config(root / ".gitsleep.yml"), {})
    assert report.errors == 0 and report.skills == 1 and report.tasks > 0
    assert report.splits["brief-writer"]["val"] > 0


def test_a_broken_task_line_is_an_error_at_its_line(tmp_path: Path) -> None:
    root = _example(tmp_path)
    config = load_config(root / ".gitsleep.yml")
    task_file = root / config.skills[0].tasks[0].path
    with task_file.open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    broken_line = task_file.read_text(encoding="utf-8").count("\n")
    report = validate_repo(root, config, {})
    found = [p for p in report.problems if p.path == config.skills[0].tasks[0].path
             and p.is_error]
    assert found and found[0].line == broken_line


def test_frontmatter_that_does_not_parse_is_an_error() -> None:
    problems = frontmatter_problems("---\nname: [unclosed\n---\n# Skill\n", "SKILL.md")
    assert problems and problems[0].is_error and problems[0].path == "SKILL.md"
    assert frontmatter_problems("---\nname: ok\ndescription: fine\n---\n", "SKILL.md") == []


def test_a_task_file_holding_a_configured_secret_is_flagged(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"prompt": "use hunter2-team-token"}\n')
    (problem,) = secret_problems(path, "t.jsonl", {"TEAM_TOKEN": "hunter2-team-token"})
    assert problem.line == 1 and "TEAM_TOKEN" in problem.message
    assert "hunter2-team-token" not in problem.message


def test_split_sizes_warn_without_held_out_and_on_small_splits() -> None:
    lines = split_lines({"s": {"train": 4, "val": 2, "test": 0}})
    assert lines[0] == "s: 4 train, 2 val, 0 held-out (test)"
    assert "no held-out (test) tasks" in lines[1]
    assert lines[2].startswith("  warning: val (2 tasks): fewer than 5 tasks")
