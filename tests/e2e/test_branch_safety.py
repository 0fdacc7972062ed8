"""Branches gitsleep must not move, commits it must not replace, notes it must not skip,
and programs of the repository's that its git calls must not run.

Every case drives a whole `gitsleep consolidate` through real git with a bare origin, and
checks that what is not gitsleep's is byte for byte where it was.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from gitsleep.git_forge import gitops
from tests.e2e.test_git_run import consolidate
from tests.support.cli import run_cli
from tests.support.gitrepo import clone, commit_files, example_repo, git

BRANCH = "gitsleep/brief-writer"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    return example_repo(tmp_path, monkeypatch)


def set_config(work: Path, **changes: object) -> None:
    """Commit `.gitsleep.yml` with top-level `changes` (and `skill_name` for the skill)."""
    config = yaml.safe_load((work / ".gitsleep.yml").read_text())
    name = changes.pop("skill_name", None)
    if name:
        config["skills"][0]["name"] = name
    config.update(changes)
    commit_files(work, {".gitsleep.yml": yaml.safe_dump(config)}, "configure gitsleep")
    git(work, "push", "--quiet", "origin", "main")


def refs(path: Path) -> str:
    return git(path, "for-each-ref", "--format=%(refname) %(objectname)")


def calls(data: dict) -> int:
    return data.get("cost", {}).get("calls", 0)


# -- 1. a branch name that is not gitsleep's ----------------------------------------------


def test_prefix_and_skill_that_spell_main_on_a_detached_checkout_are_refused(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    set_config(work, branch_prefix="ma", skill_name="in")
    git(work, "checkout", "--quiet", "--detach")
    before = refs(work), refs(origin)
    code, data = consolidate(capsys, work)
    assert code == 2, data
    assert "main" in data["stderr"] and "not gitsleep's" in data["stderr"]
    assert len(data["stderr"].strip().splitlines()) == 1
    assert (refs(work), refs(origin)) == before


@pytest.mark.parametrize("case", ["base", "current", "default", "other", "remote-only"])
def test_a_branch_gitsleep_did_not_create_is_refused_before_any_model_call(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    work, origin = repo
    git(work, "branch", "release")
    git(work, "push", "--quiet", "origin", "release")
    extra: tuple[str, ...] = ()
    if case == "base":  # gitsleep/x is the --base itself
        git(work, "branch", "x/brief-writer")
        set_config(work, branch_prefix="x/")
        extra = ("--base", "x/brief-writer")
    elif case == "current":  # the checked-out branch
        git(work, "checkout", "--quiet", "-b", "x/brief-writer")
        set_config(work, branch_prefix="x/")
    elif case == "default":  # the remote's default branch, with the base elsewhere
        git(origin, "symbolic-ref", "HEAD", "refs/heads/release")
        set_config(work, branch_prefix="rel", skill_name="ease")
        extra = ("--base", "main")
    elif case == "other":  # any branch of someone's, ahead of the base
        git(work, "checkout", "--quiet", "-b", "topic/brief-writer")
        commit_files(work, {"NOTES.md": "mine\n"}, "my own work")
        git(work, "checkout", "--quiet", "main")
        set_config(work, branch_prefix="topic/")
    else:  # only on the remote, equal to the base
        other = clone(origin, tmp_path / "colleague")
        git(other, "push", "--quiet", "origin", "main:refs/heads/gitsleep/brief-writer")
    before = refs(work), refs(origin)
    code, data = consolidate(capsys, work, *extra)
    assert code == 2, data
    assert "not gitsleep's" in data["stderr"] and calls(data) == 0
    assert len(data["stderr"].strip().splitlines()) == 1
    after = refs(work), refs(origin)
    assert after[1] == before[1], "the remote is untouched"
    assert [r for r in after[0].splitlines() if "refs/remotes/" not in r] == [
        r for r in before[0].splitlines() if "refs/remotes/" not in r]


@pytest.mark.parametrize(("existing", "prefix"), [
    ("gitsleep", "gitsleep/"),  # refs/heads/gitsleep blocks refs/heads/gitsleep/<skill>
    ("gitsleep/brief-writer/old", "gitsleep/"),  # and the other way round
])
@pytest.mark.parametrize("where", ["local", "remote"])
def test_a_name_that_clashes_with_an_existing_ref_path_says_why(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], existing: str, prefix: str,
    where: str,
) -> None:
    work, origin = repo
    set_config(work, branch_prefix=prefix)
    if where == "local":
        git(work, "branch", existing)
    else:
        git(work, "push", "--quiet", "origin", f"main:refs/heads/{existing}")
    before = refs(work), refs(origin)
    code, data = consolidate(capsys, work)
    assert code == 2, data
    line = data["stderr"].strip()
    assert len(line.splitlines()) == 1 and calls(data) == 0
    assert f"'refs/heads/{existing}' exists; cannot create" in line or (
        f"'{existing}' exists" in line), line
    assert (refs(work), refs(origin))[1] == before[1]


def test_gitsleeps_own_branch_merged_by_fast_forward_is_still_gitsleeps(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    code, first = consolidate(capsys, work)
    assert code == 0 and first["commit"]
    git(work, "merge", "--quiet", "--ff-only", BRANCH)  # the PR, merged
    git(work, "push", "--quiet", "origin", "main")
    commit_files(work, {"README.md": "# moved on\n"}, "move the base")
    code, data = consolidate(capsys, work)
    assert code == 0, data


# -- 2. ownership by proof, not by look ---------------------------------------------------


@pytest.mark.parametrize("copy_notes", [False, True])
def test_a_reviewers_amend_of_gitsleeps_commit_is_never_force_pushed_away(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path,
    copy_notes: bool,
) -> None:
    work, origin = repo
    code, first = consolidate(capsys, work)
    assert code == 0 and first["commit"]
    reviewer = clone(origin, tmp_path / "reviewer")
    git(reviewer, "checkout", "--quiet", BRANCH)
    if copy_notes:  # the amend even carries gitsleep's note over to the new commit
        git(reviewer, "fetch", "--quiet", "origin", "refs/notes/gitsleep:refs/notes/gitsleep")
        git(reviewer, "config", "notes.rewriteRef", "refs/notes/gitsleep")
    skill = reviewer / "skills/brief-writer/SKILL.md"
    skill.write_text(skill.read_text() + "\nA reviewer's careful wording.\n")
    git(reviewer, "commit", "--quiet", "--all", "--amend", "--no-edit")
    amended = git(reviewer, "rev-parse", "HEAD")
    assert git(reviewer, "log", "-1", "--format=%s", amended).startswith("gitsleep(")
    git(reviewer, "push", "--quiet", "--force", "origin", BRANCH)
    if copy_notes:
        assert git(reviewer, "notes", "--ref=gitsleep", "show", amended)
        git(reviewer, "push", "--quiet", "origin", "refs/notes/gitsleep")

    commit_files(work, {"README.md": "# base moved\n"}, "move the base")  # a new epoch is due
    for checkout in (work, clone(origin, tmp_path / "ci")):  # the same clone, and a fresh one
        code, data = consolidate(capsys, checkout)
        assert code == 4, data
        assert amended[:7] in data["stderr"] and "never overwrites" in data["stderr"]
        assert git(origin, "rev-parse", BRANCH) == amended


def test_gitsleeps_own_commit_from_another_clone_is_proven_by_its_note(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin = repo
    consolidate(capsys, clone(origin, tmp_path / "night-1"))
    commit_files(work, {"README.md": "# base moved\n"}, "move the base")
    git(work, "push", "--quiet", "origin", "main")
    code, data = consolidate(capsys, clone(origin, tmp_path / "night-2"))
    assert code == 0 and data["commit"], data
    assert git(origin, "rev-parse", BRANCH) == data["commit"]


def test_a_commit_shaped_like_gitsleeps_without_proof_is_a_human_commit(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin = repo
    code, first = consolidate(capsys, work)
    message = git(work, "log", "-1", "--format=%B", first["commit"])
    other = clone(origin, tmp_path / "mimic")
    git(other, "checkout", "--quiet", BRANCH)
    commit_files(other, {"NOTES.md": "x\n"}, message)  # same subject and trailers
    git(other, "push", "--quiet", "origin", BRANCH)
    mimic = git(origin, "rev-parse", BRANCH)
    commit_files(work, {"README.md": "# base moved\n"}, "move the base")
    code, data = consolidate(capsys, work)
    assert code == 4 and mimic[:7] in data["stderr"], data
    assert git(origin, "rev-parse", BRANCH) == mimic


# -- 3. interrupted between the commit and its note ---------------------------------------


def test_a_commit_left_without_its_note_gets_it_before_the_push(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work, origin = repo

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # Ctrl-C right after the commit, before the note

    with monkeypatch.context() as patch:
        patch.setattr(gitops, "add_note", killed)
        code, _ = consolidate(capsys, work)
    assert code != 0
    commit = git(work, "rev-parse", BRANCH)
    assert git(work, "notes", "--ref=gitsleep", "list", commit, check=False) == ""
    assert git(origin, "branch", "--list", BRANCH) == ""
    status = json.loads(run_cli(capsys, "--repo", str(work), "status", "--json").out)[0]
    assert status["up_to_date"] is False and "no diagnostics note" in status["note"]

    code, data = consolidate(capsys, work)
    assert code == 0, data
    assert data["commit"] == commit and calls(data) == 0, "replayed from the cache"
    note = json.loads(git(origin, "notes", "--ref=gitsleep", "show", commit))
    assert note["decision"] == "accepted"
    code, again = consolidate(capsys, work)
    assert code == 0 and again.get("up_to_date")
    status = json.loads(run_cli(capsys, "--repo", str(work), "status", "--json").out)[0]
    assert status["up_to_date"] is True and "note" not in status


def test_a_pushed_commit_without_its_note_is_not_up_to_date_until_noted(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work, origin = repo
    with monkeypatch.context() as patch:  # an older run pushed the branch without the note
        patch.setattr(gitops, "add_note", lambda *a, **k: None)
        code, first = consolidate(capsys, work)
    assert code == 0 and git(origin, "rev-parse", BRANCH) == first["commit"]
    assert git(origin, "notes", "--ref=gitsleep", "list", check=False) == ""

    code, data = consolidate(capsys, work)
    assert code == 0 and not data.get("up_to_date"), data
    assert data["commit"] == first["commit"] and calls(data) == 0
    assert json.loads(git(origin, "notes", "--ref=gitsleep", "show", first["commit"]))


# -- 4. git runs nothing of the repository's ----------------------------------------------


def test_programs_the_repository_configures_never_run(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin = repo
    ran = tmp_path / "ran.log"
    script = tmp_path / "record.sh"
    script.write_text(  # records its name, arguments and the git command that ran it
        f'#!/bin/sh\necho "$0 $* from $(tr "\\0" " " < /proc/$PPID/cmdline)" >> {ran}\nexit 1\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout",
                 "reference-transaction", "post-rewrite", "pre-auto-gc", "post-index-change"):
        os.symlink(script, hooks / hook)
    for key, value in {"core.fsmonitor": str(script), "core.hooksPath": str(hooks),
                       "log.showSignature": "true", "gpg.program": str(script),
                       "diff.external": str(script)}.items():
        git(work, "config", key, value)
    code, data = consolidate(capsys, work)
    assert code == 0 and data["commit"], data
    assert not ran.exists(), ran.read_text()
    code, again = consolidate(capsys, work)
    assert code == 0 and again.get("up_to_date"), again
    git(work, "status")  # the same repository, through a person's git: the programs run
    assert "record.sh" in ran.read_text()
