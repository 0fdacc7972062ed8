"""Harvested tasks carry `review: pending` until a person removes the mark.

Task loading accepts the `review` and `source` fields; `validate` warns about pending tasks
and says how to accept them; the commands that spend money leave them out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import check_skill_tasks, load_skill_tasks, parse_task_file

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Risks"}]}
SOURCE = {"tool": "claude", "session": "3f1c", "time": "2026-11-20T10:00:00Z"}


def record(tid: str, split: str, **extra: object) -> dict:
    return {"id": tid, "prompt": f"Write a brief about {tid}.", "split": split, "judge": RULE,
            **extra}


def write(tmp_path: Path, *records: dict) -> SkillConfig:
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return SkillConfig.model_validate({"name": "brief-writer", "skill": "SKILL.md",
                                       "tasks": [{"path": "t.jsonl"}]})


def test_review_and_source_are_known_fields(tmp_path: Path) -> None:
    write(tmp_path, record("a", "train", review="pending", source=SOURCE),
          record("b", "val", review="accepted", source=SOURCE))
    tasks, problems = parse_task_file(tmp_path / "t.jsonl", "t.jsonl")
    assert [(t.id, t.review) for t in tasks] == [("a", "pending"), ("b", "accepted")]
    assert [p.code for p in problems] == ["GS119"]  # no unknown-key warning
    warning = problems[0]
    assert not warning.is_error and warning.line == 1
    assert "1 task(s) marked review: pending" in warning.message
    assert "'a'" in warning.message and 'remove "review": "pending"' in warning.message


def test_bad_review_value_and_source_shape_are_errors(tmp_path: Path) -> None:
    write(tmp_path, record("a", "train", review="maybe"), record("b", "val", source="claude"))
    tasks, problems = parse_task_file(tmp_path / "t.jsonl", "t.jsonl")
    assert tasks == []
    assert [(p.code, p.line) for p in problems] == [("GS119", 1), ("GS118", 2)]
    assert all(p.is_error for p in problems)


def test_loading_for_a_run_leaves_pending_tasks_out_and_says_how_many(tmp_path: Path) -> None:
    skill = write(tmp_path, record("a", "train", review="pending"), record("b", "train"),
                  record("c", "val"))
    said: list[str] = []
    tasks = load_skill_tasks(tmp_path, skill, say=said.append)
    assert [t.id for t in tasks] == ["b", "c"]
    assert said == ["brief-writer: 1 task(s) marked review: pending are left out; "
                    "remove the mark to use them (gitsleep validate lists them)"]
    # validation still sees every task
    every, _ = check_skill_tasks(tmp_path, skill)
    assert [t.id for t in every] == ["a", "b", "c"]


def test_only_pending_val_tasks_is_a_usage_error(tmp_path: Path) -> None:
    skill = write(tmp_path, record("a", "train"), record("v", "val", review="pending"))
    with pytest.raises(UsageError, match="no val tasks once the 1 task"):
        load_skill_tasks(tmp_path, skill)
