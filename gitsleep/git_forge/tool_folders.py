"""The folders tools read, taken from git at the base commit and handed to the core.

A `search` or `read_file` tool answers from a folder of the repository as it is committed,
never as the working tree has it (a score must be reproducible from the commit alone,
like a workspace: `task_trees`). The folder's text files are read once per tree and put
into each `ToolSpec` (`files`), so the tools are answered in pure code. A symlink is never
served (its target may lie outside the folder), nor a file that is not UTF-8 text; a
folder over `MAX_FOLDER_BYTES` is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.core.models import Task
from gitsleep.core.sandbox import normal_folder
from gitsleep.core.tools import ToolSpec
from gitsleep.git_forge.gitrun import BlobReader, tree_entries

MAX_FOLDER_BYTES = 8 * 1024 * 1024  # a folder of notes, not a repository
_REGULAR = ("100644", "100755")


def read_folder(repo: Path, tree: str, folder: str) -> tuple[tuple[str, str], ...]:
    """(path in the folder, text) of every regular UTF-8 file of the git tree, sorted."""
    # links and submodules are never followed out of the folder
    entries = [e for e in tree_entries(repo, tree) if e.mode in _REGULAR]
    total = sum(e.size for e in entries)
    if total > MAX_FOLDER_BYTES:
        raise UsageError(f"tool folder {folder!r} is {total / 1_048_576:.1f} MB; tool folders "
                         f"over {MAX_FOLDER_BYTES // 1_048_576} MB are refused: point the "
                         "tool at a smaller folder")
    files: list[tuple[str, str]] = []
    blobs = BlobReader(repo)
    try:
        for entry in entries:
            try:
                files.append((entry.path, blobs.read(entry.sha).decode("utf-8")))
            except UnicodeDecodeError:
                continue  # a binary file: not text a search or a read can serve
    finally:
        blobs.close()
    return tuple(sorted(files))


def attach(repo_root: Path, commit: str, tasks: Sequence[Task],
           skill_tools: Sequence[ToolSpec], tree_of: Callable[[Path, str, str], str]
           ) -> list[Task]:
    """The tasks, each with its tools (its own, else the skill's) and each tool's folder
    read from git at `commit` (`tree_of` names a folder's tree there, or raises a
    UsageError, exit 2 before any call, when the commit has no such folder)."""
    read: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {}

    def loaded(tool: ToolSpec, where: str) -> ToolSpec:
        if tool.folder is None:
            return tool
        folder = normal_folder(tool.folder)
        if folder not in read:
            try:
                tree = tree_of(repo_root, commit, folder)
            except UsageError as exc:
                raise UsageError(f"{where}: tool {tool.name!r}: "
                                 f"{str(exc).replace('workspace', 'folder')}") from None
            read[folder] = (tree, read_folder(repo_root, tree, folder))
        tree, files = read[folder]
        return replace(tool, tree=tree, repo=str(repo_root), files=files)

    shared = tuple(loaded(t, ".gitsleep.yml") for t in skill_tools)
    out = []
    for task in tasks:
        where = f"{task.source}:{task.line}" if task.line else task.source
        own = tuple(loaded(t, where) for t in task.tools)
        out.append(replace(task, tools=own or shared))
    return out
