"""`publishing` owns the order open -> base -> remote -> lock -> claim:
the `Claimed` it yields is the way on to the worktree, the commit and the push."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import LockHeld, UsageError
from gitsleep.git_forge import publish_sequence as sequence
from gitsleep.git_forge.lock import RepoLock
from tests.support.gitrepo import git, isolate_git, make_repo


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    return make_repo(tmp_path, {"notes.md": "one\n"})[0]


def test_a_claimed_branch_is_committed_in_a_worktree_and_pushed(work: Path) -> None:
    head = git(work, "rev-parse", "HEAD")
    with sequence.publishing(work, "gitsleep/x", "x") as claimed:
        assert (claimed.base.sha, claimed.remote, claimed.base_name) == (head, "origin", "main")
        with claimed.worktree(claimed.base.sha) as tree:
            (Path(tree) / "notes.md").write_text("two\n", encoding="utf-8")
            sha = claimed.commit(Path(tree), ["notes.md"], "two", sequence.JsonNote({"k": 1}))
        claimed.push()
    assert git(work, "rev-parse", "origin/gitsleep/x") == sha
    assert '"commit": "' + sha in git(work, "notes", "--ref=refs/notes/gitsleep", "show", sha)
    assert git(work, "status", "--porcelain") == ""  # the checkout is untouched


def test_the_lock_is_held_while_claimed(work: Path) -> None:
    with sequence.publishing(work, "gitsleep/x", "x") as claimed, pytest.raises(LockHeld), \
            RepoLock(claimed.repo, "x", wait=0):
        pass


def test_the_checkout_is_refused_before_the_claim(work: Path) -> None:
    with pytest.raises(UsageError, match="checked out"), \
            sequence.publishing(work, "main", "x", refuse_checkout="main is checked out"):
        pass
    assert git(work, "branch", "--show-current") == "main"


def test_files_at_reads_a_ref_in_a_detached_tree(work: Path) -> None:
    with sequence.files_at(work, "main", "x", "dry-run/x") as tree:
        assert (tree / "notes.md").read_text(encoding="utf-8") == "one\n"
    assert not tree.exists()
