"""RepoLock: one run per repository and skill, with stale locks from dead processes taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import git
import pytest

from gitsleep.base.errors import EXIT_LOCKED, LockHeld, UsageError
from gitsleep.git_forge.lock import RepoLock, lock_path, process_alive
from tests.support.gitrepo import git as run_git
from tests.support.gitrepo import isolate_git, make_repo
from tests.support.processes import kill_child


@pytest.fixture(autouse=True)
def _git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    work, _origin = make_repo(tmp_path)
    return git.Repo(work)


def _dead_pid() -> int:
    """The pid of a process that has already exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _write_lock(path: Path, **owner: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(owner), encoding="utf-8")


def test_lock_file_lives_in_the_common_dir_and_names_its_owner(repo: git.Repo) -> None:
    path = Path(repo.common_dir) / "gitsleep" / "locks" / "brief-writer.lock"
    with RepoLock(repo, "brief-writer") as lock:
        assert lock.path == path.resolve()
        owner = json.loads(path.read_text(encoding="utf-8"))
        assert owner["pid"] == os.getpid()
        assert owner["host"] == socket.gethostname()
        assert owner["skill"] == "brief-writer"
        assert owner["time"].endswith("+00:00")
    assert not path.exists()


def test_second_run_for_the_same_skill_fails_at_once(repo: git.Repo) -> None:
    with RepoLock(repo, "brief-writer"):
        started = time.monotonic()
        with pytest.raises(LockHeld) as caught, RepoLock(repo, "brief-writer"):
            pass
        assert time.monotonic() - started < 1
        assert caught.value.exit_code == EXIT_LOCKED
        assert f"pid {os.getpid()}" in str(caught.value)
        assert socket.gethostname() in str(caught.value)
        with RepoLock(repo, "other-skill"):  # another skill is independent
            pass


def test_lock_is_released_when_the_run_raises(repo: git.Repo) -> None:
    with pytest.raises(RuntimeError), RepoLock(repo, "brief-writer"):
        raise RuntimeError("epoch failed")
    assert not lock_path(repo, "brief-writer").exists()
    with RepoLock(repo, "brief-writer"):
        pass


def test_lock_held_by_a_live_process_on_this_host_is_respected(repo: git.Repo) -> None:
    path = lock_path(repo, "brief-writer")
    _write_lock(path, pid=os.getppid(), host=socket.gethostname(), time="t", skill="brief-writer")
    with pytest.raises(LockHeld, match=f"pid {os.getppid()}"), RepoLock(repo, "brief-writer"):
        pass
    assert path.exists()


def test_stale_lock_from_a_dead_process_is_taken_over(repo: git.Repo) -> None:
    path = lock_path(repo, "brief-writer")
    dead = _dead_pid()
    assert not process_alive(dead)
    _write_lock(path, pid=dead, host=socket.gethostname(), time="t", skill="brief-writer")
    with RepoLock(repo, "brief-writer"):
        assert json.loads(path.read_text(encoding="utf-8"))["pid"] == os.getpid()
    assert not path.exists()
    assert list(path.parent.iterdir()) == []  # no renamed leftovers


def test_corrupt_lock_file_is_taken_over(repo: git.Repo) -> None:
    path = lock_path(repo, "brief-writer")
    path.parent.mkdir(parents=True)
    path.write_text("", encoding="utf-8")  # a run killed between create and write
    with RepoLock(repo, "brief-writer"):
        assert json.loads(path.read_text(encoding="utf-8"))["pid"] == os.getpid()


def test_lock_left_with_our_own_pid_by_an_earlier_process_is_stale(repo: git.Repo) -> None:
    path = lock_path(repo, "brief-writer")
    _write_lock(path, pid=os.getpid(), host=socket.gethostname(), time="t", token="old")
    with RepoLock(repo, "brief-writer"):
        assert json.loads(path.read_text(encoding="utf-8"))["token"] != "old"


def test_lock_from_another_host_is_never_guessed_about(repo: git.Repo) -> None:
    path = lock_path(repo, "brief-writer")
    _write_lock(path, pid=_dead_pid(), host="build-agent-7", time="t", skill="brief-writer")
    with pytest.raises(LockHeld) as caught, RepoLock(repo, "brief-writer"):
        pass
    assert "build-agent-7" in str(caught.value)
    assert str(path) in str(caught.value)


def test_release_leaves_a_lock_that_is_no_longer_ours(repo: git.Repo) -> None:
    lock = RepoLock(repo, "brief-writer")
    lock.acquire()
    _write_lock(lock.path, pid=os.getppid(), host=socket.gethostname(), token="someone-else")
    lock.release()
    assert json.loads(lock.path.read_text(encoding="utf-8"))["token"] == "someone-else"


def test_wait_retries_then_gives_up(repo: git.Repo) -> None:
    with RepoLock(repo, "brief-writer"):
        started = time.monotonic()
        with pytest.raises(LockHeld), RepoLock(repo, "brief-writer", wait=0.2):
            pass
        assert time.monotonic() - started >= 0.2


def test_linked_worktrees_share_the_lock(repo: git.Repo, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    run_git(Path(repo.working_dir), "worktree", "add", "--quiet", "-b", "other", str(linked))
    with RepoLock(repo, "brief-writer"), pytest.raises(LockHeld):
        RepoLock(git.Repo(linked), "brief-writer").acquire()


def test_skill_names_that_escape_the_lock_dir_are_refused(repo: git.Repo) -> None:
    for bad in ("", "../x", "a/b", ".hidden"):
        with pytest.raises(UsageError):
            RepoLock(repo, bad)


def test_lock_of_a_process_killed_with_sigkill_is_taken_over(repo: git.Repo) -> None:
    holder_script = textwrap.dedent(
        """
        import sys, git
        from gitsleep.git_forge.lock import RepoLock
        lock = RepoLock(git.Repo(sys.argv[1]), "brief-writer")
        lock.acquire()
        print("locked", flush=True)
        sys.stdin.read()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", holder_script, repo.working_dir],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeld, match=f"pid {holder.pid}"), RepoLock(repo, "brief-writer"):
            pass
    finally:
        kill_child(holder)
    with RepoLock(repo, "brief-writer") as lock:
        assert json.loads(lock.path.read_text(encoding="utf-8"))["pid"] == os.getpid()
