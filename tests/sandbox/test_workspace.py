"""Workspaces: a repository folder read at a commit, copied per call, compared after the
agent ran, and the workspace check ops judged over it. Real git repositories, no mocks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.core import sandbox
from gitsleep.git_forge import task_trees
from gitsleep.sandbox import workspace
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {
        "evals/fx/app.py": "def add(a, b):\n    return a + b\n",
        "evals/fx/tests/test_app.py": "from app import add\n",
        "evals/fx/run.sh": "#!/bin/sh\necho ok\n",
        "README.md": "# r\n",
    })
    os.chmod(work / "evals/fx/run.sh", 0o755)
    git(work, "add", "evals/fx/run.sh")
    git(work, "commit", "-q", "-m", "exec bit")
    return work


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD")


def test_materialise_reads_the_commit_not_the_working_tree(repo: Path, tmp_path: Path) -> None:
    commit = head(repo)
    (repo / "evals/fx/app.py").write_text("uncommitted edit\n")
    (repo / "evals/fx/untracked.txt").write_text("not in git\n")
    dest = tmp_path / "out"
    task_trees.materialise(repo, commit, "evals/fx", dest)
    assert (dest / "app.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert not (dest / "untracked.txt").exists()
    assert (dest / "tests/test_app.py").is_file()
    assert os.access(dest / "run.sh", os.X_OK)
    assert not os.access(dest / "app.py", os.X_OK)


def test_tree_id_is_gits_and_changes_with_the_fixture(repo: Path) -> None:
    first = task_trees.tree_id(repo, head(repo), "evals/fx")
    assert first == git(repo, "rev-parse", f"{head(repo)}:evals/fx")
    assert first == task_trees.tree_id(repo, head(repo), "./evals/fx/")
    commit_files(repo, {"README.md": "# other\n"})
    assert task_trees.tree_id(repo, head(repo), "evals/fx") == first  # outside the folder
    commit_files(repo, {"evals/fx/app.py": "changed\n"})
    assert task_trees.tree_id(repo, head(repo), "evals/fx") != first


def test_a_missing_folder_or_a_file_is_one_usage_line(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"evals/nope.*not a folder.*at commit"):
        task_trees.tree_id(repo, head(repo), "evals/nope")
    with pytest.raises(UsageError, match="not a folder"):
        task_trees.tree_id(repo, head(repo), "README.md")
    with pytest.raises(UsageError, match="inside the repository"):
        task_trees.tree_id(repo, head(repo), "../outside")


def test_a_symlink_leaving_the_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    os.symlink("../../README.md", repo / "evals/fx/escape")
    git(repo, "add", "evals/fx/escape")
    git(repo, "commit", "-q", "-m", "link out")
    with pytest.raises(UsageError, match=r"escape.*leaves the workspace"):
        task_trees.materialise(repo, head(repo), "evals/fx", tmp_path / "out")
    assert not (tmp_path / "out" / "escape").exists()


def test_a_symlink_inside_the_folder_is_kept(repo: Path, tmp_path: Path) -> None:
    os.symlink("app.py", repo / "evals/fx/alias.py")
    git(repo, "add", "evals/fx/alias.py")
    git(repo, "commit", "-q", "-m", "link in")
    dest = tmp_path / "out"
    task_trees.materialise(repo, head(repo), "evals/fx", dest)
    assert os.readlink(dest / "alias.py") == "app.py"


def test_the_cache_reads_each_tree_once_and_copies_per_call(repo: Path,
                                                             tmp_path: Path) -> None:
    cache = task_trees.WorkspaceCache(tmp_path / "cache")
    tree = cache.prepare(repo, head(repo), "evals/fx")
    again = cache.prepare(repo, head(repo), "evals/fx")
    assert tree == again and tree.tree == task_trees.tree_id(repo, head(repo), "evals/fx")
    assert cache.reads == 1
    one = cache.copy(tree, tmp_path / "call1")
    two = cache.copy(tree, tmp_path / "call2")
    (one / "app.py").write_text("the agent rewrote this\n")
    (one / "new.md").write_text("added\n")
    assert (two / "app.py").read_text().startswith("def add")  # calls never share files
    assert (tree.path / "app.py").read_text().startswith("def add")  # the cache neither
    cache.cleanup()
    assert not (tmp_path / "cache").exists()


def test_changed_files_lists_added_removed_and_edited(repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "ws"
    task_trees.materialise(repo, head(repo), "evals/fx", dest)
    before = sandbox.snapshot(dest)
    (dest / "app.py").write_text("edited\n")
    (dest / "tests/test_app.py").unlink()
    (dest / "docs").mkdir()
    (dest / "docs/watch.md").write_text("new\n")
    os.chmod(dest / "run.sh", 0o644)
    assert sandbox.changed_files(before, sandbox.snapshot(dest)) == [
        "app.py", "docs/watch.md", "run.sh", "tests/test_app.py"]
    assert sandbox.changed_files(before, before) == []


def test_a_chain_of_links_that_leaves_the_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    os.symlink(".", repo / "evals/fx/here")  # alone it stays inside
    os.symlink("here/..", repo / "evals/fx/up")  # read alone, inside; followed, the parent
    git(repo, "add", "evals/fx")
    git(repo, "commit", "-q", "-m", "link chain")
    with pytest.raises(UsageError, match=r"symlink up .*leaves the workspace"):
        task_trees.materialise(repo, head(repo), "evals/fx", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert "up" in (workspace.folder_problem_on_disk(repo, "evals/fx") or "")


def test_judge_checks_runs_every_workspace_check_over_the_folder(tmp_path: Path) -> None:
    import json
    import sys

    from gitsleep.core.models import Check

    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "CHANGELOG.md").write_text("- Add --watch\n")
    answer = tmp_path / "answer.txt"
    answer.write_text("Added the entry.")
    probe = ("import os, sys; ok = os.path.exists('CHANGELOG.md') and "
             "'entry' in open(os.environ['GITSLEEP_ANSWER']).read(); sys.exit(0 if ok else 4)")
    checks = (Check("contains", "entry"),  # a text op: judged on the answer, not here
              Check("command", json.dumps([sys.executable, "-c", probe])),
              Check("command", json.dumps([sys.executable, "-c", "raise SystemExit(5)"])),
              Check("file_exists", "docs/watch.md"),
              Check("file_contains", json.dumps({"path": "CHANGELOG.md", "text": "--watch"})),
              Check("file_contains", json.dumps({"path": "CHANGELOG.md", "regex": "^- Fix"})),
              Check("changed_files_max", 1))
    outcomes = workspace.judge_checks(ws, checks, ["CHANGELOG.md", "docs/x.md"],
                                      answer_file=answer)
    assert sorted(outcomes) == [1, 2, 3, 4, 5, 6]
    assert outcomes[1] == (True, "")
    assert outcomes[2][0] is False and outcomes[2][1].startswith("exited 5")
    assert outcomes[3][0] is False and "does not exist" in outcomes[3][1]
    assert outcomes[4] == (True, "")
    assert outcomes[5][0] is False
    assert outcomes[6][0] is False and "2 file(s) changed" in outcomes[6][1]


def test_the_cache_keeps_a_workspace_answers_check_outcomes(tmp_path: Path) -> None:
    """A cached answer of a workspace task must be judged as its workspace was: the
    outcomes travel with the answer (the workspace itself is gone)."""
    from gitsleep.core.cache import ResponseCache
    from gitsleep.core.models import Answer

    outcomes = ((1, True, ""), (3, False, "exited 1: 2 failed"))
    ResponseCache(tmp_path).put("ab" * 32, Answer(text="done", checks=outcomes))
    ResponseCache(tmp_path).put("cd" * 32, Answer(text="plain"))
    assert ResponseCache(tmp_path).get("ab" * 32).checks == outcomes
    assert ResponseCache(tmp_path).get("cd" * 32).checks is None
    broken = next((tmp_path / "ab").glob("*.json"))
    broken.write_text(broken.read_text().replace('"exited 1', '3, "x'), encoding="utf-8")
    assert ResponseCache(tmp_path).get("ab" * 32) is None  # unreadable: a miss, never a guess


def test_a_file_past_the_snapshot_bound_fails_every_workspace_check(tmp_path: Path) -> None:
    import json
    import sys

    from gitsleep.core.models import Check

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "CHANGELOG.md").write_text("- Add --watch\n")
    with (ws / "huge.log").open("wb") as fh:
        fh.truncate(1 << 40)
    ran = tmp_path / "ran"
    checks = (Check("file_exists", "CHANGELOG.md"),
              Check("command", json.dumps([sys.executable, "-c",
                                           f"open({str(ran)!r}, 'w').close()"])))
    outcomes = workspace.judge_checks(ws, checks, ["huge.log"])
    assert sorted(outcomes) == [0, 1]
    for ok, why in outcomes.values():
        assert not ok and "huge.log" in why
    assert not ran.exists(), "a check over an unbounded workspace is not run"
