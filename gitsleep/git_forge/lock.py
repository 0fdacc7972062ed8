"""One gitsleep run per repository and skill, enforced with a lock file.

The lock lives under the git *common* dir (`<common>/gitsleep/locks/<skill>.lock`), so every
worktree of a repository sees the same lock and nothing appears in `git status`. It is created
with `O_CREAT | O_EXCL` (atomic on local filesystems) and holds JSON naming its owner (pid,
host, time, a random token). A second run fails at once with `LockHeld` (exit 5) naming the
owner. A lock left by a dead process on this host (killed, power loss) is stale and taken over;
a lock from another host is never guessed about: the message says which file to delete.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any

import git

from gitsleep.base.errors import LockHeld, UsageError

# Lock files this process holds, so a lock carrying our own pid but not listed here (left by
# an earlier process that had the same pid, e.g. after a container restart) counts as stale.
_HELD_HERE: set[Path] = set()


def process_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (conservatively True if unsure)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, it is just not ours
        return True
    except OSError:
        return True
    return True


def owner_record(**extra: Any) -> dict[str, Any]:
    """Who we are, for lock files and worktree markers: pid, host, UTC time, plus `extra`."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def owner_is_dead(owner: dict[str, Any] | None) -> bool:
    """True when the recorded owner is certainly gone: same host and its pid no longer runs.

    An unreadable record (a run killed between creating and writing the file) counts as dead.
    """
    if not isinstance(owner, dict):
        return True
    if owner.get("host") != socket.gethostname():
        return False
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return True
    return not process_alive(pid)


def gitsleep_dir(repo: git.Repo) -> Path:
    """`<git common dir>/gitsleep`: where gitsleep keeps locks and temporary worktrees."""
    return Path(repo.common_dir).resolve() / "gitsleep"


def lock_path(repo: git.Repo, skill: str) -> Path:
    """The lock file for one skill of one repository."""
    if not skill or "/" in skill or "\\" in skill or skill.startswith("."):
        raise UsageError(f"cannot lock skill {skill!r}: a skill name is [a-z0-9-]+")
    return gitsleep_dir(repo) / "locks" / f"{skill}.lock"


def _read(path: Path) -> tuple[str, dict[str, Any] | None] | None:
    """The lock file's text and parsed owner, or None when it no longer exists."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        owner = json.loads(text)
    except ValueError:
        owner = None
    return text, owner if isinstance(owner, dict) else None


def _remove_if_unchanged(path: Path, stale_text: str) -> None:
    """Remove a stale lock, unless another run replaced it since we read it.

    Renaming is atomic, so only one contender moves the file away; if what we moved is not
    the stale lock we judged, it is put back (link fails if yet another run got there first).
    """
    grave = path.with_name(f"{path.name}.stale-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, grave)
    except FileNotFoundError:
        return
    try:
        if grave.read_text(encoding="utf-8") != stale_text:
            with contextlib.suppress(OSError):  # yet another run took the path: it wins
                os.link(grave, path)
    finally:
        grave.unlink(missing_ok=True)


def _describe(owner: dict[str, Any] | None) -> str:
    if owner is None:
        return "an unknown owner"
    return (
        f"pid {owner.get('pid')} on host {owner.get('host')} "
        f"(since {owner.get('time')}, skill {owner.get('skill')})"
    )


class RepoLock:
    """Context manager: hold the lock for (repository, skill) for the length of a run.

    `with RepoLock(repo, "brief-writer"):` raises `LockHeld` at once when another live run
    holds it (or after `wait` seconds of retrying, for short internal critical sections),
    takes over a stale lock, and always releases on exit (also on exceptions).
    Release only removes the file if it still carries our token.
    """

    def __init__(self, repo: git.Repo, skill: str, *, wait: float = 0.0) -> None:
        self.skill = skill
        self.path = lock_path(repo, skill)
        self.wait = wait  # seconds to keep trying before LockHeld; 0 = fail at once
        self._token = uuid.uuid4().hex
        self._held = False

    def acquire(self) -> None:
        """Take the lock or raise `LockHeld`; see the class docstring."""
        deadline = time.monotonic() + self.wait
        while True:
            try:
                self._try_acquire()
                return
            except LockHeld:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)

    def _try_acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = json.dumps(owner_record(skill=self.skill, token=self._token)) + "\n"
        for _attempt in range(5):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                found = _read(self.path)
                if found is None:  # released between our open and our read
                    continue
                text, owner = found
                if self._is_stale(owner):
                    _remove_if_unchanged(self.path, text)
                    continue
                raise LockHeld(
                    f"another gitsleep run holds the lock for skill {self.skill!r}: "
                    f"{_describe(owner)}; wait for it to finish, or if it is gone delete "
                    f"{self.path}"
                ) from None
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(record)
            self._held = True
            _HELD_HERE.add(self.path)
            return
        raise LockHeld(f"could not take the lock {self.path}: it keeps changing hands")

    def _is_stale(self, owner: dict[str, Any] | None) -> bool:
        if (
            owner is not None
            and owner.get("pid") == os.getpid()
            and owner.get("host") == socket.gethostname()
        ):
            return self.path not in _HELD_HERE
        return owner_is_dead(owner)

    def release(self) -> None:
        """Remove the lock file if it is still ours. Safe to call twice."""
        if not self._held:
            return
        self._held = False
        _HELD_HERE.discard(self.path)
        found = _read(self.path)
        if found is not None and found[1] is not None and found[1].get("token") == self._token:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> RepoLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
