"""`gitsleep log`: every epoch of each skill, read from commit trailers and git notes."""

from __future__ import annotations

from pathlib import Path

import click

from gitsleep.base.errors import UsageError
from gitsleep.commands.common import print_json
from gitsleep.core.scores import fmt_change
from gitsleep.git_forge import history, remote_notes
from gitsleep.git_forge.gitrun import git_out
from gitsleep.inputs.config import config_path, load_config


def branch_refs(repo: Path, prefix: str) -> list[str]:
    """The local and remote-tracking refs of every gitsleep branch."""
    out = git_out(repo, "for-each-ref", "--format=%(refname)", f"refs/heads/{prefix}",
                       "refs/remotes/")
    return [ref for ref in out.split() if ref.startswith(f"refs/heads/{prefix}")
            or f"/{prefix}" in ref.removeprefix("refs/remotes/")]


def epochs_for(repo: Path, prefix: str, base: str,
               skills: list[str] | None) -> list[history.RecordedEpoch]:
    """The epochs; one line on stderr names any note or trailer gitsleep did not write."""
    found = history.read_history(repo, base=base, branch_refs=branch_refs(repo, prefix),
                                 skills=skills)
    skipped = found.skipped_line()
    if skipped:
        click.echo(skipped, err=True)
    return found.epochs


def calls_cell(epoch: history.RecordedEpoch) -> str:
    """The model calls a night made; a night answered from the response cache says so,
    or its 0 reads as a night that did nothing."""
    if epoch.calls is None:
        return "?"
    if epoch.calls == 0 and epoch.cache_hits:
        return f"0 ({epoch.cache_hits} cached)"
    return str(epoch.calls)


def table(epochs: list[history.RecordedEpoch], prefix: str) -> list[str]:
    """Aligned plain-text rows, a header first; an epoch of several agents is followed by
    one indented line per agent with its own val and held-out."""
    rows = [["date (UTC)", "skill", "commit", "on", "decision", "val", "held-out", "edits",
             "calls", "cost"]]
    for e in epochs:
        where = f"{prefix}{e.skill}" if e.where == "branch" else e.where
        rows.append([
            history.utc_minute(e.date), e.skill, e.commit[:12], where,
            e.decision, fmt_change(*e.val), fmt_change(*e.test),
            "?" if e.applied is None else str(e.applied),
            calls_cell(e),
            "n/a" if e.usd is None else f"${e.usd:.2f}",
        ])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in rows]
    out = lines[:1]
    for epoch, line in zip(epochs, lines[1:], strict=True):
        out.append(line)
        out += [f"    {agent.line()}" for agent in epoch.agents]
        out += [f"    {epoch.trigger_line()}"] if epoch.triggers is not None else []
    return out


@click.command("log")
@click.option("--skill", "skills", multiple=True, help="Skill to show (repeatable; default all).")
@click.option("--base", default="HEAD", show_default=True,
              help="The branch whose history holds merged epochs.")
@click.option("--json", "as_json", is_flag=True, help="Print the epochs as JSON.")
@click.pass_context
def command(ctx: click.Context, skills: tuple[str, ...], base: str, as_json: bool) -> None:
    """Show every epoch of each skill: date, decision, val and held-out, edits and cost."""
    obj = ctx.obj or {}
    repo = Path(obj.get("repo") or ".")
    config = load_config(config_path(repo, obj.get("config")))
    for name in skills:
        config.skill(name)  # an unknown skill is a usage error that names the known ones
    if not git_out(repo, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"):
        raise UsageError(f"--base {base}: not a commit in {repo} (is it a git repository "
                         "with at least one commit?)")
    remote_notes.fetch(repo)  # a fresh clone has no notes: the remote's, read-only
    epochs = epochs_for(repo, config.branch_prefix, base, list(skills) or None)
    if as_json:
        print_json([e.to_json() for e in epochs])
        return
    if not epochs:
        which = ", ".join(skills) if skills else "any skill"
        click.echo(f"no recorded epoch for {which}: an accepted `gitsleep consolidate` "
                   "records one")
        return
    for line in table(epochs, config.branch_prefix):
        click.echo(line)
