"""`gitsleep status`: per skill, its branch, the last epoch's trailers and freshness."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import click

from gitsleep.base.terminal import visible
from gitsleep.commands.common import print_json, setup_from
from gitsleep.flows.prepare import Setup, read_inputs
from gitsleep.git_forge import gitops, gitrun, record, remote_notes
from gitsleep.git_forge.gitrun import git_run
from gitsleep.inputs.config import SkillConfig


def _export(repo: Any, sha: str, skill: SkillConfig, dest: Path) -> bool:
    """Write the skill's documents and task files as they are at `sha` into `dest`."""
    paths = [p for p in (skill.skill, skill.memory) if p] + [t.path for t in skill.tasks]
    for relative in paths:
        done = git_run(repo.working_dir, "show", f"{sha}:{relative}")
        if done.status != 0:  # a file missing at the base: not up to date
            return False
        data = done.out
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return True


def skill_status(setup: Setup, repo: Any, base: gitops.BaseRef,
                 skill: SkillConfig, tips: dict[str, gitops.BranchTip]) -> dict[str, Any]:
    branch = f"{setup.config.branch_prefix}{skill.name}"
    row: dict[str, Any] = {"skill": skill.name, "branch": branch, "exists": branch in tips,
                           "base": base.sha, "up_to_date": False}
    tip = tips.get(branch)
    if tip is None:
        row["note"] = "no gitsleep branch yet: run `gitsleep consolidate`"
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
    # merged: the base holds the epoch's commit, as `log` says ("base"); its documents are
    # then the base's own, so the trailers no longer match and a new night starts from it
    row["merged"] = row["tip"] != base.sha and gitrun.is_ancestor(repo, row["tip"], base.sha)
    with tempfile.TemporaryDirectory(prefix="gitsleep-status-") as tmp:
        root = Path(tmp)
        if _export(repo, base.sha, skill, root):
            _, documents = read_inputs(root, skill)
            digests = record.Digests.of(setup.config, skill, root, documents, base.sha)
            row["up_to_date"] = digests.recorded_in(trailers)
    return row


def freshness(row: dict[str, Any]) -> str:
    """What the next `consolidate` would do with the branch, in words a newcomer reads."""
    if row.get("merged"):
        return "merged into the base: the next `gitsleep consolidate` starts a new epoch from it"
    if row["up_to_date"]:
        return "up to date"
    return ("out of date: the base, the tasks or the documents changed since this epoch; "
            "the next `gitsleep consolidate` runs a new one")


@click.command("status")
@click.option("--base", default=None, help="Ref to compare against (default: current branch).")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def command(ctx: click.Context, base: str | None, as_json: bool) -> None:
    """Show each skill's gitsleep branch, last decision and scores, and freshness."""
    setup = setup_from(ctx)
    repo = gitops.open_repo(setup.repo)
    base_ref = gitops.resolve_base(repo, base)
    remote = base_ref.remote or gitops.default_remote(repo, base_ref.branch)
    if remote:  # a fresh clone has no notes: read the remote's (read-only) for the proof
        remote_notes.fetch(setup.repo, remote)
    tips = {t.branch: t for t in gitops.list_gitsleep_branches(repo, setup.config.branch_prefix,
                                                                 remote)}
    rows = [skill_status(setup, repo, base_ref, s, tips) for s in setup.config.skills]
    if as_json:
        print_json(rows)
        return
    for row in rows:
        t = row.get("trailers", {})
        if not row["exists"] or "note" in row:
            click.echo(visible(f"{row['skill']}: {row['branch']}: {row.get('note', '')}"))
            continue
        fresh = freshness(row)
        base_sha = t.get(record.BASE, "?")[:12]
        click.echo(visible(f"{row['skill']}: {row['branch']} at {row['tip'][:12]}: "
                           f"{t.get(record.DECISION, '?')}, val {t.get(record.VAL, '?')}, "
                           f"held-out {t.get(record.TEST, '?')}; base {base_sha}; {fresh}"))
        for agent in record.agent_scores(t):  # several agents: one line each
            click.echo(f"  {agent.line()}")
        if record.trigger_scores(t) is not None:  # a trigger pass: its accuracy
            click.echo(visible(f"  triggers: {t.get(record.DESCRIPTION, '?')}, val "
                               f"{t.get(record.TRIGGER_VAL, '?')}, held-out "
                               f"{t.get(record.TRIGGER_TEST, '?')}"))
