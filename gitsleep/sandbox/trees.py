"""Task trees as the sandbox receives them: a folder read once, copied for each call.

The run's setup reads each workspace folder (and a skill's package) from git once and
hands the backends a `TreeSource`; a backend asks it for a task's pristine copy and
copies that for one call. Nothing here reads git: the source that does is built above
(`gitsleep.git_forge.task_trees.WorkspaceCache`), so a backend never learns how a tree
was read, only where its pristine copy lies.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gitsleep.base.errors import BackendError


@dataclass(frozen=True)
class Tree:
    """A workspace folder read once: its git tree id and where the pristine copy lives."""

    tree: str
    path: Path


class TreeSource(Protocol):
    """Where a backend gets a task's folder: read once per run, a private copy per call."""

    def prepare_tree(self, repo: Path, tree: str, folder: str) -> Tree:
        """The pristine copy of the tree `tree` (the folder `folder` of `repo`)."""
        ...

    def copy(self, tree: Tree, dest: Path) -> Path:
        """A private copy of `tree` at `dest`, for one call."""
        ...

    def cleanup(self) -> None:
        """Delete every pristine copy (at the end of the run)."""
        ...


def escaping_link(folder: Path, relative: str) -> str | None:
    """Why the link at `relative` leads out of `folder` once every link on its way is
    followed, or None."""
    path = folder / relative
    try:
        inside = path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return f"the symlink {relative} cannot be resolved (a loop); replace it with the file"
    if inside:
        return None
    return (f"the symlink {relative} -> {os.readlink(path)} leaves the workspace folder; "
            "replace it with the file, or point it inside")


_FICLONE = 0x40049409  # Linux ioctl: share the blocks, copy on write


def clone_file(src: str, dst: str) -> str:
    """Copy one file, as a copy-on-write clone where the file system can (btrfs, XFS),
    else byte for byte; the mode goes along. Never a hard link: an agent's edit in place
    would change the cache and every later call's workspace."""
    try:
        import fcntl

        with open(src, "rb") as fin, open(dst, "wb") as fout:
            fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
        shutil.copymode(src, dst)
        return dst
    except (ImportError, OSError):
        return str(shutil.copy2(src, dst))


def copy_tree(tree: Tree, dest: Path) -> Path:
    """A private copy of the tree at `dest` for one call (an existing empty folder is
    filled: the agent's temporary workspace)."""
    shutil.copytree(tree.path, dest, symlinks=True, copy_function=clone_file,
                    dirs_exist_ok=True)
    return dest


class NoTrees:
    """The tree source of a backend built for calls without a workspace (a judge, an
    optimizer, a test): a workspace call to it is a setup error, said plainly."""

    def prepare_tree(self, repo: Path, tree: str, folder: str) -> Tree:
        raise BackendError(f"no task trees were handed to this backend, so the workspace "
                           f"{folder!r} cannot be copied: build it with the run's tree source")

    def copy(self, tree: Tree, dest: Path) -> Path:
        raise BackendError("no task trees were handed to this backend")

    def cleanup(self) -> None:
        """Nothing was read."""
