"""Removing a folder an agent or a check worked in, whatever it left there.

An agent runs as gitsleep's user and may take the write permission off its folders (or
every permission off one): `shutil.rmtree(ignore_errors=True)` then leaves the folder in
TMPDIR for good, since GitHub's runners are not root. The owner may always change a mode,
so a folder that cannot be emptied is given its owner's permissions back and the removal
tried again. Links are removed, never followed or changed through.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

OWNER_ALL = stat.S_IRWXU


def _owner_may_change(path: str) -> None:
    """Give a folder (not a link) its owner's read, write and search bits back."""
    with contextlib.suppress(OSError):
        if not os.path.islink(path):
            os.chmod(path, os.lstat(path).st_mode | OWNER_ALL)


def _open_up(root: str) -> None:
    """Every folder under `root`, top down, opened to its owner (links not followed)."""
    _owner_may_change(root)
    for top, dirs, _ in os.walk(root, followlinks=False):
        for name in dirs:
            _owner_may_change(os.path.join(top, name))


def remove_tree(path: Path | str) -> None:
    """Delete `path` and everything under it, read-only folders included; a path that is
    already gone is nothing to do. What still cannot be removed (another user's file) is
    left, never raised: cleaning up must not turn a result into an error."""
    root = os.fspath(path)
    if not os.path.lexists(root):
        return
    failed: list[str] = []

    def note(_func: Callable[..., Any], failed_path: str, _exc: Any) -> None:
        failed.append(failed_path)

    if sys.version_info >= (3, 12):  # `onerror` is deprecated there
        shutil.rmtree(root, onexc=note)
    else:
        shutil.rmtree(root, onerror=note)
    if failed and os.path.lexists(root):
        _open_up(root)
        shutil.rmtree(root, ignore_errors=True)
