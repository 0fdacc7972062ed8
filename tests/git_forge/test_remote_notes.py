"""A teammate's fresh clone: `status` and `log` read the epochs' notes from the remote.

`git clone` fetches branches, not notes, so before this a fresh clone's `status` said
"cannot prove it made the branch tip" and `log` had no superseded epochs until someone
fetched `refs/notes/gitsleep` by hand. They now fetch the remote's notes read-only, into
`refs/notes/remotes/<remote>/gitsleep`: this clone's own notes ref is never written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.test_log import BRANCH, two_epochs, work  # noqa: F401 - `work` is a fixture
from tests.support.cli import run_cli
from tests.support.gitrepo import git


def test_a_fresh_clone_sees_every_epoch_and_proves_the_branch_tip(
        work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    first, second = two_epochs(work, capsys)
    origin = git(work, "remote", "get-url", "origin")
    remote_refs = git(work, "ls-remote", "origin")
    assert "refs/notes/gitsleep" in remote_refs

    clone = tmp_path / "teammate"
    git(tmp_path, "clone", "--quiet", origin, str(clone))
    assert git(clone, "for-each-ref", "refs/notes/") == ""  # a clone brings no notes

    status = run_cli(capsys, "--repo", str(clone), "status", "--json")
    assert status.code == 0, status.err
    row = json.loads(status.out)[0]
    assert "note" not in row, row  # not "cannot prove it made the branch tip"
    assert row["tip"] == second and row["up_to_date"] is True

    shown = run_cli(capsys, "--repo", str(clone), "log", "--json")
    assert shown.code == 0, shown.err
    assert [(e["commit"], e["where"]) for e in json.loads(shown.out)] == [
        (first, "superseded"), (second, "branch")]

    # read-only: the remote's notes sit in their tracking ref; nothing else moved
    assert git(clone, "for-each-ref", "--format=%(refname)", "refs/notes/") == (
        "refs/notes/remotes/origin/gitsleep")
    assert git(work, "ls-remote", "origin") == remote_refs


def test_without_a_remote_or_its_notes_nothing_is_fetched_and_nothing_fails(
        work: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    git(work, "remote", "remove", "origin")
    assert run_cli(capsys, "--repo", str(work), "log").code == 0
    assert run_cli(capsys, "--repo", str(work), "status").code == 0
    assert git(work, "for-each-ref", "refs/notes/") == ""
