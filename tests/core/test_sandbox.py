"""Judging a workspace over a plain folder (`gitsleep.core.sandbox`): the workspace check
ops, what the agent changed, and a workspace answer's cache key. No git, no processes."""

from __future__ import annotations

import os
from pathlib import Path

from gitsleep.core import sandbox


def test_file_exists_and_file_contains_over_a_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "CHANGELOG.md").write_text("## 1.2\n- Add --watch flag\n")
    (ws / "docs/watch.md").write_text("x")
    assert sandbox.file_exists(ws, "docs/watch.md") == (True, "")
    ok, why = sandbox.file_exists(ws, "docs/missing.md")
    assert not ok and "docs/missing.md" in why and "does not exist" in why
    assert sandbox.file_contains(ws, "CHANGELOG.md", text="--WATCH")[0]
    assert sandbox.file_contains(ws, "CHANGELOG.md", regex=r"(?m)^- Add --watch")[0]
    ok, why = sandbox.file_contains(ws, "CHANGELOG.md", text="--serve")
    assert not ok and "--serve" in why
    ok, why = sandbox.file_contains(ws, "nope.md", text="x")
    assert not ok and "does not exist" in why


def test_file_checks_never_follow_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    os.symlink(secret, ws / "leak.txt")
    ok, why = sandbox.file_contains(ws, "leak.txt", text="hunter2")
    assert not ok and "leaves the workspace" in why
    assert not sandbox.file_exists(ws, "leak.txt")[0]


def test_changed_files_max_counts_the_agents_changes(tmp_path: Path) -> None:
    assert sandbox.changed_files_max(["a", "b"], 2) == (True, "")
    ok, why = sandbox.changed_files_max(["a", "b", "c"], 2)
    assert not ok and "3 file(s) changed" in why and "at most 2" in why and "a, b, c" in why


def test_workspace_key_names_the_tree_and_the_check_commands() -> None:
    base = sandbox.workspace_key("t1", [["pytest", "-q"]])
    assert base == sandbox.workspace_key("t1", [["pytest", "-q"]])
    assert base != sandbox.workspace_key("t2", [["pytest", "-q"]])
    assert base != sandbox.workspace_key("t1", [["pytest", "-x"]])


def test_a_huge_sparse_file_costs_the_snapshot_seconds_and_is_named(tmp_path: Path) -> None:
    """Before: a 1 TiB sparse file, written in no time by the agent, was hashed whole
    (still running after 90 s), outside the agent's timeout and every budget."""
    import time

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.md").write_text("x")
    with (ws / "big.bin").open("wb") as fh:
        fh.truncate(1 << 40)
    started = time.monotonic()
    first = sandbox.snapshot(ws)
    assert time.monotonic() - started < 5
    assert set(first) == {"notes.md", "big.bin"}
    with (ws / "big.bin").open("r+b") as fh:
        fh.truncate((1 << 40) + 1)
    assert sandbox.changed_files(first, sandbox.snapshot(ws)) == ["big.bin"]
    why = sandbox.oversized(ws)
    assert "big.bin" in why and "1099511627777 bytes" in why
    (ws / "big.bin").unlink()
    assert sandbox.oversized(ws) == ""


def test_a_workspace_past_its_total_bound_is_named(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "parts").mkdir(parents=True)
    for index in range(5):
        with (ws / "parts" / f"p{index}.bin").open("wb") as fh:
            fh.truncate(sandbox.SNAPSHOT_FILE_BYTES)
    why = sandbox.oversized(ws)
    assert "the workspace holds" in why and str(5 * sandbox.SNAPSHOT_FILE_BYTES) in why
