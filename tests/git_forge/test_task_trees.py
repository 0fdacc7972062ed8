"""Task trees read from git: each folder pinned to its tree at HEAD, read once per run,
and handed to the backends as a `TreeSource`. Real repositories, no mocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.core.models import Judge, Task
from gitsleep.git_forge.task_trees import WorkspaceCache, resolve, tree_id
from gitsleep.sandbox.trees import TreeSource
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo


def _task(tid: str, workspace: str | None) -> Task:
    return Task(id=tid, prompt="Add the entry.", split="val", judge=Judge("rule"),
                workspace=workspace, source="evals/t.jsonl", line=1)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {"fx/CHANGELOG.md": "# Changelog\n", "fx/run.sh": "exit 0\n"})
    return work


def test_resolve_pins_each_workspace_to_its_tree_at_head(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    first, second, text = resolve(repo, [_task("a", "fx"), _task("b", "fx/"), _task("c", None)])
    assert first.workspace_tree == second.workspace_tree == tree_id(repo, head, "fx")
    assert first.workspace_repo == str(repo) and text.workspace_tree is None
    (repo / "fx" / "CHANGELOG.md").write_text("edited, not committed\n")
    (again,) = resolve(repo, [_task("a", "fx")])
    assert again.workspace_tree == first.workspace_tree  # the commit, not the working tree


def test_an_uncommitted_folder_is_refused_naming_the_task(repo: Path) -> None:
    (repo / "new").mkdir()
    (repo / "new" / "f.txt").write_text("x\n")
    with pytest.raises(UsageError, match=r"evals/t.jsonl:1: task 'n': workspace 'new'"):
        resolve(repo, [_task("n", "new")])


def test_the_cache_reads_a_tree_once_and_is_a_tree_source(repo: Path, tmp_path: Path) -> None:
    cache: TreeSource = WorkspaceCache(tmp_path / "cache")
    head = git(repo, "rev-parse", "HEAD")
    tree = cache.prepare_tree(repo, tree_id(repo, head, "fx"), "fx")
    assert cache.prepare_tree(repo, tree.tree, "fx") == tree
    assert isinstance(cache, WorkspaceCache) and cache.reads == 1
    copy = cache.copy(tree, tmp_path / "call")
    assert (copy / "CHANGELOG.md").read_text() == "# Changelog\n"
    commit_files(repo, {"fx/CHANGELOG.md": "# Changelog\n\n## 1.1\n"}, "a new entry")
    newer = cache.prepare_tree(repo, tree_id(repo, git(repo, "rev-parse", "HEAD"), "fx"), "fx")
    assert newer.tree != tree.tree and cache.reads == 2
    cache.cleanup()
    assert not (tmp_path / "cache").exists()
