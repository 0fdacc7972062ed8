"""The one order for putting gitsleep's work on a branch: open -> base -> remote -> lock ->
claim -> worktree -> commit -> note -> push -> notes -> PR.

`consolidate` (`run.py`) and `harvest --branch` (`harvest/branch.py`) both go through
here, so neither writes out the order of git steps itself, nor has a git safety rule the
other lacks. `publishing` opens the repository, resolves the base and its remote, takes
the branch's lock and claims the branch; the `Claimed` it yields, valid while the lock is
held, is the only way on to the worktree, the commit with its note, the push and the forge:


- **claim**: the name is one gitsleep may move (not the base, the checkout, the remote's
  default branch, no ref-path clash); the branch is gitsleep's by proof (its note or this
  clone's reflog), never by its name; no commit gitsleep cannot prove it made is
  overwritten or pushed. consolidate *replaces* its own commit (every epoch is the base plus
  one commit), so any other commit on the branch stops it (exit 4). harvest *appends* on
  the newest tip, so a reviewer's pushed commits are kept, and stops (exit 4) only on
  commits that exist in this clone alone: pushing them would publish a person's unshared work.
- **commit + note**: the branch moves by compare-and-swap, and the note names the commit and
  the branch (`record.with_proof`), the proof a later run or another clone reads.
- **push**: with a lease on the tip that was inspected; harvest's push is a fast-forward.
- **PR**: the forge client for the remote, or the one-line reason there is none.

Branch names: consolidate's is `<branch_prefix><skill>`; harvest's is the prefix's stem
(without a final `/`) plus `-harvest/<skill>`, `gitsleep-harvest/x` by default. Skill names
are `[a-z0-9]+(-[a-z0-9]+)*`, so right after the stem consolidate's name holds `/` or a
letter or digit where harvest's holds `-`: no harvest branch equals a consolidate branch,
nor sits in a folder of one (git could not hold both refs), for any skill or prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from gitsleep.base.errors import GitError, GitsleepError, UsageError
from gitsleep.git_forge import forge, gitops
from gitsleep.git_forge.gitops import BaseRef, BranchState, PushResult
from gitsleep.git_forge.gitrun import is_ancestor, ref_sha, try_git
from gitsleep.git_forge.lock import RepoLock
from gitsleep.git_forge.record import NOTES_REF, with_proof

if TYPE_CHECKING:
    import git

    from gitsleep.git_forge.forge import GitHubForge

T = TypeVar("T")
HARVEST_NOTES_REF = "refs/notes/gitsleep-harvest"  # apart from the epochs' diagnostics notes
HARVEST_STEM = "-harvest/"


def skill_branch(prefix: str, skill: str) -> str:
    """consolidate's branch for `skill`: `<branch_prefix><skill>`."""
    return f"{prefix}{skill}"


def harvest_branch(prefix: str, skill: str) -> str:
    """harvest's branch for `skill`: `gitsleep-harvest/<skill>` for the default prefix.

    Never a consolidate branch nor in a folder of one (see the module docstring).
    """
    stem = prefix[:-1] if prefix.endswith("/") else prefix
    return f"{stem}{HARVEST_STEM}{skill}"


def harvest_lock(skill: str) -> str:
    """harvest's lock name: `_` starts no skill name, so it never waits on consolidate's."""
    return f"_harvest-{skill}"


# -- claim -----------------------------------------------------------------------------


def claim(
    repo: git.Repo,
    branch: str,
    base: BaseRef,
    remote: str | None,
    *,
    notes_ref: str = NOTES_REF,
    keep_reviews: bool = False,
) -> BranchState:
    """The branch's state once it is proven gitsleep's to move; raise otherwise.

    UsageError (exit 2): a name gitsleep must not move, or a branch it never made.
    GitError (exit 4): commits it cannot prove it made, anywhere on the branch
    (`keep_reviews=False`, consolidate) or only in this clone (`keep_reviews=True`, harvest).
    Call it holding the branch's `RepoLock`.
    """
    gitops.check_branch_name(repo, branch, base, remote)
    state = gitops.inspect_branch(repo, branch, base.sha, remote, notes_ref)
    gitops.ensure_gitsleep_branch(state)
    if keep_reviews:
        ensure_nothing_unshared(repo, state)
    else:
        gitops.ensure_only_gitsleep_commits(state)
    return state


def unshared_commits(repo: git.Repo, state: BranchState) -> list[gitops.CommitInfo]:
    """Commits gitsleep did not make that only this clone has (none without a remote:
    then nothing is pushed, and a person's commits stay under the appended one)."""
    if state.remote is None:
        return []
    tip = state.remote_tip
    return [c for c in state.foreign_commits if not (tip and is_ancestor(repo, c.sha, tip))]


def ensure_nothing_unshared(repo: git.Repo, state: BranchState) -> None:
    """GitError (exit 4) when appending and pushing would publish a person's local commits."""
    found = unshared_commits(repo, state)
    if not found:
        return
    shown = "; ".join(f"{c.short} {c.subject}" for c in found[:5])
    if len(found) > 5:
        shown += f"; and {len(found) - 5} more"
    raise GitError(
        f"branch {state.name} has {len(found)} commit(s) here that are not on {state.remote} "
        f"and that gitsleep did not make ({shown}); gitsleep keeps pushed reviews but never "
        f"pushes someone's unshared work: push them (`git push {state.remote} {state.name}`) "
        f"or drop them (`git branch -f {state.name} {state.remote}/{state.name}`), and re-run"
    )


def append_start(repo: git.Repo, state: BranchState, base_sha: str) -> str:
    """Where an appending run starts: the newest tip, or the base once the branch is in it.

    The remote tip wins unless the local one is ahead of it (a run whose push failed), so
    a reviewer's pushed commits are built on, never pushed over; gitsleep's own local-only
    commits that diverged are superseded (`claim` refused anyone else's). A branch merged
    into the base starts again from the base: merged by a merge commit, or by "Squash and
    merge" or "Rebase and merge", whose tip is no ancestor of the base (`merged_into`).
    """
    local, remote = state.local_tip, state.remote_tip
    tip = local if local and (remote is None or is_ancestor(repo, remote, local)) else remote
    if tip is None or merged_into(repo, tip, base_sha):
        return base_sha
    return tip


MERGED_LOOKBACK = 200  # the base's newest commits that touch the branch's files, checked


def merged_into(repo: git.Repo, tip: str, base_sha: str) -> bool:
    """Whether every change `tip` made since it left the base's history is in the base.

    An ancestor is merged. A squashed or rebased copy leaves the tip outside the base's
    history, so the test is on content: some commit of the base since the fork, touching
    the files the branch changed (newest first), that merging `tip` into leaves exactly as
    it is (`git merge-tree --write-tree`, git 2.38+). Looking back past the newest such
    commit means later edits on the base (a task a reviewer dropped there) still count
    as merged, while a commit pushed to the branch after the merge (a review) is not in
    any of them, so it is built on. A branch that changed nothing, an older git or no
    common history reads as not merged: then the tip is built on, as before.
    """
    if is_ancestor(repo, tip, base_sha):
        return True
    status, fork, _ = try_git(repo.git, "merge-base", base_sha, tip)
    if status != 0 or not fork.strip():
        return False
    status, changed, _ = try_git(repo.git, "diff", "--no-renames", "--name-only", "-z",
                                 fork.strip(), tip, "--")
    paths = [p for p in changed.split("\0") if p]
    if status != 0 or not paths:
        return False
    status, listed, _ = try_git(repo.git, "--literal-pathspecs", "log", "--format=%H",
                                f"--max-count={MERGED_LOOKBACK}", base_sha, "--not",
                                fork.strip(), "--", *paths)
    candidates = listed.split() if status == 0 else []
    for sha in dict.fromkeys([base_sha, *candidates]):
        status, out, _ = try_git(repo.git, "merge-tree", "--write-tree", sha, tip)
        merged = out.split("\n", 1)[0].strip()
        if status == 0 and merged:
            status, tree, _ = try_git(repo.git, "rev-parse", "--verify", f"{sha}^{{tree}}")
            if status == 0 and tree.strip() == merged:
                return True
    return False


# -- commit, note, push, forge ---------------------------------------------------------


class Note(Protocol):
    """What a commit's note says, rendered once it names the commit and branch it proves
    (`record.with_proof`): an epoch's `report.Diagnostics`, harvest's `JsonNote`."""

    def note_text(self, sha: str, branch: str) -> str: ...


@dataclass(frozen=True)
class JsonNote:
    """A small note (harvest's: which tasks a commit added) as sorted, indented JSON."""

    data: Mapping[str, object]

    def note_text(self, sha: str, branch: str) -> str:
        return json.dumps(with_proof(self.data, sha, branch), indent=2, sort_keys=True,
                          ensure_ascii=False) + "\n"


def attach_note(repo: git.Repo, sha: str, branch: str, note: Note, *,
                notes_ref: str = NOTES_REF) -> None:
    """The note on `sha` that proves gitsleep made it on `branch`."""
    gitops.add_note(repo, sha, note.note_text(sha, branch), notes_ref)


def commit_with_note(repo: git.Repo, tree: Path, branch: str, paths: list[str], message: str,
                     note: Note, *, notes_ref: str = NOTES_REF) -> str:
    """Commit `paths` in the worktree, move `branch` there (compare-and-swap), attach the
    note; return the new commit's sha."""
    sha = gitops.commit_documents(repo, tree, branch, paths, message)
    attach_note(repo, sha, branch, note, notes_ref=notes_ref)
    return sha


def push(
    repo: git.Repo,
    remote: str,
    branch: str,
    state: BranchState,
    *,
    notes_ref: str = NOTES_REF,
    fast_forward: bool = False,
) -> PushResult:
    """Push with a lease on the inspected remote tip, then the notes.

    `fast_forward=True` (harvest) first checks that the new tip contains the remote one, so
    the push can only add commits, or replace a tip whose every change the new commit
    already holds (a pull request merged by squash or rebase: `merged_into`).
    """
    if fast_forward and state.remote_tip:
        local = ref_sha(repo, f"refs/heads/{branch}")
        if local is None or not merged_into(repo, state.remote_tip, local):
            raise GitError(
                f"push of {branch} to {remote} refused: it would drop commits on {remote} "
                f"(its tip {state.remote_tip[:12]} is not in the new commit); nothing was "
                f"pushed. Look at `git log {remote}/{branch}` and re-run"
            )
    return gitops.push(repo, remote, branch, state.remote_tip, notes_ref=notes_ref)


def forge_call(redact: Callable[[str], str], request: Callable[[], T]) -> T:
    """One forge request; a forge library's error becomes one redacted line (GitError,
    exit 4), and gitsleep's own errors pass as they are."""
    try:
        return request()
    except GitsleepError:
        raise
    except Exception as exc:  # noqa: BLE001 - a forge library error must be one line
        raise GitError(f"GitHub API error: {redact(str(exc))[:300]}") from None


def forge_for(env: Mapping[str, str], repo: git.Repo, remote: str
              ) -> tuple[GitHubForge | None, str]:
    """The GitHub client for this remote (the caller closes it), or None and the reason
    there is none."""
    remote_url = repo.remotes[remote].url if remote in [r.name for r in repo.remotes] else None
    settings, why_not = forge.settings_from_env(env, remote_url)
    if settings is None:
        return None, why_not
    return forge.forge_from_env(env, remote_url), ""


# -- the whole order -------------------------------------------------------------------


@dataclass(frozen=True)
class Claimed:
    """A branch proven gitsleep's to move, with the lock on it held: the steps after the
    claim (worktree, commit and note, push, notes, forge) are its methods, so no caller
    reaches them without the steps before."""

    repo: git.Repo
    base: BaseRef
    branch: str
    remote: str | None
    state: BranchState
    notes_ref: str = NOTES_REF

    @property
    def base_name(self) -> str:
        """The base as a pull request names it: its branch, else what was asked for."""
        return self.base.branch or self.base.name

    def worktree(self, start: str) -> AbstractContextManager[Path]:
        """A private worktree of the branch at `start` (the user's checkout is untouched)."""
        return gitops.temporary_worktree(self.repo, self.branch, start)

    def append_start(self) -> str:
        """Where an appending run (harvest) starts: see `append_start`."""
        return append_start(self.repo, self.state, self.base.sha)

    def commit(self, tree: Path, paths: list[str], message: str, note: Note) -> str:
        return commit_with_note(self.repo, tree, self.branch, paths, message, note,
                                notes_ref=self.notes_ref)

    def attach_note(self, sha: str, note: Note) -> None:
        attach_note(self.repo, sha, self.branch, note, notes_ref=self.notes_ref)

    def push(self, *, fast_forward: bool = False) -> PushResult:
        """Push the branch and its notes to the remote (the caller checked there is one)."""
        if self.remote is None:
            raise GitError(f"{self.branch}: no remote to push to")
        return push(self.repo, self.remote, self.branch, self.state,
                    notes_ref=self.notes_ref, fast_forward=fast_forward)

    def push_notes(self) -> str | None:
        """Push the notes alone; None when done, else the one-line reason it failed."""
        if self.remote is None:
            return "no remote"
        return gitops.push_notes(self.repo, self.remote, self.notes_ref)

    def forge(self, env: Mapping[str, str]) -> tuple[GitHubForge | None, str]:
        """The forge client for the remote (the caller closes it), or None and why not."""
        if self.remote is None:
            return None, "the repository has no remote to push to"
        return forge_for(env, self.repo, self.remote)


@contextmanager
def publishing(path: Path, branch: str, lock_name: str, *, base_ref: str | None = None,
               notes_ref: str = NOTES_REF, keep_reviews: bool = False,
               refuse_checkout: str | None = None) -> Iterator[Claimed]:
    """open -> base -> remote -> lock -> claim, in this order, for one branch.

    `refuse_checkout`, when given, is the one-line error (exit 2) for a branch that is the
    checkout itself (said before the claim, whose own advice would not fit).
    """
    repo = gitops.open_repo(path)
    base = gitops.resolve_base(repo, base_ref)
    remote = base.remote or gitops.default_remote(repo, base.branch)
    if refuse_checkout is not None and base.branch == branch:
        raise UsageError(refuse_checkout)
    with RepoLock(repo, lock_name):
        state = claim(repo, branch, base, remote, notes_ref=notes_ref,
                      keep_reviews=keep_reviews)
        yield Claimed(repo, base, branch, remote, state, notes_ref)


@contextmanager
def files_at(path: Path, ref: str, lock_name: str, label: str) -> Iterator[Path]:
    """The files committed at `ref`, in a private detached worktree named `label`, under
    the lock `lock_name` (a dry run at a base: nothing is committed or pushed)."""
    repo = gitops.open_repo(path)
    base = gitops.resolve_base(repo, ref)
    with RepoLock(repo, lock_name), gitops.temporary_worktree(repo, label, base.sha) as tree:
        yield Path(tree)
