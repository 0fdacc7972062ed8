"""Following a document's imports as Claude Code does: inside the repository, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.inputs import agent_view
from gitsleep.inputs.agent_view import import_view


def test_imports_stop_after_five_hops_and_say_so(tmp_path: Path) -> None:
    for i in range(7):
        (tmp_path / f"f{i}.md").write_text(f"rule {i}\n@f{i + 1}.md\n", encoding="utf-8")
    view = import_view(tmp_path, "CLAUDE.md", "@f0.md\n", "memory")
    shown = view.texts["memory@f0.md"]
    assert "rule 4" in shown and "rule 5" not in shown and "@f5.md" in shown
    assert [(s.where, s.target) for s in view.skipped] == [("f4.md", "f5.md")]


def test_files_outside_the_repository_and_home_files_are_left_as_written(
        tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "outside.md").write_text("secret rules\n", encoding="utf-8")
    view = import_view(repo, "CLAUDE.md", "@../outside.md\n@~/.claude/me.md\n", "memory")
    assert view.texts == {}
    assert [s.target for s in view.skipped] == ["../outside.md", "~/.claude/me.md"]


def test_a_view_too_large_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_view, "MAX_VIEW_BYTES", 10)
    (tmp_path / "AGENTS.md").write_text("x" * 11, encoding="utf-8")
    with pytest.raises(UsageError, match="CLAUDE.md: the files it imports come to more than"):
        import_view(tmp_path, "CLAUDE.md", "@AGENTS.md\n", "memory")
