"""`prepare` reads the documents every command needs, exactly as written, and refuses what
`validate` refuses (prepare had no test of its own; its frontmatter check is
`gitsleep.inputs.validation`'s)."""

from __future__ import annotations

import json
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


def test_a_claude_md_that_imports_agents_md_is_scored_with_the_imported_text(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The agent is shown CLAUDE.md with AGENTS.md's text where `@AGENTS.md` stands, so
    the rule AGENTS.md holds decides the score; the one-line file alone scores 0."""
    from tests.support.cli import run_cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "SKILL.md").write_text("# Briefs\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").write_text("@AGENTS.md\n", encoding="utf-8")
    (tmp_path / "AGENTS.md").write_text('# Agents\n\n- Always include "Sources:"\n',
                                        encoding="utf-8")
    task = '{"id": "%s", "prompt": "Brief me", "judge": {"kind": "rule", "checks": ' \
           '[{"op": "contains", "arg": "Sources:"}]}}\n'
    (tmp_path / "tasks.jsonl").write_text(task % "a" + task % "b", encoding="utf-8")
    (tmp_path / ".gitsleep.yml").write_text(
        "version: 1\nbackend: offline\nskills:\n  - name: brief-writer\n    skill: SKILL.md\n"
        "    memory: CLAUDE.md\n    tasks:\n      - path: tasks.jsonl\n        split: val\n",
        encoding="utf-8")
    result = run_cli(capsys, "--repo", str(tmp_path), "eval", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)[0]["score"] == 1.0, result.out


def test_imports_are_read_inside_the_repository_and_a_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("# Skill\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "CLAUDE.md").write_text("Read this:\n@docs/a.md\n", encoding="utf-8")
    (tmp_path / "docs" / "a.md").write_text("- rule a\n@b.md\n", encoding="utf-8")
    (tmp_path / "docs" / "b.md").write_text("- rule b\n", encoding="utf-8")
    documents = read_documents(tmp_path, skill("CLAUDE.md"))
    assert documents["memory"] == "Read this:\n@docs/a.md\n"  # what an edit goes to
    assert documents["memory@docs/a.md"] == "- rule a\n- rule b\n"
    (tmp_path / "docs" / "b.md").write_text("@../CLAUDE.md\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"CLAUDE.md: imports form a cycle \(CLAUDE.md -> "
                                         r"docs/a.md -> docs/b.md -> CLAUDE.md\)"):
        read_documents(tmp_path, skill("CLAUDE.md"))
