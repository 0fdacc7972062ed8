"""gitops against real repositories: a working clone, a bare origin, real git everywhere."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import git
import pytest

from gitsleep.base.errors import EXIT_GIT, GitError, UsageError
from gitsleep.git_forge import gitops, record
from gitsleep.git_forge.gitrun import is_ancestor, ref_sha
from tests.support.gitrepo import (
    clone,
    commit_files,
    configure_identity,
    isolate_git,
    make_repo,
    snapshot,
    write_files,
)
from tests.support.gitrepo import git as run_git
from tests.support.processes import kill_child

SKILL_PATH = "skills/brief-writer/SKILL.md"
MEMORY_PATH = "AGENTS.md"
BRANCH = "gitsleep/brief-writer"
FILES = {
    SKILL_PATH: "---\nname: brief-writer\n---\n# Brief writer\n\nWrite briefs.\n",
    MEMORY_PATH: "# Agents\n",
    "src/app.py": "print('hello')\n",
}


@pytest.fixture(autouse=True)
def _git_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_git(monkeypatch, tmp_path)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work, _origin = make_repo(tmp_path, FILES)
    return work


@pytest.fixture
def origin(work: Path) -> Path:
    return work.parent / "work-origin.git"


def message(base_sha: str, skill: str = "brief-writer", *, tasks: str = "sha256:t") -> str:
    """A commit message shaped like the ones report.py renders."""
    return textwrap.dedent(
        f"""\
        gitsleep({skill}): val 0.250 -> 0.917, held-out 0.000 -> 1.000

        Applied edits:
        # 1 add a checklist (a Markdown heading line, kept verbatim)

        Gitsleep-Skill: {skill}
        Gitsleep-Decision: accepted
        Gitsleep-Metric: mixed
        Gitsleep-Val: 0.250 -> 0.917
        Gitsleep-Test: 0.000 -> 1.000
        Gitsleep-Base: {base_sha}
        Gitsleep-Tasks: {tasks}
        Gitsleep-Model: agent-model / optimizer-model
        Gitsleep-Inputs: sha256:i
        """
    )


def gitsleep_commit(
    repo: git.Repo, branch: str = BRANCH, start: str | None = None, text: str = "learned\n"
) -> str:
    """One epoch's commit: a worktree at `start`, a changed skill document, the commit."""
    base_sha = repo.head.commit.hexsha
    with gitops.temporary_worktree(repo, branch, start or base_sha) as tree:
        skill = tree / SKILL_PATH
        learned = f"{text}({branch})\n"  # two skills' commits must differ, even in one second
        skill.write_text(skill.read_text(encoding="utf-8") + learned, encoding="utf-8")
        return gitops.commit_documents(repo, tree, branch, [SKILL_PATH], message(base_sha))


def worktree_paths(work: Path) -> list[str]:
    out = run_git(work, "worktree", "list", "--porcelain")
    prefix = "worktree "
    return [line.removeprefix(prefix) for line in out.splitlines() if line.startswith(prefix)]


# --- open_repo, resolve_base, default_remote ----------------------------------------------


def test_open_repo_refuses_a_plain_directory_and_an_empty_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="not inside a git repository"):
        gitops.open_repo(plain)
    empty = tmp_path / "empty"
    run_git(tmp_path, "init", "--quiet", str(empty))
    with pytest.raises(UsageError, match="no commits yet"):
        gitops.open_repo(empty)


def test_open_repo_finds_the_repository_from_a_subdirectory(work: Path) -> None:
    repo = gitops.open_repo(work / "skills" / "brief-writer")
    assert Path(repo.working_dir) == work


def test_resolve_base_defaults_to_the_current_branch(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = gitops.resolve_base(repo, None)
    assert base == gitops.BaseRef(name="main", sha=repo.head.commit.hexsha, branch="main")


def test_resolve_base_on_a_detached_head_uses_the_commit(work: Path) -> None:
    first = run_git(work, "rev-parse", "HEAD")
    commit_files(work, {"src/app.py": "print('v2')\n"}, "second")
    run_git(work, "checkout", "--quiet", "--detach", first)
    base = gitops.resolve_base(gitops.open_repo(work), None)
    assert (base.sha, base.branch, base.name) == (first, None, first)


def test_resolve_base_accepts_branches_remote_branches_tags_and_shas(work: Path) -> None:
    repo = gitops.open_repo(work)
    sha = repo.head.commit.hexsha
    run_git(work, "tag", "v1")
    assert gitops.resolve_base(repo, "main") == gitops.BaseRef("main", sha, "main")
    assert gitops.resolve_base(repo, "origin/main") == gitops.BaseRef(
        "origin/main", sha, "main", "origin"
    )
    assert gitops.resolve_base(repo, "v1") == gitops.BaseRef("v1", sha)
    assert gitops.resolve_base(repo, sha[:10]) == gitops.BaseRef(sha[:10], sha)


def test_resolve_base_names_a_missing_ref(work: Path) -> None:
    with pytest.raises(UsageError, match="'no-such-branch'"):
        gitops.resolve_base(gitops.open_repo(work), "no-such-branch")


def test_default_remote_prefers_the_upstream_then_origin(work: Path, origin: Path) -> None:
    repo = gitops.open_repo(work)
    assert gitops.default_remote(repo, "main") == "origin"
    run_git(work, "remote", "add", "upstream", str(origin))
    run_git(work, "config", "branch.main.remote", "upstream")
    assert gitops.default_remote(repo, "main") == "upstream"
    assert gitops.default_remote(repo, None) == "origin"
    run_git(work, "remote", "remove", "origin")
    assert gitops.default_remote(repo, "feature") is None


# --- the worktree never touches the user's checkout ---------------------------------------


def _make_checkout_messy(work: Path) -> None:
    """Staged, unstaged and untracked changes, a stash entry: a normal working day."""
    write_files(work, {"src/app.py": "print('stashed')\n"})
    run_git(work, "stash", "push", "--quiet")
    write_files(work, {MEMORY_PATH: "# Agents (staged edit)\n"})
    run_git(work, "add", MEMORY_PATH)
    write_files(work, {SKILL_PATH: "uncommitted edit of the skill\n", "notes.txt": "untracked\n"})


def test_commit_leaves_a_dirty_checkout_byte_identical(work: Path, origin: Path) -> None:
    _make_checkout_messy(work)
    repo = gitops.open_repo(work)
    base = gitops.resolve_base(repo, None)
    before = snapshot(work)
    with gitops.temporary_worktree(repo, BRANCH, base.sha) as tree:
        assert (tree / SKILL_PATH).read_text(encoding="utf-8") == FILES[SKILL_PATH]
        assert not (tree / "notes.txt").exists()
        (tree / SKILL_PATH).write_text(FILES[SKILL_PATH] + "learned\n", encoding="utf-8")
        (tree / "stray.txt").write_text("the epoch must not commit this\n", encoding="utf-8")
        sha = gitops.commit_documents(repo, tree, BRANCH, [SKILL_PATH], message(base.sha))
    gitops.add_note(repo, sha, '{"diagnostics": true}\n')
    gitops.push(repo, "origin", BRANCH, None)
    assert snapshot(work) == before
    assert run_git(work, "symbolic-ref", "HEAD") == "refs/heads/main"
    assert run_git(work, "stash", "list").count("stash@") == 1
    assert worktree_paths(work) == [str(work)]
    assert run_git(origin, "rev-parse", BRANCH) == sha


def test_commit_leaves_a_detached_head_alone(work: Path) -> None:
    first = run_git(work, "rev-parse", "HEAD")
    commit_files(work, {"src/app.py": "print('v2')\n"}, "second")
    run_git(work, "checkout", "--quiet", "--detach", first)
    write_files(work, {"untracked.md": "mine\n"})
    repo = gitops.open_repo(work)
    before = snapshot(work)
    sha = gitsleep_commit(repo, start=gitops.resolve_base(repo, None).sha)
    assert snapshot(work) == before
    assert run_git(work, "rev-parse", f"{sha}^") == first


def test_commit_leaves_a_rebase_in_progress_alone(work: Path) -> None:
    run_git(work, "checkout", "--quiet", "-b", "feature")
    commit_files(work, {"src/app.py": "print('feature')\n"}, "feature change")
    run_git(work, "checkout", "--quiet", "main")
    commit_files(work, {"src/app.py": "print('main')\n"}, "main change")
    run_git(work, "checkout", "--quiet", "feature")
    run_git(work, "rebase", "main", check=False)  # stops on the conflict
    assert (work / ".git" / "rebase-merge").is_dir()
    repo = gitops.open_repo(work)
    before = snapshot(work)
    gitsleep_commit(repo, start="main")
    assert snapshot(work) == before
    assert (work / ".git" / "rebase-merge").is_dir()


def test_a_leaked_git_index_file_cannot_reach_the_users_index(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _make_checkout_messy(work)
    monkeypatch.setenv("GIT_INDEX_FILE", str(work / ".git" / "index"))  # as inside a hook
    repo = gitops.open_repo(work)
    before = snapshot(work)
    sha = gitsleep_commit(repo)
    assert snapshot(work) == before
    changed = run_git(work, "diff-tree", "--no-commit-id", "--name-only", "-r", sha)
    assert changed == SKILL_PATH


def test_commit_changes_only_the_given_paths(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    with gitops.temporary_worktree(repo, BRANCH, base) as tree:
        (tree / SKILL_PATH).write_text("new skill\n", encoding="utf-8")
        (tree / MEMORY_PATH).write_text("new memory\n", encoding="utf-8")
        (tree / "src/app.py").write_text("print('not ours to commit')\n", encoding="utf-8")
        sha = gitops.commit_documents(
            repo, tree, BRANCH, [SKILL_PATH, MEMORY_PATH], message(base)
        )
    changed = run_git(work, "diff-tree", "--no-commit-id", "--name-only", "-r", sha)
    assert sorted(changed.splitlines()) == sorted([SKILL_PATH, MEMORY_PATH])
    assert run_git(work, "rev-parse", f"{sha}^") == base
    assert run_git(work, "rev-parse", BRANCH) == sha
    assert run_git(work, "show", f"{sha}:{SKILL_PATH}") == "new skill"


def test_commit_message_is_kept_verbatim_and_its_trailers_parse(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    sha = gitsleep_commit(repo)
    body = run_git(work, "log", "-1", "--format=%B", sha)
    assert "# 1 add a checklist" in body
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"], input=body, capture_output=True,
        text=True, check=True, cwd=work,
    ).stdout
    assert f"Gitsleep-Base: {base}" in parsed.splitlines()
    trailers = record.read_trailers(repo, sha)
    assert trailers["Gitsleep-Skill"] == "brief-writer"
    assert trailers["Gitsleep-Val"] == "0.250 -> 0.917"
    assert trailers["Gitsleep-Base"] == base
    assert len(trailers) == 9


def test_commit_uses_the_configured_identity(work: Path) -> None:
    sha = gitsleep_commit(gitops.open_repo(work))
    assert run_git(work, "log", "-1", "--format=%an <%ae>|%cn", sha) == (
        "Test Person <test@example.com>|Test Person"
    )


def test_commit_falls_back_to_the_gitsleep_identity(work: Path) -> None:
    run_git(work, "config", "--unset", "user.name")
    run_git(work, "config", "--unset", "user.email")
    repo = gitops.open_repo(work)
    sha = gitsleep_commit(repo)
    gitops.add_note(repo, sha, "note")
    assert run_git(work, "log", "-1", "--format=%an <%ae>|%ce", sha) == (
        f"gitsleep <{gitops.DEFAULT_EMAIL}>|{gitops.DEFAULT_EMAIL}"
    )


def test_repository_hooks_do_not_run_for_gitsleep_commits(work: Path, origin: Path) -> None:
    hooks = work / ".git" / "hooks"
    ran = work.parent / "hook-ran"
    for hook in ("pre-commit", "commit-msg", "post-commit", "pre-push", "post-checkout"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> '{ran}'\nexit 1\n")
        (hooks / hook).chmod(0o755)
    repo = gitops.open_repo(work)
    sha = gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    assert not ran.exists()
    assert run_git(origin, "rev-parse", BRANCH) == sha


def _signed_looking_commit(work: Path, parent: str, subject: str) -> str:
    """A commit object with a `gpgsig` header: `git log --show-signature` runs gpg on it."""
    tree = run_git(work, "rev-parse", f"{parent}^{{tree}}")
    body = (f"tree {tree}\nparent {parent}\nauthor A <a@example.com> 1700000000 +0000\n"
            "committer A <a@example.com> 1700000000 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n"
            f"\n{subject}\n")
    return subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=work,
                          input=body, capture_output=True, text=True, check=True).stdout.strip()


def test_no_program_the_repository_configures_runs_in_gitsleeps_git_calls(
    work: Path, origin: Path
) -> None:
    ran = work.parent / "ran.log"
    script = work.parent / "record.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> \'{ran}\'\nexit 1\n')
    script.chmod(0o755)
    for key, value in {"core.fsmonitor": str(script), "log.showSignature": "true",
                       "gpg.program": str(script), "submodule.recurse": "true"}.items():
        run_git(work, "config", key, value)
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    sha = gitsleep_commit(repo)
    gitops.add_note(repo, sha, json.dumps(record.with_proof({}, sha, BRANCH)))
    gitops.push(repo, "origin", BRANCH, None)
    human = _signed_looking_commit(work, sha, "a signed human commit")
    run_git(work, "push", "--quiet", "origin", f"{human}:refs/heads/{BRANCH}")
    state = gitops.inspect_branch(repo, BRANCH, base, "origin")
    assert [c.sha for c in state.foreign_commits] == [human]
    assert record.read_trailers(repo, human) == {}
    repo.git.status()  # GitPython's own calls on an opened repository are hardened too
    repo.git.log("-1", human)
    assert not ran.exists(), ran.read_text()
    run_git(work, "log", "-1", human)  # a person's git in the same repository runs them
    assert ran.exists()


def test_git_config_from_the_environment_is_kept_alongside_gitsleeps(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "gitsleep.test")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "kept")
    repo = gitops.open_repo(work)
    assert repo.git.config("--get", "gitsleep.test") == "kept"
    assert repo.git.config("--get", "core.fsmonitor") == "false"


def test_commit_refuses_paths_outside_the_repository_and_no_change(work: Path) -> None:
    repo = gitops.open_repo(work)
    with gitops.temporary_worktree(repo, BRANCH, "HEAD") as tree:
        for bad in ("../outside.md", "/etc/passwd", ""):
            with pytest.raises(UsageError):
                gitops.commit_documents(repo, tree, BRANCH, [bad], "msg")
        with pytest.raises(GitError, match="nothing to commit"):
            gitops.commit_documents(repo, tree, BRANCH, [SKILL_PATH], message("x"))
    assert ref_sha(repo, f"refs/heads/{BRANCH}") is None


def test_branch_moved_during_the_run_is_not_overwritten(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    with gitops.temporary_worktree(repo, BRANCH, base) as tree:
        (tree / SKILL_PATH).write_text("new\n", encoding="utf-8")
        run_git(work, "branch", BRANCH, base)  # someone creates the branch meanwhile
        with pytest.raises(GitError, match="moved while gitsleep ran") as caught:
            gitops.commit_documents(repo, tree, BRANCH, [SKILL_PATH], message(base))
    assert caught.value.exit_code == EXIT_GIT
    assert run_git(work, "rev-parse", BRANCH) == base


def test_reused_branch_moves_from_its_old_tip(work: Path) -> None:
    repo = gitops.open_repo(work)
    first = gitsleep_commit(repo)
    second = gitsleep_commit(repo, start=first, text="more\n")
    assert run_git(work, "rev-parse", f"{second}^") == first
    third = gitsleep_commit(repo, text="third\n")  # from the base: replaces gitsleep's commits
    assert run_git(work, "rev-parse", BRANCH) == third
    assert run_git(work, "rev-parse", f"{third}^") == repo.head.commit.hexsha


# --- worktree lifetime --------------------------------------------------------------------


def test_worktree_is_removed_after_an_exception_and_the_branch_is_untouched(work: Path) -> None:
    repo = gitops.open_repo(work)
    with pytest.raises(RuntimeError), gitops.temporary_worktree(repo, BRANCH, "HEAD") as tree:
        (tree / SKILL_PATH).write_text("half-made\n", encoding="utf-8")
        raise RuntimeError("backend failed")
    assert not tree.exists()
    assert worktree_paths(work) == [str(work)]
    assert ref_sha(repo, f"refs/heads/{BRANCH}") is None
    assert list((work / ".git" / "gitsleep" / "worktrees").iterdir()) == []


def test_worktree_is_removed_after_keyboard_interrupt(work: Path) -> None:
    repo = gitops.open_repo(work)
    with pytest.raises(KeyboardInterrupt), gitops.temporary_worktree(repo, BRANCH, "HEAD") as tree:
        raise KeyboardInterrupt
    assert not tree.exists()
    assert worktree_paths(work) == [str(work)]


def test_worktree_refuses_a_branch_checked_out_by_the_user(work: Path) -> None:
    run_git(work, "checkout", "--quiet", "-b", BRANCH)
    repo = gitops.open_repo(work)
    with pytest.raises(GitError, match="checked out in"), gitops.temporary_worktree(
        repo, BRANCH, "HEAD"
    ):
        pass
    assert worktree_paths(work) == [str(work)]


def test_worktree_left_by_a_killed_run_is_cleaned_by_the_next(work: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from gitsleep.git_forge import gitops
        repo = gitops.open_repo(sys.argv[1])
        with gitops.temporary_worktree(repo, "gitsleep/brief-writer", "HEAD") as tree:
            print(tree, flush=True)
            sys.stdin.read()
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(work)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        leftover = Path(child.stdout.readline().strip())
        assert leftover.is_dir()
        # while its owner lives, another run leaves it alone
        assert gitops.cleanup_stale_worktrees(gitops.open_repo(work)) == []
    finally:
        kill_child(child)
    assert leftover.is_dir()
    assert str(leftover) in worktree_paths(work)

    repo = gitops.open_repo(work)
    with gitops.temporary_worktree(repo, BRANCH, "HEAD") as tree:
        assert not leftover.exists()
        assert worktree_paths(work) == [str(work), str(tree)]
    assert worktree_paths(work) == [str(work)]
    admin_root = work / ".git" / "worktrees"
    assert not admin_root.exists() or list(admin_root.iterdir()) == []
    assert list((work / ".git" / "gitsleep" / "worktrees").iterdir()) == []


def test_cleanup_leaves_the_users_own_worktrees_alone(work: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my-worktree"
    run_git(work, "worktree", "add", "--quiet", "-b", "feature", str(mine))
    moved = tmp_path / "on-a-usb-stick"
    run_git(work, "worktree", "add", "--quiet", "-b", "other", str(moved))
    moved.rename(tmp_path / "unplugged")  # a missing worktree a global prune would delete
    repo = gitops.open_repo(work)
    gitsleep_commit(repo)
    assert gitops.cleanup_stale_worktrees(repo) == []
    admin_names = sorted(p.name for p in (work / ".git" / "worktrees").iterdir())
    assert admin_names == ["my-worktree", "on-a-usb-stick"]


# --- inspecting the branch ----------------------------------------------------------------


def test_inspect_without_a_branch(work: Path) -> None:
    repo = gitops.open_repo(work)
    state = gitops.inspect_branch(repo, BRANCH, repo.head.commit.hexsha, "origin")
    assert not state.exists
    assert (state.local_tip, state.remote_tip, state.foreign_commits) == (None, None, ())
    assert state.last_trailers == {}
    gitops.ensure_only_gitsleep_commits(state)  # nothing to object to


def test_inspect_reads_the_last_gitsleep_commit(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    sha = gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    state = gitops.inspect_branch(repo, BRANCH, base, "origin")
    assert (state.local_tip, state.remote_tip, state.last_gitsleep_commit) == (sha, sha, sha)
    assert is_ancestor(repo, base, sha)
    assert state.foreign_commits == ()
    assert state.last_gitsleep_commit == sha
    assert state.last_trailers["Gitsleep-Base"] == base
    assert record.is_up_to_date(
        state.last_trailers, base_sha=base, tasks_digest="sha256:t", inputs_digest="sha256:i"
    )
    assert not record.is_up_to_date(
        state.last_trailers, base_sha=base, tasks_digest="sha256:other", inputs_digest="sha256:i"
    )
    assert not record.is_up_to_date({}, base_sha=base, tasks_digest="", inputs_digest="")


def test_inspect_after_the_base_moved_on(work: Path) -> None:
    repo = gitops.open_repo(work)
    old_base = repo.head.commit.hexsha
    sha = gitsleep_commit(repo)
    new_base = commit_files(work, {"src/app.py": "print('v2')\n"}, "human work on main")
    state = gitops.inspect_branch(repo, BRANCH, new_base, None)
    assert state.last_gitsleep_commit == sha and not is_ancestor(repo, new_base, sha)
    assert state.foreign_commits == ()  # main's commits are not on the branch "since the base"
    assert state.last_trailers["Gitsleep-Base"] == old_base
    assert not record.is_up_to_date(
        state.last_trailers, base_sha=new_base, tasks_digest="sha256:t", inputs_digest="sha256:i"
    )


def test_inspect_finds_a_human_commit_on_the_local_branch(work: Path) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    gitsleep_commit(repo)
    run_git(work, "checkout", "--quiet", BRANCH)
    human = commit_files(work, {SKILL_PATH: "hand edit\n"}, "Tidy the skill by hand")
    run_git(work, "checkout", "--quiet", "main")
    state = gitops.inspect_branch(repo, BRANCH, base, "origin")
    assert [(c.sha, c.subject) for c in state.foreign_commits] == [
        (human, "Tidy the skill by hand")
    ]
    with pytest.raises(GitError) as caught:
        gitops.ensure_only_gitsleep_commits(state)
    text = str(caught.value)
    assert caught.value.exit_code == EXIT_GIT
    assert f"{human[:7]} Tidy the skill by hand" in text
    assert f"git branch -D {BRANCH}" in text and "branch_prefix" in text
    assert "\n" not in text


def test_inspect_finds_a_human_commit_pushed_to_the_remote(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    repo = gitops.open_repo(work)
    base = repo.head.commit.hexsha
    sha = gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    other = clone(origin, tmp_path / "colleague")
    run_git(other, "checkout", "--quiet", BRANCH)
    # a subject that mimics gitsleep's is still a human commit without the trailer
    human = commit_files(other, {MEMORY_PATH: "edited\n"}, "gitsleep(brief-writer): fixup")
    run_git(other, "push", "--quiet", "origin", BRANCH)

    state = gitops.inspect_branch(repo, BRANCH, base, "origin")
    assert state.local_tip == sha and state.remote_tip == human and is_ancestor(repo, sha, human)
    assert [c.sha for c in state.foreign_commits] == [human]
    with pytest.raises(GitError, match=f"origin/{BRANCH}"):
        gitops.ensure_only_gitsleep_commits(state)


def test_inspect_drops_a_remote_tracking_ref_for_a_deleted_branch(work: Path) -> None:
    repo = gitops.open_repo(work)
    gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    run_git(work, "push", "--quiet", "origin", "--delete", BRANCH)
    run_git(work, "update-ref", f"refs/remotes/origin/{BRANCH}", BRANCH)  # stale tracking ref
    state = gitops.inspect_branch(repo, BRANCH, repo.head.commit.hexsha, "origin")
    assert state.remote_tip is None
    assert ref_sha(repo, f"refs/remotes/origin/{BRANCH}") is None


def test_inspect_with_an_unreachable_remote_is_a_git_error(work: Path, tmp_path: Path) -> None:
    run_git(work, "remote", "add", "gone", str(tmp_path / "no-such-repo.git"))
    repo = gitops.open_repo(work)
    with pytest.raises(GitError, match="remote gone"):
        gitops.inspect_branch(repo, BRANCH, repo.head.commit.hexsha, "gone")


# --- push and notes -----------------------------------------------------------------------


def test_note_is_stored_byte_for_byte_and_pushed(work: Path, origin: Path) -> None:
    repo = gitops.open_repo(work)
    sha = gitsleep_commit(repo)
    diagnostics = json.dumps({"tasks": [{"id": "t1", "response": "ok"}]}, indent=2)
    note = f"{diagnostics}\n\n\n  raw reply with gaps and trailing spaces  \n\n"
    gitops.add_note(repo, sha, note)
    assert gitops.read_note(repo, sha) == note
    result = gitops.push(repo, "origin", BRANCH, None)
    assert result == gitops.PushResult(branch_sha=sha, notes_pushed=True)
    on_origin = subprocess.run(
        ["git", "notes", "--ref=gitsleep", "show", sha], cwd=origin, capture_output=True,
        check=True,
    ).stdout
    assert on_origin == note.encode("utf-8")


def test_push_with_lease_replaces_gitsleeps_own_commit(work: Path, origin: Path) -> None:
    repo = gitops.open_repo(work)
    first = gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    second = gitsleep_commit(repo, text="second\n")  # from the base: not a fast-forward
    gitops.push(repo, "origin", BRANCH, first)
    assert run_git(origin, "rev-parse", BRANCH) == second


def test_push_rejected_when_the_remote_moved_keeps_the_local_branch(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    repo = gitops.open_repo(work)
    first = gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    other = clone(origin, tmp_path / "colleague")
    run_git(other, "checkout", "--quiet", BRANCH)
    theirs = commit_files(other, {MEMORY_PATH: "theirs\n"}, "someone else's commit")
    run_git(other, "push", "--quiet", "origin", BRANCH)

    ours = gitsleep_commit(repo, start=first, text="more\n")
    with pytest.raises(GitError, match="rejected") as caught:
        gitops.push(repo, "origin", BRANCH, first)
    assert caught.value.exit_code == EXIT_GIT
    assert ours[:12] in str(caught.value)
    assert run_git(origin, "rev-parse", BRANCH) == theirs
    assert run_git(work, "rev-parse", BRANCH) == ours


def test_push_refuses_to_create_over_an_unexpected_remote_branch(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    other = clone(origin, tmp_path / "colleague")
    run_git(other, "checkout", "--quiet", "-b", BRANCH)
    theirs = commit_files(other, {MEMORY_PATH: "theirs\n"}, "someone else's branch")
    run_git(other, "push", "--quiet", "origin", BRANCH)
    repo = gitops.open_repo(work)
    gitsleep_commit(repo)
    with pytest.raises(GitError, match="rejected"):
        gitops.push(repo, "origin", BRANCH, None)
    assert run_git(origin, "rev-parse", BRANCH) == theirs


def test_rejected_notes_push_merges_the_remote_notes(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    other = clone(origin, tmp_path / "second-runner")
    first_repo = gitops.open_repo(work)
    second_repo = gitops.open_repo(other)
    a = gitsleep_commit(first_repo, branch="gitsleep/a")
    b = gitsleep_commit(second_repo, branch="gitsleep/b")
    gitops.add_note(first_repo, a, "note a")
    gitops.add_note(second_repo, b, "note b")
    gitops.push(first_repo, "origin", "gitsleep/a", None)
    result = gitops.push(second_repo, "origin", "gitsleep/b", None)  # notes push rejected first
    assert result.notes_pushed
    assert run_git(origin, "notes", "--ref=gitsleep", "show", a) == "note a"
    assert run_git(origin, "notes", "--ref=gitsleep", "show", b) == "note b"
    merge = run_git(origin, "rev-list", "--parents", "-n", "1", record.NOTES_REF).split()
    assert len(merge) == 3  # the second runner merged the first runner's notes


@pytest.mark.parametrize("same_clone", [False, True], ids=["two-runners", "one-clone"])
def test_two_processes_noting_and_pushing_at_once_both_land(
    work: Path, origin: Path, tmp_path: Path, same_clone: bool
) -> None:
    runners = {"a": work, "b": work if same_clone else clone(origin, tmp_path / "runner-b")}
    shas = {
        skill: gitsleep_commit(gitops.open_repo(path), branch=f"gitsleep/{skill}")
        for skill, path in runners.items()
    }
    go = tmp_path / "go"
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from gitsleep.git_forge import gitops
        path, skill, sha, go = sys.argv[1:]
        repo = gitops.open_repo(path)
        print("ready", flush=True)
        while not Path(go).exists():
            time.sleep(0.002)
        gitops.add_note(repo, sha, f"note {skill}")
        result = gitops.push(repo, "origin", f"gitsleep/{skill}", None)
        print("notes", result.notes_pushed, result.notes_error, flush=True)
        """
    )
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(path), skill, shas[skill], str(go)],
            stdout=subprocess.PIPE, text=True,
        )
        for skill, path in runners.items()
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    go.touch()
    outputs = [child.communicate(timeout=60)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0]
    assert all("notes True None" in out for out in outputs), outputs
    for skill, sha in shas.items():
        assert run_git(origin, "notes", "--ref=gitsleep", "show", sha) == f"note {skill}"
        assert run_git(origin, "rev-parse", f"gitsleep/{skill}") == sha


def test_two_skills_in_one_clone_keep_both_notes(work: Path, origin: Path) -> None:
    repo = gitops.open_repo(work)
    a = gitsleep_commit(repo, branch="gitsleep/a")
    b = gitsleep_commit(repo, branch="gitsleep/b")
    gitops.add_note(repo, a, "note a")
    gitops.push(repo, "origin", "gitsleep/a", None)
    gitops.add_note(repo, b, "note b")
    gitops.push(repo, "origin", "gitsleep/b", None)
    assert run_git(origin, "notes", "--ref=gitsleep", "show", a) == "note a"
    assert run_git(origin, "notes", "--ref=gitsleep", "show", b) == "note b"


# --- shallow clones -----------------------------------------------------------------------


def test_shallow_clone_works_while_the_branch_descends_from_the_base(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    commit_files(work, {"src/app.py": "print('v2')\n"}, "second")
    run_git(work, "push", "--quiet", "origin", "main")
    shallow = clone(origin, tmp_path / "ci", depth=1)
    repo = gitops.open_repo(shallow)
    assert gitops.check_shallow(repo)
    assert not gitops.check_shallow(gitops.open_repo(work))
    base = gitops.resolve_base(repo, None)

    state = gitops.inspect_branch(repo, BRANCH, base.sha, "origin")
    assert not state.exists
    first = gitsleep_commit(repo)
    # the note names its commit: the next night's fresh clone knows the commit is gitsleep's
    gitops.add_note(repo, first, json.dumps(record.with_proof({}, first, BRANCH)))
    gitops.push(repo, "origin", BRANCH, state.remote_tip)

    again = clone(origin, tmp_path / "ci-next-night", depth=1)
    repo = gitops.open_repo(again)
    state = gitops.inspect_branch(repo, BRANCH, base.sha, "origin")
    assert state.remote_tip == first and state.foreign_commits == ()
    assert state.last_trailers["Gitsleep-Base"] == base.sha
    second = gitsleep_commit(repo, start=state.remote_tip, text="more\n")
    gitops.push(repo, "origin", BRANCH, state.remote_tip)
    assert run_git(origin, "rev-parse", BRANCH) == second


def test_shallow_clone_that_lacks_the_history_says_to_fetch_it(
    work: Path, origin: Path, tmp_path: Path
) -> None:
    repo = gitops.open_repo(work)
    gitsleep_commit(repo)
    gitops.push(repo, "origin", BRANCH, None)
    commit_files(work, {"src/app.py": "print('v2')\n"}, "main moves on")
    run_git(work, "push", "--quiet", "origin", "main")
    shallow = gitops.open_repo(clone(origin, tmp_path / "ci", depth=1))
    base = gitops.resolve_base(shallow, None)
    with pytest.raises(UsageError, match="fetch-depth: 0"):
        gitops.inspect_branch(shallow, BRANCH, base.sha, "origin")


# --- status helpers -----------------------------------------------------------------------


def test_list_gitsleep_branches_merges_local_and_remote(work: Path, origin: Path) -> None:
    repo = gitops.open_repo(work)
    a = gitsleep_commit(repo, branch="gitsleep/a")
    gitops.push(repo, "origin", "gitsleep/a", None)
    b = gitsleep_commit(repo, branch="gitsleep/b")
    run_git(work, "branch", "feature")
    run_git(work, "push", "--quiet", "origin", f"{b}:refs/heads/gitsleep/c")
    run_git(work, "fetch", "--quiet", "origin")
    found = gitops.list_gitsleep_branches(repo, "gitsleep/")
    assert found == [
        gitops.BranchTip("gitsleep/a", a, a, "origin"),
        gitops.BranchTip("gitsleep/b", b, None, None),
        gitops.BranchTip("gitsleep/c", None, b, "origin"),
    ]
    assert record.read_trailers(repo, found[2].rev)["Gitsleep-Skill"] == "brief-writer"


def test_configure_identity_is_local_to_the_repository(work: Path, tmp_path: Path) -> None:
    configure_identity(work, "Other", "other@example.com")
    assert run_git(work, "config", "--local", "user.name") == "Other"
    assert run_git(tmp_path, "config", "--global", "user.name", check=False) == ""


def test_push_to_an_unreachable_remote_keeps_the_commit(work: Path, tmp_path: Path) -> None:
    run_git(work, "remote", "add", "gone", str(tmp_path / "no-such-repo.git"))
    repo = gitops.open_repo(work)
    sha = gitsleep_commit(repo)
    with pytest.raises(GitError, match="failed") as caught:
        gitops.push(repo, "gone", BRANCH, None)
    assert sha[:12] in str(caught.value)
    assert run_git(work, "rev-parse", BRANCH) == sha


def test_push_of_a_missing_branch_is_a_git_error(work: Path) -> None:
    with pytest.raises(GitError, match="no such local branch"):
        gitops.push(gitops.open_repo(work), "origin", BRANCH, None)



@pytest.mark.parametrize(("url", "here"), [
    ("/srv/git/team.git", True), ("../origin.git", True), ("file:///srv/git/team.git", True),
    ("https://github.com/team/repo.git", False), ("ssh://git@host/team/repo.git", False),
    ("git@github.com:team/repo.git", False),
])
def test_a_remote_is_on_this_machine_only_when_its_url_is_a_folder(
        tmp_path: Path, url: str, here: bool) -> None:
    """A simulated night is pushed by default only to a remote that is a folder here."""
    work, _ = make_repo(tmp_path)
    run_git(work, "remote", "set-url", "origin", url)
    assert gitops.remotes_all_on_this_machine(work) is here
