"""`prepare` reads the documents every command needs, exactly as written, and refuses what
`validate` refuses (issue 39: prepare had no test of its own; its frontmatter check is
`gitsleep.inputs.validation`'s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.flows.prepare import read_document, read_documents
from gitsleep.inputs.config import SkillConfig


def skill(memory: str | None = None) -> SkillConfig:
    return SkillConfig.model_validate({"name": "brief-writer", "skill": "SKILL.md",
                                       "memory": memory, "tasks": [{"path": "tasks.jsonl"}]})


def test_a_document_is_read_byte_for_byte(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_bytes(b"# Skill\r\n\r\nWrite plainly.\r\n")
    assert read_document(tmp_path, "SKILL.md", field_name="skill document") == \
        "# Skill\r\n\r\nWrite plainly.\r\n"


def test_a_missing_or_outside_document_is_one_line_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="SKILL.md: skill document does not exist"):
        read_document(tmp_path, "SKILL.md", field_name="skill document")
    (tmp_path / "repo").mkdir()
    (tmp_path / "outside.md").write_text("x\n", encoding="utf-8")
    with pytest.raises(UsageError, match="points outside the repository"):
        read_document(tmp_path / "repo", "../outside.md", field_name="skill document")


def test_frontmatter_validate_refuses_stops_and_its_warnings_are_said(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: [unclosed\n---\n# Skill\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"SKILL.md:\d+: skill document: frontmatter"):
        read_documents(tmp_path, skill())
    (tmp_path / "SKILL.md").write_text("---\nname: Not A Valid Name\n---\n# Skill\n",
                                       encoding="utf-8")
    said: list[str] = []
    documents = read_documents(tmp_path, skill(), said.append)
    assert documents["memory"] is None and (documents["skill"] or "").endswith("# Skill\n")
    assert said and all(": warning: " in line and "(validate: GS" in line for line in said)
