"""What `gitsleep status` says about each skill: its branch, the last night's decision,
whether the base already holds it, and whether the next night would run.

"Merged" is decided on content, as the publish sequence decides it (`merged_into`): a
merge commit, a fast-forward, "Squash and merge" and "Rebase and merge" all leave the
epoch's changes in the base. Standing on the gitsleep branch itself is none of those: the
base is the branch, so status says so and how to name the real base.

A skill without a branch (a night that committed nothing, or a merged branch that was
deleted) is described by its last night: the epochs `gitsleep log` reads from git, and
this clone's newest run folder, which also records the nights that committed nothing.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import git

from gitsleep.base.hostile_text import INVISIBLE
from gitsleep.core import markdown as md
from gitsleep.flows.prepare import Setup, read_inputs
from gitsleep.git_forge import gitops, history, record, remote_notes
from gitsleep.git_forge.gitrun import git_run
from gitsleep.git_forge.publish_sequence import merged_into, skill_branch
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import SkillConfig

_RUN_STAMP = re.compile(r"-(\d{8}T\d{6})\d*Z$")  # `<skill>-20261128T154012123456Z`
_MAX_REASON = 200  # characters of a recorded reason shown on the status line


@dataclass(frozen=True)
class LastNight:
    """The newest night recorded for a skill: when, what it decided, and where it is
    recorded ("base": merged; "superseded": its commit is on no branch; "run": only this
    clone's run folder, a night that committed nothing)."""

    date: str  # `2026-11-28 15:40` (UTC), or "?" when unknown
    decision: str
    reason: str
    where: str

    def to_json(self) -> dict[str, str]:
        return {"date": self.date, "decision": self.decision, "reason": self.reason,
                "where": self.where}

    def words(self) -> str:
        where = {"base": "; the base holds its commit (merged)",
                 "superseded": "; its commit is on no branch any more",
                 "run": " and committed nothing",
                 "branch": ""}.get(self.where, "")
        reason = f" ({self.reason})" if self.reason else ""
        return f"the last night ({self.date} UTC) decided {self.decision}{reason}{where}"


def _export(repo: git.Repo, sha: str, skill: SkillConfig, dest: Path) -> bool:
    """Write the skill's documents and task files as they are at `sha` into `dest`."""
    paths = [p for p in (skill.skill, skill.memory) if p] + [t.path for t in skill.tasks]
    for relative in paths:
        done = git_run(repo.working_dir, "show", f"{sha}:{relative}")
        if done.status != 0:  # a file missing at the base: not up to date
            return False
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(done.out)
    return True


def _clean(text: object, limit: int) -> str:
    if not isinstance(text, str):
        return ""
    return md.clip(" ".join(INVISIBLE.sub("", text).split()), limit)


def last_run(root: Path, skill: str) -> LastNight | None:
    """The newest night of `skill` this clone ran into the default run folder (a dry run
    is no night), from its diagnostics.json; None when there is none to read."""
    runs = root / repo_paths.RUNS_DIR
    found: list[tuple[str, Path]] = []
    try:
        for folder in runs.glob(f"{skill}-*"):
            match = _RUN_STAMP.search(folder.name)
            if match and folder.name[:match.start()] == skill:
                found.append((match.group(1), folder / "diagnostics.json"))
    except OSError:
        return None
    for stamp, path in sorted(found, reverse=True):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        extra = data.get("extra")
        if isinstance(extra, dict) and extra.get("dry_run"):
            continue
        when = datetime.strptime(stamp, "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
        return LastNight(when.strftime("%Y-%m-%d %H:%M"),
                         _clean(data.get("decision"), 40) or "?",
                         _clean(data.get("reason"), _MAX_REASON), "run")
    return None


def last_night(root: Path, skill: str, epochs: list[history.RecordedEpoch]
               ) -> LastNight | None:
    """The newest of the skill's recorded epochs and its newest run here."""
    recorded = None
    if epochs:
        newest = epochs[-1]
        recorded = LastNight(history.utc_minute(newest.date), newest.decision, "",
                             newest.where)
    ran = last_run(root, skill)
    if ran is None or (recorded is not None and recorded.date != "?"
                       and recorded.date >= ran.date):
        return recorded
    return ran


def skill_status(setup: Setup, repo: git.Repo, base: gitops.BaseRef, skill: SkillConfig,
                 tips: dict[str, gitops.BranchTip],
                 epochs: list[history.RecordedEpoch]) -> dict[str, Any]:
    """One skill's status as the `status --json` row."""
    branch = skill_branch(setup.config.branch_prefix, skill.name)
    row: dict[str, Any] = {"skill": skill.name, "branch": branch, "exists": branch in tips,
                           "base": base.sha, "up_to_date": False, "merged": False}
    tip = tips.get(branch)
    if tip is None:
        night = last_night(setup.repo, skill.name, epochs)
        if night is None:
            row["note"] = "no gitsleep branch yet: run `gitsleep consolidate`"
        else:
            row["last_night"] = night.to_json()
            row["merged"] = night.where == "base"
            row["note"] = (f"no gitsleep branch: {night.words()}; `gitsleep log` lists "
                           "every night")
        return row
    trailers = record.read_trailers(repo, tip.rev)
    row["tip"] = tip.local_sha or tip.remote_sha
    row["trailers"] = record.ours(trailers)
    agents = record.agent_scores(trailers)
    if agents:  # several agents: each one's scores, as its trailers record them
        row["agents"] = [agent.to_json() for agent in agents]
    if not trailers.get(record.SKILL):
        row["note"] = "the branch tip was not made by gitsleep"
        return row
    if base.branch == branch:
        row["note"] = (f"you are on {branch} itself, so it cannot be merged into itself: "
                       "pass the branch it goes into, e.g. `gitsleep status --base main`")
        return row
    proof = gitops.proof_of(repo, branch, row["tip"], tip.remote)
    if proof is None:
        row["note"] = ("gitsleep cannot prove it made the branch tip (amended or someone "
                       "else's, or its note is not fetched: `git fetch origin "
                       f"{record.NOTES_REF}:{record.NOTES_REF}`)")
        return row
    if proof == "reflog":
        row["note"] = ("the branch tip has no diagnostics note yet (a run stopped before "
                       "writing it): run `gitsleep consolidate` to attach it")
        return row
    # merged by any means (a merge commit, a fast-forward, a squash or a rebase): the base
    # holds the epoch's changes; its documents are then the base's own, so the trailers no
    # longer match and a new night starts from it
    row["merged"] = merged_into(repo, row["tip"], base.sha)
    with tempfile.TemporaryDirectory(prefix="gitsleep-status-") as tmp:
        root = Path(tmp)
        if _export(repo, base.sha, skill, root):
            _, documents = read_inputs(root, skill)
            digests = record.Digests.of(setup.config, skill, root, documents, base.sha)
            row["up_to_date"] = digests.recorded_in(trailers)
    return row


def statuses(setup: Setup, base: str | None) -> list[dict[str, Any]]:
    """Every skill's status against `base` (default: the current branch). Reads refs and
    notes only; a remote's notes are fetched read-only, for the proof."""
    repo = gitops.open_repo(setup.repo)
    base_ref = gitops.resolve_base(repo, base)
    remote = base_ref.remote or gitops.default_remote(repo, base_ref.branch)
    if remote:  # a fresh clone has no notes: read the remote's (read-only) for the proof
        remote_notes.fetch(setup.repo, remote)
    prefix = setup.config.branch_prefix
    tips = {t.branch: t for t in gitops.list_gitsleep_branches(repo, prefix, remote)}
    missing = [s.name for s in setup.config.skills
               if skill_branch(prefix, s.name) not in tips]
    epochs = history.read_epochs(setup.repo, base=base_ref.sha,
                                 branch_refs=history.branch_refs(setup.repo, prefix),
                                 skills=missing, details=False) if missing else []
    return [skill_status(setup, repo, base_ref, s, tips,
                         [e for e in epochs if e.skill == s.name])
            for s in setup.config.skills]


def freshness(row: dict[str, Any]) -> str:
    """What the next `consolidate` would do with the branch, in words a newcomer reads."""
    if row.get("merged"):
        return "merged into the base: the next `gitsleep consolidate` starts a new epoch from it"
    if row["up_to_date"]:
        return "up to date"
    return ("out of date: the base, the tasks or the documents changed since this epoch; "
            "the next `gitsleep consolidate` runs a new one")


def lines(row: dict[str, Any]) -> list[str]:
    """The text `status` prints for one skill: one line, then one per agent."""
    if not row["exists"] or "note" in row:
        return [f"{row['skill']}: {row['branch']}: {row.get('note', '')}"]
    t = row.get("trailers", {})
    base_sha = t.get(record.BASE, "?")[:12]
    out = [f"{row['skill']}: {row['branch']} at {row['tip'][:12]}: "
           f"{t.get(record.DECISION, '?')}, val {t.get(record.VAL, '?')}, "
           f"held-out {t.get(record.TEST, '?')}; base {base_sha}; {freshness(row)}"]
    out += [f"  {agent.line()}" for agent in record.agent_scores(t)]
    if record.trigger_scores(t) is not None:  # a trigger pass: its accuracy
        out.append(f"  triggers: {t.get(record.DESCRIPTION, '?')}, val "
                   f"{t.get(record.TRIGGER_VAL, '?')}, held-out {t.get(record.TRIGGER_TEST, '?')}")
    return out
