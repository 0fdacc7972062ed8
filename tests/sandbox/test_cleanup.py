"""Workspaces are always removed, even one the agent made read-only (real folders)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gitsleep.sandbox.cleanup import remove_tree


def _read_only_workspace(root: Path) -> Path:
    """What an agent can leave: a read-only file in a read-only folder, a folder with no
    permissions at all, and a link out (never followed, never chmodded)."""
    outside = root / "outside.txt"
    outside.write_text("keep me")
    outside.chmod(0o444)
    work = root / "gitsleep-agent-x"
    (work / "src" / "deep").mkdir(parents=True)
    (work / "src" / "deep" / "file.txt").write_text("x")
    (work / "src" / "deep" / "file.txt").chmod(0o444)
    (work / "src" / "link").symlink_to(outside)
    (work / "locked").mkdir()
    (work / "locked" / "inner.txt").write_text("y")
    (work / "locked").chmod(0)
    (work / "src" / "deep").chmod(0o500)
    (work / "src").chmod(0o500)
    work.chmod(0o500)
    return work


def as_a_user(code: str) -> str:
    """Run `code` in a Python whose file permissions bind it, as on GitHub's runners (not
    root): as root, through setpriv without the capabilities that bypass them."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: permissions cannot bind")
        prefix = [setpriv, "--bounding-set", "-dac_override,-dac_read_search,-fowner"]
    done = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip()


def test_a_read_only_workspace_is_removed(tmp_path: Path) -> None:
    """Before: `rmtree(ignore_errors=True)` left it behind in TMPDIR."""
    work = _read_only_workspace(tmp_path)
    said = as_a_user(
        "import shutil, sys; from pathlib import Path\n"
        "from gitsleep.sandbox.cleanup import remove_tree\n"
        f"work = Path({str(work)!r})\n"
        "shutil.rmtree(work, ignore_errors=True)\n"
        "print('left' if work.exists() else 'gone')\n"
        "remove_tree(work)\n"
        "print('left' if work.exists() else 'gone')\n")
    assert said.split() == ["left", "gone"], said
    assert not work.exists()
    outside = tmp_path / "outside.txt"
    assert outside.read_text() == "keep me"
    assert stat.S_IMODE(outside.stat().st_mode) == 0o444, "a link's target is not touched"


def test_a_missing_folder_is_nothing_to_remove(tmp_path: Path) -> None:
    remove_tree(tmp_path / "gone")
    assert not (tmp_path / "gone").exists()
