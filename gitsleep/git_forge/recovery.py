"""What a consolidate run must do for a skill, decided once from its branch and inputs.

A branch that already records these inputs is up to date (no model call, no commit); one
whose earlier run was killed after its commit but before its note, its push or its pull
request is finished (the epoch replayed from the response cache); anything else runs a new
epoch. `run.consolidate` asks `plan_recovery` and does what it says.

Whether the recorded epoch asked for a pull request is read as data, the note's
`extra.pull_request` (`open` or `skip`, `record.recorded_pr`); a branch written before
gitsleep recorded it falls back to the trailers' scores. This module imports nothing above
`git_forge`: the run's summary of an up-to-date branch is built in `run.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gitsleep.git_forge import gitops, record
from gitsleep.git_forge.publish_sequence import Claimed
from gitsleep.git_forge.record import NOTES_REF, Digests


@dataclass
class GitOptions:
    base: str | None = None
    push: bool | None = None  # None: push when a remote exists
    pr: bool | None = None  # None: open PRs when a forge token is available
    output_dir: Path | None = None
    # why the branch is not pushed though nobody passed --no-push (a simulated night)
    local_reason: str | None = None


Action = Literal["up to date", "finish", "epoch"]


@dataclass(frozen=True)
class Recovery:
    """What this run must do for a skill, decided once from its branch and its inputs.

    `action` is "up to date" (the branch records these inputs and nothing is left to
    finish: no model call, no commit), "finish" (it records them, but an earlier run was
    killed before its note, push or pull request: the epoch is replayed from the response
    cache to finish that work) or "epoch" (run a new one). The flags say what is left.
    """

    action: Action
    push: bool  # a remote exists and pushing is on
    push_branch: bool  # the local branch holds a commit the remote lacks
    add_note: bool  # the recorded commit has no note (a run stopped between commit and note)
    push_note: bool  # its note is only local (a run killed while pushing notes)


def plan_recovery(claimed: Claimed, digests: Digests, options: GitOptions, *,
                  env: Mapping[str, str], min_delta: float) -> Recovery:
    """The one place that reads the branch's state to decide what this run does.

    `env` finds the forge client (is the pull request open?); `min_delta` is the gate's,
    for a branch whose note records no pull-request decision (`record.recorded_pr`).
    """
    repo, state, remote = claimed.repo, claimed.state, claimed.remote
    push = bool(remote and options.push is not False)
    recorded = digests.recorded_in(state.last_trailers)
    commit = state.last_gitsleep_commit
    push_branch = bool(push and state.local_tip and state.local_tip != state.remote_tip)
    add_note = bool(recorded and commit and not state.noted)
    note = gitops.read_note(repo, commit, NOTES_REF) if recorded and commit else None
    # the branch is on the remote here (not push_branch), so claim's inspect_branch has
    # fetched its notes already: read them, without a second fetch
    push_note = bool(remote is not None and note and not push_branch and push and commit
                     and not gitops.remote_has_note(repo, remote, commit, fetch=False))
    action: Action = "epoch"
    if recorded:
        asked = record.recorded_pr(note, state.last_trailers, min_delta)
        unfinished = push_branch or add_note or push_note or (
            asked and pr_missing(claimed, options, env))
        action = "finish" if unfinished else "up to date"
    return Recovery(action, push, push_branch, add_note, push_note)


def pr_missing(claimed: Claimed, options: GitOptions, env: Mapping[str, str]) -> bool:
    """A pull request the recorded epoch asked for was never opened (a run killed before
    it): none open and none closed for the branch."""
    if options.pr is False or options.push is False or claimed.remote is None:
        return False
    hub, _ = claimed.forge(env)
    if hub is None:
        return False
    try:
        return hub.find_open_pr(claimed.branch) is None and \
            hub.find_closed_pr(claimed.branch) is None
    finally:
        hub.close()
