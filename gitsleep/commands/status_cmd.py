"""`gitsleep status`: per skill, its branch, the last night's decision and freshness
(the flow is `gitsleep.flows.status`)."""

from __future__ import annotations

import click

from gitsleep.base.terminal import visible
from gitsleep.commands.common import print_json, setup_from
from gitsleep.flows import status as flow


@click.command("status")
@click.option("--base", default=None, help="Ref to compare against (default: current branch).")
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.pass_context
def status(ctx: click.Context, base: str | None, as_json: bool) -> None:
    """Show each skill's gitsleep branch, last decision and scores, and freshness."""
    rows = flow.statuses(setup_from(ctx), base)
    if as_json:
        print_json(rows)
        return
    for row in rows:
        for line in flow.lines(row):
            click.echo(visible(line))


command = status  # the name `gitsleep.cli` loads
