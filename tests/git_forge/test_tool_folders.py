"""A tool's folder is read from git at the commit, as data the core's tools answer from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.core.models import Check, Judge, Task
from gitsleep.core.tools import ToolSpec
from gitsleep.git_forge import task_trees
from tests.support.gitrepo import git, isolate_git, make_repo

JUDGE = Judge(kind="rule", checks=(Check("tool_called", "search"),))


def test_the_folder_is_read_at_head_never_from_the_working_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    repo, _ = make_repo(tmp_path, {"brain/topics/a.md": "# A\ncommitted\n",
                                   "brain/topics/img.bin": b"\xff\xfe\x00binary",
                                   "secret.txt": "outside the folder\n"})
    os.symlink("../../secret.txt", repo / "brain/topics/link.md")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a link out")
    (repo / "brain/topics/a.md").write_text("# A\nedited, not committed\n")
    (repo / "brain/topics/new.md").write_text("untracked\n")
    tool = ToolSpec("search", "search", "brain/topics")
    [task] = task_trees.resolve(repo, [Task("t", "p", "val", JUDGE)], tools=[tool])
    [given] = task.tools
    assert given.files == (("a.md", "# A\ncommitted\n"),)  # no link, no binary, no edit
    assert given.tree == git(repo, "rev-parse", "HEAD:brain/topics")


def test_a_task_keeps_its_own_tools_and_others_get_the_skills(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    repo, _ = make_repo(tmp_path, {"notes/a.md": "a\n", "other/b.md": "b\n"})
    own = Task("own", "p", "val", JUDGE, tools=(ToolSpec("search", "search", "other"),))
    plain = Task("plain", "p", "val", JUDGE)
    out = task_trees.resolve(repo, [own, plain], tools=[ToolSpec("search", "search", "notes")])
    assert [t.tools[0].files for t in out] == [(("b.md", "b\n"),), (("a.md", "a\n"),)]


def test_an_uncommitted_folder_is_refused_before_any_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    repo, _ = make_repo(tmp_path, {"README.md": "x\n"})
    (repo / "notes").mkdir()
    (repo / "notes/a.md").write_text("a\n")
    with pytest.raises(UsageError, match=r"\.gitsleep\.yml: tool 'search': folder 'notes' is "
                                         "not a folder of the repository"):
        task_trees.resolve(repo, [Task("t", "p", "val", JUDGE)],
                           tools=[ToolSpec("search", "search", "notes")])
