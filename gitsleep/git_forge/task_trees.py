"""Task trees read from git: a workspace folder (or a skill's package) as committed.

A workspace task gives the agent a copy of its folder as it is at the base commit, never
as the working tree has it: the score must be reproducible from the commit alone. The
folder is read through git (`ls-tree` and `cat-file`, with gitsleep's safe git config),
once per run and tree, into a cache folder (`WorkspaceCache`); each call then gets its
own copy (copy-on-write clones where the file system has them, plain copies otherwise: a
hard link would let one call's edit reach the cache and every later call). A symlink that
leaves the folder, a submodule, or a path git should never hold is refused before
anything is written. `resolve` pins each task's folder to its tree at HEAD.

Raises UsageError for bad input (exit 2) and GitError when git itself fails (exit 4).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gitsleep.base.errors import GitError, UsageError
from gitsleep.core.models import Task
from gitsleep.core.sandbox import link_leaves, normal_folder
from gitsleep.core.tools import ToolSpec
from gitsleep.git_forge import tool_folders
from gitsleep.git_forge.gitrun import BlobReader, TreeEntry, git_run, last_line, tree_entries
from gitsleep.sandbox.trees import Tree, copy_tree, escaping_link

MAX_WORKSPACE_BYTES = 256 * 1024 * 1024  # a fixture, not a monorepo: refused above this


_MODES = {"100644": 0o644, "100755": 0o755}


_SYMLINK, _GITLINK = "120000", "160000"


def tree_id(repo: Path, commit: str, folder: str) -> str:
    """The git tree id of `folder` at `commit`: the workspace's digest (it changes exactly
    when a file of the folder does). A UsageError when the commit has no such folder."""
    name = normal_folder(folder)
    # `./`: relative to `repo`, which may be a folder of a larger repository (a bundled
    # example inside gitsleep's own checkout), not only its root
    spec = f"{commit}:./{name}"
    # one git call for the kind and the id: "<sha> tree <size>", or "<spec> missing"
    done = git_run(repo, "cat-file", "--batch-check", stdin=spec.encode() + b"\n")
    if done.status != 0:
        raise GitError(f"git cat-file failed: {last_line(done.err)}")
    found = done.out.decode("utf-8", "replace").split()
    if len(found) != 3 or found[1] != "tree":
        raise UsageError(f"workspace {name!r} is not a folder of the repository at commit "
                         f"{commit[:12]}: commit the folder, or fix the task's workspace")
    return found[0]


def _entries(repo: Path, tree: str, folder: str) -> list[TreeEntry]:
    entries = tree_entries(repo, tree)
    for entry in entries:
        parts = entry.path.split("/")
        if entry.mode == _GITLINK:
            raise UsageError(f"workspace {folder!r} holds a submodule ({entry.path}): a "
                             "workspace is copied from this repository alone; vendor the "
                             "files instead")
        if entry.path.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts):
            raise UsageError(f"workspace {folder!r} holds a path git should never hold "
                             f"({entry.path!r}); remove it from the folder")
    total = sum(e.size for e in entries)
    if total > MAX_WORKSPACE_BYTES:
        raise UsageError(f"workspace {folder!r} is {total / 1_048_576:.0f} MB; workspaces over "
                         f"{MAX_WORKSPACE_BYTES // 1_048_576} MB are refused: use a smaller "
                         "fixture")
    return entries


def materialise(repo: Path, commit: str, folder: str, dest: Path) -> str:
    """Write `folder` as it is at `commit` into `dest` (which must not exist yet); return
    its tree id. Nothing is written when the folder is refused."""
    name = normal_folder(folder)
    tree = tree_id(repo, commit, name)
    materialise_tree(repo, tree, name, dest)
    return tree


def materialise_tree(repo: Path, tree: str, name: str, dest: Path) -> None:
    """Write the git tree `tree` (the folder `name`, for messages) into `dest`, which must
    not exist yet; see `materialise`."""
    entries = _entries(repo, tree, name)
    blobs = BlobReader(repo)
    try:
        for entry in entries:  # every link is checked before any file is written
            if entry.mode == _SYMLINK:
                target = blobs.read(entry.sha).decode("utf-8", "surrogateescape")
                if link_leaves(entry.path, target):
                    raise UsageError(
                        f"workspace {name!r}: the symlink {entry.path} -> {target} leaves the "
                        "workspace folder; replace it with the file, or point it inside")
        staging = Path(tempfile.mkdtemp(prefix=".gitsleep-ws-", dir=dest.parent))
        try:
            for entry in entries:
                target_path = staging / entry.path
                target_path.parent.mkdir(parents=True, exist_ok=True)
                data = blobs.read(entry.sha)
                if entry.mode == _SYMLINK:
                    os.symlink(data.decode("utf-8", "surrogateescape"), target_path)
                    continue
                fd = os.open(target_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                             _MODES.get(entry.mode, 0o644))
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                os.chmod(target_path, _MODES.get(entry.mode, 0o644))  # umask aside
            # each link read alone stays inside; a chain (x -> y/.., y -> .) may not
            for entry in entries:
                if entry.mode == _SYMLINK:
                    problem = escaping_link(staging, entry.path)
                    if problem:
                        raise UsageError(f"workspace {name!r}: {problem}")
            os.rename(staging, dest)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    finally:
        blobs.close()


@dataclass
class WorkspaceCache:
    """Each (folder, tree) read from git once per run; every call gets its own copy (the
    `TreeSource` the run's setup hands the backends)."""

    root: Path | None = None
    reads: int = 0  # how many folders were read from git (the rest were cache hits)
    _trees: dict[str, Tree] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _root(self) -> Path:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="gitsleep-workspaces-"))
        self.root.mkdir(parents=True, exist_ok=True)
        return self.root

    def prepare(self, repo: Path, commit: str, folder: str) -> Tree:
        """The pristine copy of `folder` at `commit`, read from git on first use."""
        name = normal_folder(folder)
        return self.prepare_tree(repo, tree_id(repo, commit, name), name)

    def prepare_tree(self, repo: Path, tree: str, folder: str) -> Tree:
        """The pristine copy of the git tree `tree` (resolved on load, see `resolve`)."""
        with self._lock:
            hit = self._trees.get(tree)
            if hit is not None:
                return hit
            path = self._root() / tree
            if not path.is_dir():
                materialise_tree(repo, tree, folder, path)
                self.reads += 1
            found = Tree(tree, path)
            self._trees[tree] = found
            return found

    def copy(self, tree: Tree, dest: Path) -> Path:
        """A private copy of the tree at `dest` for one call (an existing empty folder is
        filled: the agent's temporary workspace)."""
        return copy_tree(tree, dest)

    def cleanup(self) -> None:
        """Delete every cached tree (at the end of the run)."""
        with self._lock:
            self._trees.clear()
            if self.root is not None:
                shutil.rmtree(self.root, ignore_errors=True)


def resolve(repo_root: Path, tasks: Sequence[Task], *, package: str | None = None,
            tools: Sequence[ToolSpec] = ()) -> list[Task]:
    """The tasks with each workspace, and the skill's `package` folder, pinned to its git
    tree at the checkout's HEAD (the base commit's worktree for consolidate, HEAD for
    eval): read from git, so a fixture edited but not committed is not what the agent
    gets. Each task gets its tools (its own, else the skill's `tools`), their folders read
    from git there too (`tool_folders.attach`). A UsageError (exit 2, before any call) when
    a folder is not committed there."""
    from dataclasses import replace

    if not any(t.workspace or t.tools for t in tasks) and package is None and not tools:
        return list(tasks)
    head = git_run(repo_root, "rev-parse", "--verify", "HEAD^{commit}")
    if head.status != 0:
        raise UsageError(f"{repo_root}: workspace tasks and tools read their folder from git, "
                         "and this checkout has no commit: commit the task files and folders")
    commit = head.out.decode().strip()
    tasks = tool_folders.attach(repo_root, commit, tasks, tools, tree_id)
    pinned: tuple[str, str, str] | None = None
    if package is not None:
        try:
            pinned = (package, tree_id(repo_root, commit, package), str(repo_root))
        except UsageError as exc:
            raise UsageError(f".gitsleep.yml: package: {exc}".replace(
                "the task's workspace", "the skill's package:")) from None
    trees: dict[str, str] = {}
    out = []
    for task in tasks:
        if pinned is not None:
            task = replace(task, package=pinned)
        if task.workspace:
            if task.workspace not in trees:
                try:
                    trees[task.workspace] = tree_id(repo_root, commit, task.workspace)
                except UsageError as exc:
                    where = f"{task.source}:{task.line}" if task.line else task.source
                    raise UsageError(f"{where}: task {task.id!r}: {exc}") from None
            task = replace(task, workspace_tree=trees[task.workspace],
                           workspace_repo=str(repo_root))
        out.append(task)
    return out
