"""What a consolidate run must do for a skill, decided once from its branch and inputs.

A branch that already records these inputs is up to date (no model call, no commit); one
whose earlier run was killed after its commit but before its note, its push or its pull
request is finished (the epoch replayed from the response cache); anything else runs a new
epoch. `run.consolidate` asks `plan_recovery` and does what it says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import git

from gitsleep import report
from gitsleep.config import SkillConfig
from gitsleep.core.models import EpochResult, SplitSummary, Task
from gitsleep.git_forge import gitops, record
from gitsleep.git_forge.gitops import BranchState
from gitsleep.git_forge.record import NOTES_REF, Digests
from gitsleep.outcome import Edits, PrResult, SkillSummary, section
from gitsleep.prepare import Setup


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


def plan_recovery(setup: Setup, repo: git.Repo, state: BranchState, digests: Digests,
                  remote: str | None, branch: str, options: GitOptions) -> Recovery:
    """The one place that reads the branch's state to decide what this run does."""
    push = bool(remote and options.push is not False)
    recorded = digests.recorded_in(state.last_trailers)
    commit = state.last_gitsleep_commit
    push_branch = bool(push and state.local_tip and state.local_tip != state.remote_tip)
    add_note = bool(recorded and commit and not state.noted)
    # the branch is on the remote here (not push_branch), so claim's inspect_branch has
    # fetched its notes already: read them, without a second fetch
    push_note = bool(remote is not None and recorded and not push_branch and push and commit
                     and gitops.read_note(repo, commit, NOTES_REF)
                     and not gitops.remote_has_note(repo, remote, commit, fetch=False))
    action: Action = "epoch"
    if recorded:
        unfinished = push_branch or add_note or push_note or pr_missing(
            setup, repo, remote, branch, state, options)
        action = "finish" if unfinished else "up to date"
    return Recovery(action, push, push_branch, add_note, push_note)


def pr_missing(setup: Setup, repo: git.Repo, remote: str | None, branch: str,
               state: BranchState, options: GitOptions) -> bool:
    """An improving recorded epoch whose PR was never opened (a run killed before it)."""
    if options.pr is False or options.push is False or remote is None:
        return False
    if not record.recorded_improvement(state.last_trailers, setup.config.gate.min_delta):
        return False
    from gitsleep.git_forge.publish_sequence import forge_for

    hub, _ = forge_for(setup.env, repo, remote)
    if hub is None:
        return False
    return hub.find_open_pr(branch) is None and hub.find_closed_pr(branch) is None


def recorded_edits(repo: git.Repo, commit: str | None) -> Edits:
    """The edits the epoch at `commit` recorded in its diagnostics note; none when the note
    is missing or unreadable (a note is untrusted input: wrong shapes read as nothing)."""
    text = gitops.read_note(repo, commit) if commit else None
    try:
        note = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return Edits()
    return Edits.from_json(section(note, "edits")) if isinstance(note, dict) else Edits()


def up_to_date(setup: Setup, skill: SkillConfig, branch: str, state: BranchState,
               tasks: list[Task], repo: git.Repo) -> SkillSummary:
    """The summary of an epoch the branch already records, read from its trailers and
    its note's edits."""
    trailers = state.last_trailers

    def recorded(key: str, split: str) -> SplitSummary:
        before, after = record.scores(trailers, key)
        return SplitSummary(before, after, sum(1 for t in tasks if t.split == split))

    agent, optimizer, judge = setup.config.models()
    recorded_result = EpochResult(
        skill=skill.name,
        decision=record.recorded_decision(trailers),
        reason=(f"{branch} already records this base, these tasks and these documents; "
                "nothing to do"),
        metric=trailers.get(record.METRIC, setup.config.gate.metric),
        backend=setup.config.backend, agent_model=agent, optimizer_model=optimizer,
        judge_model=judge, train=SplitSummary(None, None, 0),
        val=recorded(record.VAL, "val"), test=recorded(record.TEST, "test"),
        documents={},
    )
    summary = report.json_summary(recorded_result, branch=branch,
                                  commit=state.last_gitsleep_commit,
                                  pr=PrResult(reason="up to date: its pull request, if one "
                                              "was opened, is unchanged"),
                                  diagnostics_path=None, redactor=setup.redactor)
    # This run decided nothing: it says so and repeats the recorded decision with the
    # recorded edits, never "accepted" beside empty edit lists.
    return summary.as_up_to_date(recorded_edits(repo, state.last_gitsleep_commit))
