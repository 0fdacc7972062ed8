"""Git operations for one epoch: base, branch state, a private worktree, commit, note, push.

`run.py` calls these in order, for one skill:

    repo = open_repo(path); base = resolve_base(repo, args.base)
    with RepoLock(repo, skill):
        check_branch_name(repo, branch, base, remote)  # exit 2: base/current/default, ref clash
        state = inspect_branch(repo, branch, base.sha, remote)  # exit 2: shallow, no history
        ensure_gitsleep_branch(state)                  # exit 2 when gitsleep never made it
        ensure_only_gitsleep_commits(state)            # exit 4 when people committed there
        with temporary_worktree(repo, branch, base.sha) as tree:
            ... the epoch reads and writes documents under `tree` ...
            sha = commit_documents(repo, tree, branch, paths, message)
        add_note(repo, sha, diagnostics_json)          # with_proof: names sha and branch
        push(repo, remote, branch, state.remote_tip)

Every epoch starts from the base, so the branch is the base plus one gitsleep commit. Git
itself runs through `gitsleep.git_forge.gitrun` (no hook or program of the repository runs).

Choices made here, so nobody has to rediscover them:

- The user's checkout is never touched. The epoch works in a *detached* worktree under
  `<git common dir>/gitsleep/worktrees/`; the branch ref `refs/heads/<branch>` is only moved
  at commit time, with a compare-and-swap (`git update-ref <new> <old>`), so a crash or a
  Ctrl-C never leaves the branch pointing at a half-made state, and a branch that someone
  moved meanwhile is not overwritten. Worktree commands pin GIT_DIR, GIT_WORK_TREE and
  GIT_INDEX_FILE, so even a leaked GIT_INDEX_FILE (gitsleep started from a hook) cannot
  reach the user's index.
- A commit counts as gitsleep's only by proof, never by its message: its note under
  `refs/notes/gitsleep` (local, or the remote's fetched into `refs/notes/remotes/<remote>/`)
  names that very commit and branch (`with_proof`), or this clone's reflog of the branch
  shows gitsleep's own `update-ref` moving it there (a run stopped before its note). An
  amended copy of gitsleep's commit keeps subject and trailers but not its sha, so it is
  someone else's, and gitsleep stops instead of overwriting it.
- A branch name gitsleep must not move (the base, the checked-out branch, the remote's
  default branch, a branch it never made) or cannot create (a ref path clash) is refused by
  `check_branch_name` / `ensure_gitsleep_branch` before the epoch.
- Notes live in `refs/notes/gitsleep`. A rejected notes push is fixed by fetching the
  remote notes and `git notes merge -s ours`: two runs never annotate the same commit, so a
  conflict cannot really happen, and `ours` keeps each note one valid JSON document (where
  `cat_sort_uniq` would sort the lines of two JSON documents together).
- In a shallow clone everything works while the gitsleep branch descends from the base;
  when gitsleep would have to compare histories it does not have, it says to fetch them
  (`actions/checkout` with `fetch-depth: 0`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import git

from gitsleep.base.errors import GitError, UsageError
from gitsleep.git_forge import remote_notes
from gitsleep.git_forge.gitrun import (
    git_run,
    harden,
    is_ancestor,
    last_line,
    read_blobs,
    ref_sha,
    run_git,
    try_git,
)
from gitsleep.git_forge.lock import RepoLock, gitsleep_dir, owner_is_dead, owner_record
from gitsleep.git_forge.record import MAX_NOTE_BYTES, NOTES_REF, SKILL, read_trailers

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40
DEFAULT_NAME = "gitsleep"
DEFAULT_EMAIL = "gitsleep@users.noreply.github.com"
SHALLOW_ADVICE = (
    "fetch the full history (`git fetch --unshallow`; in GitHub Actions use "
    "`actions/checkout` with `fetch-depth: 0`)"
)
REFLOG_MARK = "gitsleep: "  # the reflog message of gitsleep's own `update-ref`
_NOTES_LOCK = "_notes"  # not a valid skill name, so it cannot clash with one
_NOTES_PUSH_ATTEMPTS = 5
_UNSET: Any = object()

# Worktrees this process is using right now (a marker with our pid but not listed here was
# left by an earlier process that happened to have the same pid).
_LIVE_TREES: set[Path] = set()


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BaseRef:
    """The commit an epoch starts from.

    `name` is what to call it in messages (the branch, the ref the user gave, or the sha of a
    detached HEAD); `branch` is the branch's short name when the base is a branch (the PR
    base), else None; `remote` is set when the base is a remote-tracking branch.
    """

    name: str
    sha: str
    branch: str | None = None
    remote: str | None = None


@dataclass(frozen=True)
class CommitInfo:
    """One commit on a gitsleep branch, as listed in messages."""

    sha: str
    subject: str
    author: str
    by_gitsleep: bool  # proven (see the module docstring), never guessed from the message
    looks_like_gitsleep: bool = False  # gitsleep's subject and trailer; proves nothing

    @property
    def short(self) -> str:
        return self.sha[:7]


@dataclass(frozen=True)
class BranchState:
    """What the gitsleep branch holds, locally and on the remote, relative to the base.

    `last_gitsleep_commit` is the newest commit gitsleep made since the base on the newer
    tip (the local one when they diverged), and `last_trailers` its trailers (empty when
    there is none): the epoch the branch records.
    """

    name: str
    remote: str | None
    local_tip: str | None
    remote_tip: str | None
    foreign_commits: tuple[CommitInfo, ...] = ()
    last_gitsleep_commit: str | None = None
    last_trailers: dict[str, str] = field(default_factory=dict)
    owned: bool = True  # no branch, or one gitsleep made (exit 2 otherwise)
    noted: bool = False  # the last gitsleep commit has its note (local or the remote's)

    @property
    def exists(self) -> bool:
        return self.local_tip is not None or self.remote_tip is not None


@dataclass(frozen=True)
class PushResult:
    """What `push` did. The branch push either succeeds or raises; notes are best effort."""

    branch_sha: str
    notes_pushed: bool
    notes_error: str | None = None


@dataclass(frozen=True)
class BranchTip:
    """A gitsleep branch found by `list_gitsleep_branches`."""

    branch: str
    local_sha: str | None
    remote_sha: str | None
    remote: str | None

    @property
    def rev(self) -> str:
        """A revision naming its tip (the local branch when there is one)."""
        if self.local_sha:
            return f"refs/heads/{self.branch}"
        return f"refs/remotes/{self.remote}/{self.branch}"


# --- identity ------------------------------------------------------------------------


def identity_config(repo: git.Repo) -> dict[str, str]:
    """`-c` settings that give commits an author when git config has none.

    The user's `user.name` / `user.email` (or the GIT_AUTHOR_* / GIT_COMMITTER_* / EMAIL
    environment) win; only what is missing falls back to gitsleep's own identity.
    """
    settings: dict[str, str] = {}
    name_status, name, _ = try_git(repo.git, "config", "--get", "user.name")
    if (name_status != 0 or not name.strip()) and not (
        os.environ.get("GIT_AUTHOR_NAME") and os.environ.get("GIT_COMMITTER_NAME")
    ):
        settings["user.name"] = DEFAULT_NAME
    email_status, email, _ = try_git(repo.git, "config", "--get", "user.email")
    if (email_status != 0 or not email.strip()) and not (
        os.environ.get("EMAIL")
        or (os.environ.get("GIT_AUTHOR_EMAIL") and os.environ.get("GIT_COMMITTER_EMAIL"))
    ):
        settings["user.email"] = DEFAULT_EMAIL
    return settings


# --- repository and base ------------------------------------------------------------------


def open_repo(path: Path | str) -> git.Repo:
    """Open the repository containing `path`; UsageError when there is none or it is empty."""
    try:
        repo = git.Repo(str(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(
            f"{path} is not inside a git repository (run `git init`, or pass --repo)"
        ) from None
    harden(repo.git)
    if ref_sha(repo, "HEAD") is None:
        raise UsageError(
            f"the git repository at {repo.working_dir} has no commits yet: "
            "commit your skill documents first"
        )
    return repo


def resolve_base(repo: git.Repo, base: str | None) -> BaseRef:
    """The commit to start from: `base` (branch, remote branch, tag or sha) or HEAD.

    Without `base`, the current branch; a detached HEAD (CI checkouts, a rebase in progress)
    uses its commit. A name that is not a commit here is a UsageError naming it.
    """
    if base is None:
        sha = run_git(repo.git, "rev-parse", "--verify", "HEAD^{commit}").strip()
        status, head, _ = try_git(repo.git, "symbolic-ref", "--quiet", "HEAD")
        if status != 0 or not head.startswith("refs/heads/"):  # detached
            return BaseRef(name=sha, sha=sha)
        branch = head.strip().removeprefix("refs/heads/")
        return BaseRef(name=branch, sha=sha, branch=branch)
    if not base.strip() or base.startswith("-"):
        raise UsageError(f"--base {base!r} is not a valid git revision")
    status, out, _ = try_git(
        repo.git, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"
    )
    if status != 0 or not out.strip():
        raise UsageError(
            f"--base {base!r} does not name a commit in this repository "
            "(no such branch, tag or commit; fetch it first?)"
        )
    sha = out.strip()
    _, full, _ = try_git(repo.git, "rev-parse", "--symbolic-full-name", base)
    full = full.strip()
    if full.startswith("refs/heads/"):
        return BaseRef(name=base, sha=sha, branch=full.removeprefix("refs/heads/"))
    if full.startswith("refs/remotes/"):
        rest = full.removeprefix("refs/remotes/")
        for remote in sorted((r.name for r in repo.remotes), key=len, reverse=True):
            if rest.startswith(remote + "/") and rest != f"{remote}/HEAD":
                return BaseRef(
                    name=base, sha=sha, branch=rest.removeprefix(remote + "/"), remote=remote
                )
    return BaseRef(name=base, sha=sha)


def default_remote(repo: git.Repo, base_branch: str | None) -> str | None:
    """Where to push: the base branch's upstream remote, else `origin`, else None."""
    names = {remote.name for remote in repo.remotes}
    if base_branch:
        status, out, _ = try_git(repo.git, "config", "--get", f"branch.{base_branch}.remote")
        if status == 0 and out.strip() in names:
            return out.strip()
    return "origin" if "origin" in names else None


def remotes_all_on_this_machine(folder: Path) -> bool:
    """Whether every remote of the repository at `folder` has a URL that is a folder here
    (a path or `file://`: a throw-away bare repository, as in the demo and tests) rather
    than a host. The URLs are read as written, before any `url.*.insteadOf` rewrite. True
    when there is no remote or no repository (nothing would be pushed anyway)."""
    done = git_run(folder, "config", "--get-regexp", r"^remote\..*\.url$")
    lines = done.out.decode("utf-8", "replace").splitlines() if done.status == 0 else []
    return all(url_on_this_machine(line.partition(" ")[2].strip()) for line in lines)


def url_on_this_machine(url: str) -> bool:
    """A remote URL that names a folder here: a path or `file://`, not `host:path` (git's
    scp-like ssh form) nor any other scheme."""
    if "://" in url:
        return url.startswith("file://")
    return bool(url) and ":" not in url.split("/", 1)[0]


def is_shallow(repo: git.Repo) -> bool:
    """Whether this is a shallow clone (e.g. the default `actions/checkout`)."""
    return run_git(repo.git, "rev-parse", "--is-shallow-repository").strip() == "true"


def check_shallow(repo: git.Repo, base_sha: str | None = None, tips: Iterable[str] = ()) -> bool:
    """Return whether the clone is shallow; raise when a shallow history is not enough.

    A shallow clone works as long as each existing gitsleep branch tip descends from the
    base: the commits in between are then all present. Otherwise comparing the branch with
    the base needs history the clone does not have, and guessing could mistake the base's
    own history for someone's commits on the branch, so this raises UsageError.
    """
    shallow = is_shallow(repo)
    if shallow and base_sha is not None:
        for tip in tips:
            if not is_ancestor(repo, base_sha, tip):
                raise UsageError(
                    f"this clone is shallow and the gitsleep branch ({tip[:7]}) does not start "
                    f"from the base {base_sha[:7]}: gitsleep needs the history between them; "
                    + SHALLOW_ADVICE
                )
    return shallow


# --- the gitsleep branch ------------------------------------------------------------------


def fetch_branch(repo: git.Repo, remote: str, branch: str) -> str | None:
    """Fetch `branch` from `remote` into `refs/remotes/<remote>/<branch>`; return its sha.

    A branch missing on the remote is fine (None), and a stale remote-tracking ref for it is
    deleted, as `git fetch --prune` would. An unreachable remote is a GitError.
    """
    ref = f"refs/heads/{branch}"
    tracking = f"refs/remotes/{remote}/{branch}"
    status, out, err = try_git(repo.git, "ls-remote", remote, ref)
    if status != 0:
        raise GitError(_unreachable(repo, remote, f"cannot read branch {branch} from", err))
    listed = [line.split("\t") for line in out.splitlines() if "\t" in line]
    remote_sha = next((sha for sha, name in listed if name == ref), None)
    if remote_sha is None:
        if ref_sha(repo, tracking):
            run_git(repo.git, "update-ref", "-d", tracking)
        return None
    run_git(repo.git, "fetch", "--quiet", "--no-tags", remote, f"+{ref}:{tracking}")
    return ref_sha(repo, tracking)


_GIT_ADVICE = ("please make sure you have the correct access rights", "and the repository exists")


def _unreachable(repo: git.Repo, remote: str, doing: str, err: str) -> str:
    """One line for a remote git cannot read: the remote and its URL, git's own reason (its
    first line that is not the generic advice git ends with) and what to check."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    reason = next((line for line in lines if not line.lower().startswith(_GIT_ADVICE)),
                  last_line(err)).removeprefix("fatal: ")
    status, url, _ = try_git(repo.git, "remote", "get-url", remote)
    shown = re.sub(r"//[^/@]*@", "//", url.strip()) if status == 0 else "no URL"
    return (f"{doing} remote {remote} ({shown}): {reason}; check the URL "
            f"(`git remote -v`, fix it with `git remote set-url {remote} <url>`) and that "
            f"you can read it (`git ls-remote {remote}`), then re-run")


def _commits(
    repo: git.Repo, base_sha: str, tips: Iterable[str], proven: Iterable[str] = ()
) -> list[CommitInfo]:
    """Commits reachable from `tips` but not from the base, newest first.

    A commit is gitsleep's (`by_gitsleep`) only when its sha is in `proven`.
    """
    tips = list(tips)
    proven = set(proven)
    if not tips:
        return []
    fmt = f"%H%x1f%an%x1f%s%x1f%(trailers:key={SKILL},valueonly)%x1e"
    out = run_git(repo.git, "log", "--topo-order", f"--format={fmt}", *tips, "--not", base_sha,
                  "--")
    commits = []
    for record in out.split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 4:
            continue
        sha, author, subject, skill = parts
        looks = subject.startswith("gitsleep(") and bool(skill.strip())
        commits.append(CommitInfo(sha=sha, subject=subject, author=author,
                                  by_gitsleep=sha in proven, looks_like_gitsleep=looks))
    return commits


# --- proof that a commit is gitsleep's ----------------------------------------------------


def _tracking_notes(remote: str, ref: str = NOTES_REF) -> str:
    return remote_notes.tracking_ref(remote, _notes_ref(ref))


def _fetch_notes(repo: git.Repo, remote: str, ref: str = NOTES_REF) -> bool:
    """Fetch the remote's notes into the tracking notes ref; False when it has none."""
    return remote_notes.fetch(Path(str(repo.working_dir)), remote, _notes_ref(ref))


def _noted(repo: git.Repo, branch: str, shas: Iterable[str], remote: str | None,
           notes_ref: str = NOTES_REF) -> set[str]:
    """The commits among `shas` whose note (local or the remote's) proves them gitsleep's."""
    wanted = set(shas)
    found: set[str] = set()
    notes_ref = _notes_ref(notes_ref)
    refs = [notes_ref] + ([_tracking_notes(remote, notes_ref)] if remote else [])
    for ref in refs:
        status, out, _ = try_git(repo.git, "notes", f"--ref={ref}", "list")
        if status != 0:
            continue
        pairs = (line.split() for line in out.splitlines())
        annotated = {pair[1]: pair[0] for pair in pairs if len(pair) == 2}  # commit -> blob
        shas = sorted((wanted - found) & annotated.keys())
        notes = read_blobs(Path(str(repo.working_dir)), [annotated[sha] for sha in shas],
                           MAX_NOTE_BYTES)
        for sha in shas:
            text = notes[annotated[sha]]
            try:
                note = json.loads(text) if text is not None else None
            except (ValueError, RecursionError):  # a forged note: too deeply nested
                note = None
            if isinstance(note, dict) and note.get("commit") == sha \
                    and note.get("branch") == branch:
                found.add(sha)
    return found


def _made_here(repo: git.Repo, branch: str) -> set[str]:
    """Commits gitsleep's own `update-ref` moved `branch` to in this clone (its reflog)."""
    status, out, _ = try_git(repo.git, "reflog", "show", "--format=%H%x1f%gs",
                              f"refs/heads/{branch}", "--")
    if status != 0:
        return set()
    return {sha for sha, _, message in (line.partition("\x1f") for line in out.splitlines())
            if message.startswith(REFLOG_MARK)}


def proof_of(repo: git.Repo, branch: str, sha: str, remote: str | None,
             notes_ref: str = NOTES_REF) -> str | None:
    """How gitsleep knows it made `sha` on `branch`: "note", "reflog" or None (not proven).

    Offline: reads the local notes, the remote's notes as last fetched, and the reflog.
    """
    if sha in _noted(repo, branch, [sha], remote, notes_ref):
        return "note"
    return "reflog" if sha in _made_here(repo, branch) else None


def inspect_branch(repo: git.Repo, branch: str, base_sha: str, remote: str | None,
                   notes_ref: str = NOTES_REF) -> BranchState:
    """Look at the gitsleep branch locally and (after fetching it) on `remote`.

    Lists every commit since the base on either tip that gitsleep cannot prove it made, so
    the caller can stop before overwriting someone's work (`ensure_only_gitsleep_commits`).
    In a shallow clone, raises UsageError when the histories cannot be compared. Proof is
    read from `notes_ref` (harvest keeps its notes apart from the epochs' diagnostics).
    """
    local_tip = ref_sha(repo, f"refs/heads/{branch}")
    remote_tip = fetch_branch(repo, remote, branch) if remote else None
    tips = [tip for tip in dict.fromkeys((local_tip, remote_tip)) if tip]
    check_shallow(repo, base_sha, tips)
    if remote and remote_tip:
        _fetch_notes(repo, remote, notes_ref)  # proof for commits another clone made

    # the newer tip when one contains the other; the local one when they diverged
    tip = local_tip or remote_tip
    if local_tip and remote_tip and local_tip != remote_tip \
            and is_ancestor(repo, local_tip, remote_tip):
        tip = remote_tip

    listed = _commits(repo, base_sha, tips)
    made_here = _made_here(repo, branch) if local_tip else set()
    noted = _noted(repo, branch, [c.sha for c in listed] + tips, remote, notes_ref)
    proven = noted | made_here
    all_commits = [replace(c, by_gitsleep=c.sha in proven) for c in listed]
    on_tip = _commits(repo, base_sha, [tip], proven) if tip and len(tips) > 1 else all_commits
    ours = tuple(c for c in on_tip if c.by_gitsleep)
    # gitsleep made this branch: its reflog says so, a tip is proven its own (with nothing
    # since the base when its pull request was merged), or a commit is or looks like its own
    # (an amended copy: `ensure_only_gitsleep_commits` then lists it as a person's, exit 4)
    owned = not tips or bool(made_here) or any(t in proven for t in tips) or any(
        c.by_gitsleep or c.looks_like_gitsleep for c in all_commits)
    return BranchState(
        name=branch,
        remote=remote,
        local_tip=local_tip,
        remote_tip=remote_tip,
        foreign_commits=tuple(c for c in all_commits if not c.by_gitsleep),
        last_gitsleep_commit=ours[0].sha if ours else None,
        last_trailers=read_trailers(repo, ours[0].sha) if ours else {},
        owned=owned,
        noted=bool(ours) and ours[0].sha in noted,
    )


def _refs_here(repo: git.Repo, remote: str | None) -> list[str]:
    roots = ["refs/heads"] + ([f"refs/remotes/{remote}"] if remote else [])
    return run_git(repo.git, "for-each-ref", "--format=%(refname)", *roots).splitlines()


def _remote_heads(repo: git.Repo, remote: str) -> tuple[str | None, list[str]]:
    """(the remote's default branch, its branch refs); (None, []) when it cannot be read."""
    status, out, _ = try_git(repo.git, "ls-remote", "--symref", remote, "HEAD", "refs/heads/*")
    if status != 0:
        return None, []  # unreachable: `inspect_branch` says so in git's words
    default = None
    heads = []
    for line in out.splitlines():
        left, _, name = line.partition("\t")
        if left.startswith("ref: ") and name == "HEAD":
            default = left.removeprefix("ref: ").removeprefix("refs/heads/")
        elif name.startswith("refs/heads/"):
            heads.append(name)
    return default, heads


def _clash(ref: str, existing: Iterable[str]) -> str | None:
    """An existing ref that makes `ref` impossible to create (git's directory/file rule)."""
    for name in existing:
        if ref.startswith(name + "/") or name.startswith(ref + "/"):
            return name
    return None


def check_branch_name(repo: git.Repo, branch: str, base: BaseRef, remote: str | None) -> None:
    """UsageError (exit 2) when `branch` is not a name gitsleep may move or create.

    Refused: the base branch, the branch checked out here, the remote's default branch, and
    a name that clashes with an existing ref path (`gitsleep` vs `gitsleep/x`, either way),
    which git itself would refuse at commit or push time, after the epoch's model calls.
    A branch gitsleep did not make is refused by `ensure_gitsleep_branch`.
    """
    ref = f"refs/heads/{branch}"
    status, current, _ = try_git(repo.git, "symbolic-ref", "--quiet", "HEAD")
    remote_default, remote_heads = _remote_heads(repo, remote) if remote else (None, [])
    if not remote_default and remote:
        status_local, head, _ = try_git(repo.git, "symbolic-ref", "--quiet",
                                         f"refs/remotes/{remote}/HEAD")
        if status_local == 0:
            remote_default = head.strip().removeprefix(f"refs/remotes/{remote}/")
    why = None
    if branch == base.branch:
        why = f"it is the base branch ({base.name})"
    elif status == 0 and current.strip() == ref:
        why = "it is the branch checked out here"
    elif remote_default and branch == remote_default:
        why = f"it is the default branch of {remote}"
    if why:
        raise UsageError(
            f"the branch for this skill would be {branch!r} (branch_prefix + skill name), which "
            f"is not gitsleep's: {why}, and gitsleep never moves it; set another branch_prefix "
            "in .gitsleep.yml (e.g. gitsleep/)"
        )
    local = _refs_here(repo, remote)
    tracking = f"refs/remotes/{remote}/{branch}" if remote else None
    clashes = [
        (_clash(ref, [n for n in local if n.startswith("refs/heads/")]), ref, "here"),
        (_clash(ref, remote_heads), ref, f"on {remote}"),
        (_clash(tracking, [n for n in local if not n.startswith("refs/heads/")])
         if tracking else None, tracking, "here"),
    ]
    for existing, wanted, where in clashes:
        if existing:
            raise UsageError(
                f"cannot use branch {branch!r} (branch_prefix + skill name): git refuses it "
                f"because '{existing}' exists; cannot create '{wanted}' ({where}); rename or "
                "delete that ref, or set another branch_prefix in .gitsleep.yml"
            )


def ensure_gitsleep_branch(state: BranchState) -> None:
    """UsageError (exit 2) when the branch exists and gitsleep never made it.

    A branch counts as gitsleep's when one of its tips or commits since the base is proven
    gitsleep's, this clone's reflog shows gitsleep moved it, or a commit on it carries
    gitsleep's subject and trailer (an amended copy: then `ensure_only_gitsleep_commits`
    lists it as a human commit, exit 4). Either way nothing is moved.
    """
    if state.owned:
        return
    where = " and ".join(
        ([f"here at {state.local_tip[:7]}"] if state.local_tip else [])
        + ([f"on {state.remote} at {state.remote_tip[:7]}"] if state.remote_tip else []))
    raise UsageError(
        f"branch {state.name!r} (branch_prefix + skill name) exists {where} and is not "
        "gitsleep's: gitsleep never made a commit on it and will not move it; set another "
        "branch_prefix in .gitsleep.yml, or delete that branch if it is a leftover"
    )


def ensure_only_gitsleep_commits(state: BranchState) -> None:
    """Raise GitError (exit 4) when the branch has commits gitsleep did not make.

    The message lists them (short sha and subject) and says how to go on.
    """
    if not state.foreign_commits:
        return
    shown = "; ".join(f"{c.short} {c.subject}" for c in state.foreign_commits[:5])
    more = len(state.foreign_commits) - 5
    if more > 0:
        shown += f"; and {more} more"
    where = [state.name] if state.local_tip else []
    if state.remote_tip:
        where.append(f"{state.remote}/{state.name}")
    delete = f"`git branch -D {state.name}`" if state.local_tip else ""
    if state.remote_tip:
        delete += (" and " if delete else "") + f"`git push {state.remote} --delete {state.name}`"
    if any(c.looks_like_gitsleep for c in state.foreign_commits):
        shown += ("; a commit that reads like gitsleep's but is not the one it made (amended or "
                  "copied) counts as yours")
    raise GitError(
        f"branch {' / '.join(where)} has {len(state.foreign_commits)} commit(s) since the base "
        f"that gitsleep did not make ({shown}); gitsleep never overwrites them. To go on, "
        f"merge that branch (e.g. its pull request) and re-run, or delete it ({delete}), "
        "or set another branch_prefix in .gitsleep.yml"
    )


def list_gitsleep_branches(
    repo: git.Repo, prefix: str, remote: str | None = None
) -> list[BranchTip]:
    """Branches named `<prefix>...`, local and remote-tracking (from `remote`, default origin).

    Reads refs only (no fetch), so `gitsleep status` stays offline.
    """
    remote = remote or default_remote(repo, None)
    local_root = f"refs/heads/{prefix}"
    remote_root = f"refs/remotes/{remote}/{prefix}" if remote else None
    out = run_git(repo.git, "for-each-ref", "--format=%(refname)%00%(objectname)")
    found: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        name, _, sha = line.partition("\x00")
        if name.startswith(local_root):
            found.setdefault(name.removeprefix("refs/heads/"), {})["local"] = sha
        elif remote_root and name.startswith(remote_root):
            found.setdefault(name.removeprefix(f"refs/remotes/{remote}/"), {})["remote"] = sha
    return [
        BranchTip(
            branch=branch,
            local_sha=shas.get("local"),
            remote_sha=shas.get("remote"),
            remote=remote if shas.get("remote") else None,
        )
        for branch, shas in sorted(found.items())
    ]


# --- the temporary worktree ---------------------------------------------------------------


def _worktrees_root(repo: git.Repo) -> Path:
    return gitsleep_dir(repo) / "worktrees"


def _admin_dir(tree: Path) -> Path | None:
    """The worktree's private git dir (`<common>/worktrees/<name>`), from its `.git` file."""
    try:
        text = (tree / ".git").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    return (tree / text.removeprefix("gitdir:").strip()).resolve()


def _worktree_git(tree: Path) -> git.Git:
    """A git runner bound to `tree` alone: its git dir, work tree and index, nothing else."""
    admin = _admin_dir(tree)
    if admin is None:
        raise GitError(f"{tree} is not a git worktree")
    common = (admin / (admin / "commondir").read_text(encoding="utf-8").strip()).resolve()
    runner = harden(git.Git(str(tree)))
    runner.update_environment(
        GIT_DIR=str(admin),
        GIT_COMMON_DIR=str(common),
        GIT_WORK_TREE=str(tree),
        GIT_INDEX_FILE=str(admin / "index"),
    )
    return runner


def _checked_out_in(repo: git.Repo, branch: str) -> str | None:
    """The path of a worktree that has `branch` checked out, if any."""
    out = run_git(repo.git, "worktree", "list", "--porcelain")
    path = None
    for line in out.splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def refuse_if_checked_out(repo: git.Repo, branch: str) -> None:
    """GitError when `branch` is checked out in a worktree: moving it would desync that tree."""
    path = _checked_out_in(repo, branch)
    if path is not None:
        raise GitError(
            f"branch {branch} is checked out in {path}; gitsleep moves that branch itself and "
            "will not move it under a working tree: switch to another branch there "
            "(e.g. `git switch main`) and re-run"
        )


def _remove_tree(repo: git.Repo, tree: Path) -> None:
    """Remove one of our worktrees and its admin dir; never prunes anyone else's."""
    admin = _admin_dir(tree)
    if tree.exists():
        try_git(repo.git, "worktree", "remove", "--force", "--force", str(tree))
    if tree.exists():
        shutil.rmtree(tree, ignore_errors=True)
    if admin is not None and admin.is_dir() and admin.parent.name == "worktrees":
        shutil.rmtree(admin, ignore_errors=True)


def _marker_is_stale(tree: Path, marker: Path) -> bool:
    try:
        owner = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False  # removed by its owner meanwhile
    except ValueError:
        return True
    if isinstance(owner, dict) and owner.get("pid") == os.getpid():
        return tree not in _LIVE_TREES
    return owner_is_dead(owner)


def cleanup_stale_worktrees(repo: git.Repo) -> list[Path]:
    """Remove worktrees left by gitsleep runs that died (SIGKILL, power loss); return them.

    Each worktree `<root>/<id>` has a marker `<root>/<id>.json` naming its owner, written
    before the worktree exists and removed after it is gone; a worktree whose owner process
    is dead, or that has no marker, is stale. Git's admin dirs that point into our root at a
    directory that no longer exists are removed too (but only ours: no global prune).
    """
    root = _worktrees_root(repo)
    removed: list[Path] = []
    if root.is_dir():
        for marker in sorted(root.glob("*.json")):
            tree = root / marker.stem
            if _marker_is_stale(tree, marker):
                _remove_tree(repo, tree)
                marker.unlink(missing_ok=True)
                removed.append(tree)
        for tree in sorted(root.iterdir()):
            if tree.is_dir() and not tree.with_name(tree.name + ".json").exists():
                _remove_tree(repo, tree)
                removed.append(tree)
    admin_root = Path(repo.common_dir).resolve() / "worktrees"
    if admin_root.is_dir():
        for admin in sorted(admin_root.iterdir()):
            if (admin / "locked").exists():  # `git worktree add` still at work
                continue
            try:
                gitfile = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
            except OSError:
                continue
            target = (admin / gitfile).resolve().parent  # an absolute gitfile stays as is
            if target.parent == root.resolve() and not target.exists():
                shutil.rmtree(admin, ignore_errors=True)
    return removed


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "branch"


@contextmanager
def temporary_worktree(repo: git.Repo, branch: str, start: str) -> Iterator[Path]:
    """A private worktree checked out (detached) at `start`, removed afterwards.

    `start` is the base commit. The worktree is detached on purpose: `refs/heads/<branch>`
    moves only in `commit_documents`, so the branch never points at a half-made state. The
    user's working tree, index, stash, HEAD and untracked files are not touched. Removal
    happens on exceptions and Ctrl-C as well; worktrees left by killed runs are cleaned up
    when the next one starts. Call it while holding the skill's `RepoLock`. GitError when
    `branch` is checked out somewhere.
    """
    start_sha = ref_sha(repo, start)
    if start_sha is None:
        raise GitError(f"cannot create a worktree at {start!r}: no such commit")
    refuse_if_checked_out(repo, branch)
    cleanup_stale_worktrees(repo)
    root = _worktrees_root(repo)
    root.mkdir(parents=True, exist_ok=True)
    run_id = f"{_slug(branch)}-{uuid.uuid4().hex[:8]}"
    tree = root / run_id
    marker = root / f"{run_id}.json"
    branch_tip = ref_sha(repo, f"refs/heads/{branch}")
    marker.write_text(
        json.dumps(owner_record(branch=branch, start=start_sha, branch_tip=branch_tip)),
        encoding="utf-8",
    )
    _LIVE_TREES.add(tree)
    try:
        # --no-checkout: files are written by `reset` below, with our index pinned, and
        # no post-checkout hook runs.
        run_git(repo.git, "worktree", "add", "--detach", "--no-checkout", str(tree), start_sha)
        run_git(_worktree_git(tree), "reset", "--hard", "--quiet", start_sha)
        yield tree
    finally:
        try:
            _remove_tree(repo, tree)
        finally:
            marker.unlink(missing_ok=True)
            _LIVE_TREES.discard(tree)


# --- commit, note, push -------------------------------------------------------------------


def _repo_relative(path: str) -> str:
    posix = PurePosixPath(str(path).replace("\\", "/"))
    if posix.is_absolute() or not posix.parts or ".." in posix.parts:
        raise UsageError(f"{path!r} is not a path inside the repository")
    return posix.as_posix()


def _expected_branch_tip(tree: Path, branch: str) -> str | None | Any:
    """The branch tip recorded when `temporary_worktree` made this tree, if it did."""
    try:
        owner = json.loads(tree.with_name(tree.name + ".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _UNSET
    if not isinstance(owner, dict) or owner.get("branch") != branch:
        return _UNSET
    return owner.get("branch_tip")


def commit_documents(
    repo: git.Repo,
    worktree: Path,
    branch: str,
    paths: list[str],
    message: str,
    *,
    expected_tip: str | None = _UNSET,
) -> str:
    """Commit exactly `paths` (repo-relative) in `worktree`, move `branch` there; return the sha.

    Uses `git commit` (so `commit.gpgsign` and identity config apply; gitsleep's identity
    only fills in what is missing) with hooks skipped, and keeps the message as written
    (`--cleanup=whitespace`, so Markdown `#` lines survive). The branch moves with a
    compare-and-swap from `expected_tip` (default: its value when the worktree was made;
    None = must not exist); if someone moved it meanwhile, GitError and nothing is lost.
    """
    relative = list(dict.fromkeys(_repo_relative(p) for p in paths))
    if not relative:
        raise UsageError("no documents to commit")
    runner = _worktree_git(worktree)
    run_git(runner, "--literal-pathspecs", "add", "--", *relative)
    staged = run_git(runner, "--literal-pathspecs", "diff", "--cached", "--no-ext-diff",
                  "--no-textconv", "--name-only", "--", *relative)
    if not staged.strip():
        raise GitError(f"nothing to commit: {', '.join(relative)} did not change")
    handle, message_path = tempfile.mkstemp(prefix="gitsleep-commit-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(message.rstrip("\n") + "\n")
        run_git(
            runner,
            "--literal-pathspecs",
            "commit",
            "--quiet",
            "--no-verify",
            "--cleanup=whitespace",
            "-F",
            message_path,
            "--",
            *relative,
            config=identity_config(repo),
        )
    finally:
        os.unlink(message_path)
    new_sha = run_git(runner, "rev-parse", "HEAD").strip()

    if expected_tip is _UNSET:
        expected_tip = _expected_branch_tip(worktree, branch)
    if expected_tip is _UNSET:
        expected_tip = ref_sha(repo, f"refs/heads/{branch}")
    refuse_if_checked_out(repo, branch)
    subject = message.strip().splitlines()[0] if message.strip() else "gitsleep"
    status, _, err = try_git(
        repo.git,
        "update-ref",
        "--create-reflog",  # the reflog entry proves the commit is gitsleep's until its note
        "-m",
        f"{REFLOG_MARK}{subject}",
        f"refs/heads/{branch}",
        new_sha,
        expected_tip or ZERO_SHA,
    )
    if status != 0:
        found = ref_sha(repo, f"refs/heads/{branch}")
        raise GitError(
            f"branch {branch} moved while gitsleep ran (expected "
            f"{expected_tip[:7] if expected_tip else 'no branch'}, found "
            f"{found[:7] if found else 'no branch'}); it was left alone. The new commit is "
            f"{new_sha}: keep it with `git branch <name> {new_sha[:12]}` ({last_line(err)})"
        )
    return new_sha


def _notes_ref(ref: str) -> str:
    return ref if ref.startswith("refs/") else f"refs/notes/{ref}"


def add_note(repo: git.Repo, sha: str, text: str, ref: str = NOTES_REF) -> None:
    """Attach `text` to commit `sha` as a note under `ref`, byte for byte (replacing one).

    The text goes in as a blob (`git notes add -C`), so git does not reflow it. Local notes
    updates from concurrent gitsleep processes are serialised with a short lock.
    """
    ref = _notes_ref(ref)
    handle, note_path = tempfile.mkstemp(prefix="gitsleep-note-", suffix=".txt")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
        blob = run_git(repo.git, "hash-object", "-w", "--no-filters", note_path).strip()
    finally:
        os.unlink(note_path)
    with RepoLock(repo, _NOTES_LOCK, wait=60):
        run_git(
            repo.git, "notes", f"--ref={ref}", "add", "-f", "-C", blob, sha,
            config=identity_config(repo),
        )


def read_note(repo: git.Repo, sha: str, ref: str = NOTES_REF) -> str | None:
    """The note on `sha` under `ref`, exactly as stored, or None (none, or over
    MAX_NOTE_BYTES: anyone who can push can write a note, and one that large is not
    gitsleep's; `log` skips it too)."""
    status, blob, _ = try_git(repo.git, "notes", f"--ref={_notes_ref(ref)}", "list", sha)
    if status != 0 or not blob:
        return None
    text = read_blobs(Path(str(repo.working_dir)), [blob], MAX_NOTE_BYTES)[blob]
    return None if text is None else text.decode("utf-8", "surrogateescape")


def _push_notes(repo: git.Repo, remote: str, ref: str) -> str | None:
    """Push the notes ref; on rejection merge the remote's notes in and retry. None = done."""
    tracking = _tracking_notes(remote, ref)
    error = "not attempted"
    with RepoLock(repo, _NOTES_LOCK, wait=60):
        for attempt in range(_NOTES_PUSH_ATTEMPTS):
            status, _, err = try_git(repo.git, "push", "--quiet", remote, f"{ref}:{ref}")
            if status == 0:
                return None
            error = last_line(err)
            time.sleep(0.05 * attempt)
            status, _, err = try_git(
                repo.git, "fetch", "--quiet", "--no-tags", remote, f"+{ref}:{tracking}"
            )
            if status != 0:
                error = last_line(err)
                continue
            status, _, err = try_git(
                repo.git, "notes", f"--ref={ref}", "merge", "--quiet", "--strategy=ours",
                tracking, config=identity_config(repo),
            )
            if status != 0:
                error = last_line(err)
    return error


def remote_has_note(repo: git.Repo, remote: str, sha: str, ref: str = NOTES_REF, *,
                    fetch: bool = True) -> bool:
    """Whether the remote's notes ref holds a note for `sha` (a run killed while pushing
    notes leaves the branch pushed but the note behind). Fetches into the tracking ref
    first, unless the caller knows it was just fetched (`inspect_branch` does, whenever
    the remote has the branch)."""
    ref = _notes_ref(ref)
    if fetch and not _fetch_notes(repo, remote, ref):
        return False  # no notes ref on the remote (or unreachable): push will say which
    status, _, _ = try_git(repo.git, "notes", f"--ref={_tracking_notes(remote, ref)}",
                            "list", sha)
    return status == 0


def push_notes(repo: git.Repo, remote: str, ref: str = NOTES_REF) -> str | None:
    """Push only the notes ref (merging the remote's); None when done, else the error."""
    return _push_notes(repo, remote, _notes_ref(ref))


def push(
    repo: git.Repo,
    remote: str,
    branch: str,
    expected_remote_tip: str | None,
    *,
    notes_ref: str = NOTES_REF,
) -> PushResult:
    """Push `branch` with a lease, then the notes.

    The lease (`--force-with-lease=refs/heads/<branch>:<expected>`, empty = must not exist)
    means gitsleep only replaces what it saw, i.e. its own commits checked by
    `inspect_branch`. A rejected branch push is a GitError (exit 4) and the local branch
    keeps the commit. The notes push is best effort: failures are logged and reported in
    the result, since the commit and its pull request matter more than the diagnostics.
    """
    ref = f"refs/heads/{branch}"
    local_sha = ref_sha(repo, ref)
    if local_sha is None:
        raise GitError(f"cannot push {branch}: there is no such local branch")
    lease = f"--force-with-lease={ref}:{expected_remote_tip or ''}"
    status, out, err = try_git(repo.git, "push", "--porcelain", lease, remote, f"{ref}:{ref}")
    if status != 0:
        details = f"{out}\n{err}"
        if "stale info" in details or "fetch first" in details or "non-fast-forward" in details:
            raise GitError(
                f"push of {branch} to {remote} rejected: the remote branch changed since "
                f"gitsleep read it (someone else pushed). Nothing was overwritten; the local "
                f"branch {branch} keeps the new commit {local_sha[:12]}. Look at "
                f"`git fetch {remote} && git log {remote}/{branch}` and re-run"
            )
        raise GitError(
            f"push of {branch} to {remote} failed: {last_line(err or out)}; the local branch "
            f"{branch} keeps the new commit {local_sha[:12]}"
        )
    notes_ref = _notes_ref(notes_ref)
    if ref_sha(repo, notes_ref) is None:
        return PushResult(branch_sha=local_sha, notes_pushed=False)
    notes_error = _push_notes(repo, remote, notes_ref)
    if notes_error is not None:
        log.warning("gitsleep: could not push %s to %s: %s", notes_ref, remote, notes_error)
    return PushResult(
        branch_sha=local_sha, notes_pushed=notes_error is None, notes_error=notes_error
    )
