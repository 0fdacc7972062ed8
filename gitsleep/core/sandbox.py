"""Judging a task's workspace after the agent ran, over a plain folder: pure of git, the
forge and processes (the folder comes from `gitsleep.git_forge.task_trees`, the agent and
the `command` checks run in `gitsleep.sandbox.workspace` and the backends).

Which files the agent changed (`snapshot` before and after), the workspace check ops
(`file_exists`, `file_contains`, `changed_files_max`, each reading only inside the folder:
a link out of it is a failed check, never a read), what a cached workspace answer depends
on (`workspace_key`), and whether a workspace folder is named soundly (`folder_problem`).
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsleep.base.errors import UsageError
from gitsleep.core.check_ops import OPS
from gitsleep.core.patterns import search_untrusted

if TYPE_CHECKING:
    from gitsleep.core.models import Task

MAX_READ_BYTES = 4 * 1024 * 1024  # what `file_contains` reads of one file
# Caches tools write when the agent or a check runs them: never counted as changes.
IGNORED_PARTS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})

Snapshot = dict[str, str]  # workspace path -> digest of its kind, mode and content
# What a snapshot reads: an agent can write a 1 TiB sparse file in no time, and hashing it
# would take hours outside every timeout. A file past the bound is told apart by its size
# and time instead, and the task's workspace checks fail naming it (`oversized`).
SNAPSHOT_FILE_BYTES = 64 * 1024 * 1024
SNAPSHOT_TOTAL_BYTES = 4 * SNAPSHOT_FILE_BYTES


def folder_problem(folder: str) -> str | None:
    """Why `folder` cannot name a workspace folder of the repository, or None."""
    text = folder.replace("\\", "/").strip()
    if not text or "\0" in text:
        return "must name a folder of the repository (e.g. evals/changelog/fixture)"
    normal = posixpath.normpath(text)
    if text.startswith("/") or normal == ".." or normal.startswith("../"):
        return "must be a relative path inside the repository (no '..', not absolute)"
    if normal == ".":
        return ("must be a folder below the repository root, not the root itself "
                "(the agent would see every task file and its checks)")
    if ".git" in normal.split("/"):
        return "must not be inside .git"
    return None


def normal_folder(folder: str) -> str:
    """`./evals/fx/` -> `evals/fx`; a UsageError when it cannot name a workspace folder."""
    problem = folder_problem(folder)
    if problem:
        raise UsageError(f"workspace {folder!r} {problem}")
    return posixpath.normpath(folder.replace("\\", "/").strip())


def link_leaves(path: str, target: str) -> bool:
    """Whether a symlink at workspace path `path` pointing at `target` leads out of the
    workspace (absolute, or through enough '..')."""
    if not target or target.startswith("/") or "\0" in target:
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined == ".." or joined.startswith("../")


def _entries(folder: Path) -> Iterable[tuple[str, Path, os.stat_result]]:
    """Every file and link under `folder` (links not followed), tool caches
    (`IGNORED_PARTS`) left out: (workspace path, path, lstat)."""
    for top, dirs, files in os.walk(folder, followlinks=False):
        linked = [d for d in dirs if (Path(top) / d).is_symlink()]  # a link, not a folder
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_PARTS and d not in linked)
        for name in [*files, *linked]:
            path = Path(top) / name
            yield path.relative_to(folder).as_posix(), path, path.lstat()


def snapshot(folder: Path) -> Snapshot:
    """Every file and link under `folder` (links not followed) with a digest of its kind,
    executable bit and content; tool caches (`IGNORED_PARTS`) left out. At most
    `SNAPSHOT_FILE_BYTES` of a file and `SNAPSHOT_TOTAL_BYTES` in all are read: a file past
    either is digested by its size and modification time."""
    found: Snapshot = {}
    budget = SNAPSHOT_TOTAL_BYTES
    for relative, path, info in _entries(folder):
        digest = hashlib.sha256()
        if stat.S_ISLNK(info.st_mode):
            digest.update(b"link\0" + os.readlink(path).encode("utf-8", "surrogateescape"))
        elif stat.S_ISREG(info.st_mode):
            digest.update(b"file\0x" if info.st_mode & 0o111 else b"file\0-")
            if info.st_size > min(SNAPSHOT_FILE_BYTES, budget):
                digest.update(f"unread\0{info.st_size}\0{info.st_mtime_ns}".encode())
            else:
                budget -= info.st_size
                with path.open("rb") as fh:
                    while chunk := fh.read(1 << 20):
                        digest.update(chunk)
        else:
            digest.update(f"other\0{stat.S_IFMT(info.st_mode)}".encode())
        found[relative] = digest.hexdigest()
    return found


def oversized(folder: Path) -> str:
    """Why the workspace is past what a snapshot reads (a file over `SNAPSHOT_FILE_BYTES`,
    or more than `SNAPSHOT_TOTAL_BYTES` in all), naming the file; '' when it is not.
    Sizes only: nothing is read."""
    total = 0
    for relative, _, info in _entries(folder):
        if not stat.S_ISREG(info.st_mode):
            continue
        if info.st_size > SNAPSHOT_FILE_BYTES:
            return (f"{relative} holds {info.st_size} bytes, over the {SNAPSHOT_FILE_BYTES} "
                    "a workspace file may hold; the workspace was not judged")
        total += info.st_size
    if total > SNAPSHOT_TOTAL_BYTES:
        return (f"the workspace holds {total} bytes, over the {SNAPSHOT_TOTAL_BYTES} a "
                "workspace may hold; it was not judged")
    return ""


def changed_files(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths added, removed or changed between two snapshots, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _inside(folder: Path, relative: str) -> tuple[Path | None, str]:
    """The path under the workspace, or None and why it may not be read."""
    path = folder / relative
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return None, f"{relative} cannot be resolved (a symlink loop)"
    if not resolved.is_relative_to(folder.resolve()):
        return None, f"{relative} leaves the workspace (a symlink or '..'); not read"
    return resolved, ""


def file_exists(folder: Path, relative: str) -> tuple[bool, str]:
    """Whether the workspace holds the file (links followed only inside it)."""
    path, why = _inside(folder, relative)
    if path is None:
        return False, why
    if path.is_file():
        return True, ""
    if path.is_dir():
        return False, f"{relative} is a folder, not a file"
    return False, f"{relative} does not exist in the workspace"


def file_contains(folder: Path, relative: str, *, text: str | None = None,
                  regex: str | None = None) -> tuple[bool, str]:
    """Whether the file holds `text` (case-insensitive, like `contains`) or matches
    `regex` (searched like the `regex` op, time-bounded); its first 4 MB are read."""
    exists, why = file_exists(folder, relative)
    if not exists:
        return False, why
    path, _ = _inside(folder, relative)
    assert path is not None
    with path.open("rb") as fh:
        content = fh.read(MAX_READ_BYTES).decode("utf-8", "replace")
    if regex is not None:
        ok, problem = search_untrusted(regex, content)
        return ok, problem or ("" if ok else f"{relative} does not match `{regex}`")
    wanted = text or ""
    if wanted.casefold() in content.casefold():
        return True, ""
    return False, f"{relative} does not contain {wanted!r}"


def changed_files_max(changed: Sequence[str], bound: int, shown: int = 10) -> tuple[bool, str]:
    """Whether the agent changed at most `bound` files; the reason lists what it changed."""
    if len(changed) <= bound:
        return True, ""
    names = ", ".join(changed[:shown]) + (", ..." if len(changed) > shown else "")
    return False, f"{len(changed)} file(s) changed, at most {bound} allowed: {names}"


def workspace_key(tree: str | None, checks: Iterable[Sequence[Any]]) -> str:
    """What a cached answer of a workspace task depends on besides the call: the folder's
    tree id and every check judged in the workspace (the answer carries their outcomes by
    index, so a cached outcome is only valid for the same fixture and the same checks)."""
    payload = json.dumps([tree, [list(c) for c in checks]], ensure_ascii=False,
                         sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def judged_in_workspace(op: str) -> bool:
    """Whether the backend judges `op` in the workspace after the agent ran (a workspace
    op or a program), rather than the judge from the answer text."""
    spec = OPS.get(op)  # type: ignore[call-overload]
    return spec is not None and (spec.reads == "workspace" or spec.runs_program)


def backend_problem(task: Task, backend: str, *, located: bool = True) -> str:
    """Why `backend` cannot answer a workspace task: one line naming the task (and, when
    `located`, its file and line) and the fix."""
    where = (f"{task.source}:{task.line}: " if task.line else f"{task.source}: ") if located else ""
    return (f"{where}task {task.id!r} has a workspace, and the {backend} backend answers "
            "with text only: workspace tasks need `backend: command` (an agent CLI that works "
            "in the folder) or `backend: offline` (the simulator); set one, or remove "
            '"workspace" and the workspace checks')


def call_context(task: Task) -> dict[str, Any]:
    """What an answer call carries for the backend that runs the agent: for a workspace
    task where to read the folder and the task's checks (judged there after the agent
    ran); for a skill with a package, where to read it; empty otherwise."""
    found: dict[str, Any] = {}
    if task.package is not None:  # the skill's package, installed beside the skill
        folder, tree, repo = task.package
        found["package"] = {"folder": folder, "tree": tree, "repo": repo}
    if not task.workspace or not task.workspace_tree:
        return found
    return {**found, "workspace": {
        "folder": task.workspace, "tree": task.workspace_tree, "repo": task.workspace_repo,
        "checks": [[c.op, c.arg] for c in task.judge.checks]}}
