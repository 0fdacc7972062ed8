"""Task trees as a backend receives them: copied per call, never read from git here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gitsleep.base.errors import BackendError
from gitsleep.sandbox.trees import NoTrees, Tree, clone_file, copy_tree, escaping_link


def _pristine(tmp_path: Path) -> Tree:
    root = tmp_path / "pristine"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    os.symlink("src/app.py", root / "link.py")
    return Tree("abc123", root)


def test_a_copy_is_private_keeps_links_and_modes(tmp_path: Path) -> None:
    tree = _pristine(tmp_path)
    dest = tmp_path / "call"
    dest.mkdir()  # the agent's temporary folder exists already and is filled
    copy_tree(tree, dest)
    assert (dest / "src" / "app.py").read_text() == "print('hi')\n"
    assert os.readlink(dest / "link.py") == "src/app.py"
    assert os.access(dest / "run.sh", os.X_OK)
    (dest / "src" / "app.py").write_text("edited\n")  # an edit in place never reaches it
    assert (tree.path / "src" / "app.py").read_text() == "print('hi')\n"


def test_clone_file_copies_bytes_and_mode(tmp_path: Path) -> None:
    src = tmp_path / "a"
    src.write_bytes(b"\0bytes")
    src.chmod(0o700)
    dst = tmp_path / "b"
    assert clone_file(str(src), str(dst)) == str(dst)
    assert dst.read_bytes() == b"\0bytes" and (dst.stat().st_mode & 0o777) == 0o700
    assert dst.stat().st_ino != src.stat().st_ino  # never a hard link


def test_a_link_that_leaves_the_folder_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    os.symlink("../outside", folder / "out")
    os.symlink("inside.txt", folder / "in")
    os.symlink("loop", folder / "loop")
    assert escaping_link(folder, "in") is None
    assert "leaves the workspace folder" in (escaping_link(folder, "out") or "")
    assert "cannot be resolved" in (escaping_link(folder, "loop") or "")


def test_a_backend_handed_no_trees_refuses_a_workspace_plainly(tmp_path: Path) -> None:
    trees = NoTrees()
    with pytest.raises(BackendError, match="no task trees were handed to this backend"):
        trees.prepare_tree(tmp_path, "abc", "evals/fx")
    with pytest.raises(BackendError):
        trees.copy(Tree("abc", tmp_path), tmp_path / "x")
    trees.cleanup()  # nothing was read, nothing to delete
