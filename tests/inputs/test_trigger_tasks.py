"""Trigger tasks in the usual task files: `{id, query, should_trigger, expect?}`."""

from __future__ import annotations

import json
from pathlib import Path

from gitsleep.core.models import Trigger
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import (
    check_skill_tasks,
    load_skill_tasks,
    load_trigger_tasks,
    parse_task_file,
)

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Risks"}]}


def write(path: Path, *records: object) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def skill() -> SkillConfig:
    return SkillConfig.model_validate({"name": "brief-writer", "skill": "SKILL.md",
                                       "tasks": [{"path": "tasks.jsonl", "split": "auto"}]})


def test_a_trigger_task_is_read_beside_body_tasks_and_kept_apart(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("# Skill\n", encoding="utf-8")
    write(tmp_path / "tasks.jsonl",
          {"id": "b1", "prompt": "Brief me", "judge": RULE, "split": "val"},
          {"id": "t1", "query": "write a brief on Q3", "should_trigger": True, "split": "val"},
          {"id": "t2", "query": "fix this SQL", "should_trigger": False,
           "expect": "sql-helper", "split": "val"})
    triggers = load_trigger_tasks(tmp_path, skill())
    assert [(t.id, t.prompt, t.split, t.trigger) for t in triggers] == [
        ("t1", "write a brief on Q3", "val", Trigger(True)),
        ("t2", "fix this SQL", "val", Trigger(False, "sql-helper"))]
    assert [t.id for t in load_skill_tasks(tmp_path, skill())] == ["b1"]


def test_an_empty_query_is_warned_and_left_out_and_a_bad_flag_is_an_error(
        tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    write(path, {"id": "e", "query": "  ", "should_trigger": True},
          {"id": "f", "query": "q", "should_trigger": "yes"},
          {"id": "g", "query": "q2", "should_trigger": True, "expect": "other"})
    tasks, problems = parse_task_file(path, "tasks.jsonl")
    assert tasks == []
    assert [(p.line, p.code, p.severity) for p in problems] == [
        (1, "GS172", "warning"), (2, "GS170", "error"), (3, "GS171", "error")]
    assert "'query' is missing or empty, so the task is left out" in problems[0].message


def test_a_split_with_no_should_not_query_is_warned(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("# Skill\n", encoding="utf-8")
    write(tmp_path / "tasks.jsonl",
          {"id": "b1", "prompt": "Brief me", "judge": RULE, "split": "val"},
          {"id": "t1", "query": "write a brief", "should_trigger": True, "split": "val"},
          {"id": "t2", "query": "brief on sales", "should_trigger": True, "split": "train"},
          {"id": "t3", "query": "a poem please", "should_trigger": False, "split": "train"})
    _, problems = check_skill_tasks(tmp_path, skill())
    shown = [(p.code, p.message) for p in problems if p.code == "GS173"]
    assert shown == [("GS173", "trigger tasks in val hold no should-not query "
                      "(should_trigger: false): a description that takes every request "
                      "would score best; add near misses")]


def test_validate_warns_when_a_near_miss_expects_no_skill_of_the_catalog(tmp_path: Path) -> None:
    from gitsleep.inputs.config import Config
    from gitsleep.inputs.validation import expect_problems

    (tmp_path / "SKILL.md").write_text("---\nname: brief-writer\ndescription: Briefs.\n---\n",
                                       encoding="utf-8")
    write(tmp_path / "tasks.jsonl",
          {"id": "t1", "query": "fix SQL", "should_trigger": False, "expect": "sql-helpr"},
          {"id": "t2", "query": "a brief", "should_trigger": False, "expect": "brief-writer"})
    config = Config.model_validate({"version": 1, "backend": "offline", "skills": [
        {"name": "brief-writer", "skill": "SKILL.md", "tasks": ["tasks.jsonl"]}]})
    tasks, _ = check_skill_tasks(tmp_path, config.skills[0])
    assert [(p.line, p.code, p.message) for p in expect_problems(tmp_path, config, tasks)] == [
        (1, "GS174", "trigger task 't1' expects 'sql-helpr', which is no skill of the catalog "
         "(brief-writer): fix the name, or list that skill in .gitsleep.yml or under "
         ".claude/skills/")]
