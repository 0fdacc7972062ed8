"""The catalog: every skill the harness would load, by its frontmatter name and description."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.inputs.catalog import build, name_of, trigger_tasks
from gitsleep.inputs.config import Config


def skill_md(name: str, description: str | None) -> str:
    line = f"description: {description}\n" if description is not None else ""
    return f"---\nname: {name}\n{line}---\n# {name}\n"


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")


def config(*skills: tuple[str, str]) -> Config:
    return Config.model_validate({"version": 1, "backend": "offline", "skills": [
        {"name": name, "skill": path, "tasks": [f"evals/{name}.jsonl"]} for name, path in skills]})


def test_config_skills_and_harness_folders_each_listed_once(tmp_path: Path) -> None:
    write(tmp_path, ".claude/skills/notes/SKILL.md", skill_md("notes", "Release notes."))
    write(tmp_path, ".claude/skills/draft/SKILL.md", skill_md("draft", None))  # not listable
    write(tmp_path, ".agents/skills/sql/SKILL.md", skill_md("sql", "Fixes  SQL\n queries."))
    write(tmp_path, ".agents/skills/again/SKILL.md", skill_md("notes", "A second notes."))
    cfg = config(("notes", ".claude/skills/notes/SKILL.md"))
    entries = build(tmp_path, cfg)
    assert [(e.name, e.description, e.path) for e in entries] == [
        ("notes", "Release notes.", ".claude/skills/notes/SKILL.md"),
        ("sql", "Fixes SQL queries.", ".agents/skills/sql/SKILL.md")]
    assert name_of(entries, cfg.skills[0]) == "notes"


def test_a_skill_with_no_description_cannot_be_tuned(tmp_path: Path) -> None:
    write(tmp_path, "SKILL.md", "# no frontmatter\n")
    cfg = config(("notes", "SKILL.md"))
    with pytest.raises(UsageError, match="SKILL.md: the skill has no readable `description:`"):
        name_of(build(tmp_path, cfg), cfg.skills[0])


def test_a_siblings_should_trigger_queries_come_in_as_near_misses(tmp_path: Path) -> None:
    write(tmp_path, "a/SKILL.md", skill_md("notes", "Release notes."))
    write(tmp_path, "b/SKILL.md", skill_md("sql-helper", "SQL."))
    write(tmp_path, "evals/notes.jsonl",
          '{"id": "n1", "query": "notes for v2", "should_trigger": true, "split": "val"}\n')
    write(tmp_path, "evals/sql.jsonl",
          '{"id": "s1", "query": "fix my join", "should_trigger": true, "split": "val"}\n'
          '{"id": "s2", "query": "a poem", "should_trigger": false, "split": "val"}\n')
    cfg = config(("notes", "a/SKILL.md"), ("sql", "b/SKILL.md"))
    tasks = trigger_tasks(tmp_path, cfg, cfg.skills[0], build(tmp_path, cfg))
    assert [(t.id, t.prompt, t.trigger) for t in tasks] == [
        ("n1", "notes for v2", tasks[0].trigger),
        ("sql-helper/s1", "fix my join", tasks[1].trigger)]
    assert tasks[1].trigger is not None and tasks[1].trigger.expect == "sql-helper"
    assert not tasks[1].trigger.should_trigger
