"""`gitsleep log`: every epoch of each skill, read from commit trailers and git notes (the
flow is `gitsleep.flows.log`)."""

from __future__ import annotations

from pathlib import Path

import click

from gitsleep.commands.common import print_json
from gitsleep.flows import log as flow
from gitsleep.inputs.config import config_path, load_config


@click.command("log")
@click.option("--skill", "skills", multiple=True, help="Skill to show (repeatable; default all).")
@click.option("--base", default=None,
              help="The branch whose history holds merged epochs (default: HEAD).")
@click.option("--json", "as_json", is_flag=True, help="Print the epochs as JSON.")
@click.pass_context
def log(ctx: click.Context, skills: tuple[str, ...], base: str | None, as_json: bool) -> None:
    """Show every epoch of each skill: date, decision, val and held-out, edits and cost."""
    obj = ctx.obj or {}
    repo = Path(obj.get("repo") or ".")
    config = load_config(config_path(repo, obj.get("config")))
    found = flow.recorded(repo, config, skills, base)
    skipped = found.skipped_line()
    if skipped:  # notes or trailers gitsleep did not write: named on stderr
        click.echo(skipped, err=True)
    if as_json:
        print_json([e.to_json() for e in found.epochs])
        return
    for line in flow.lines(found.epochs, config.branch_prefix, skills):
        click.echo(line)


command = log  # the name `gitsleep.cli` loads
