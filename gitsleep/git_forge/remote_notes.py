"""The remote's diagnostics notes, fetched read-only for `status` and `log`.

`git clone` fetches branches but not notes, so a teammate's fresh clone could not prove
gitsleep made its branch tip and listed no superseded epoch until someone fetched
`refs/notes/gitsleep` by hand. These helpers fetch the remote's notes into
`refs/notes/remotes/<remote>/gitsleep` (the ref `consolidate` already uses for proof), so
this clone's own notes ref, its branches and the remote are never changed.
"""

from __future__ import annotations

from pathlib import Path

from gitsleep.git_forge.gitrun import git_out, git_run
from gitsleep.git_forge.record import NOTES_REF

FETCH_TIMEOUT = 60  # seconds: `status` and `log` must not hang on an unreachable remote


def tracking_ref(remote: str, ref: str = NOTES_REF) -> str:
    """Where the remote's notes `ref` are kept: `refs/notes/remotes/<remote>/gitsleep`."""
    return f"refs/notes/remotes/{remote}/{ref.removeprefix('refs/notes/')}"


def tracking_refs(repo: Path) -> list[str]:
    """Every remote's notes as last fetched, in ref order."""
    suffix = "/" + NOTES_REF.removeprefix("refs/notes/")
    out = git_out(repo, "for-each-ref", "--format=%(refname)", "refs/notes/remotes/")
    return [ref for ref in out.split() if ref.endswith(suffix)]


def default_remote(repo: Path) -> str | None:
    """The current branch's upstream remote, else `origin`, else None (as `consolidate`)."""
    remotes = set(git_out(repo, "remote").split())
    branch = git_out(repo, "symbolic-ref", "--quiet", "--short", "HEAD").strip()
    upstream = git_out(repo, "config", "--get", f"branch.{branch}.remote").strip() \
        if branch else ""
    if upstream in remotes:
        return upstream
    return "origin" if "origin" in remotes else None


def fetch(repo: Path, remote: str | None = None, ref: str = NOTES_REF) -> bool:
    """Fetch the remote's notes `ref` into their tracking ref; False when there is no
    remote, it has no notes, or it cannot be reached (then the last fetched notes stay).
    Every notes fetch goes through here (consolidate's proof too)."""
    remote = remote or default_remote(repo)
    if not remote:
        return False
    done = git_run(repo, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
                   f"+{ref}:{tracking_ref(remote, ref)}", timeout=FETCH_TIMEOUT,
                   env={"GIT_TERMINAL_PROMPT": "0"})
    return done.status == 0
