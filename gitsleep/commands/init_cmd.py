"""`gitsleep init`: a working setup in one command, without touching what is already
there (what it writes, and the checks before, are `gitsleep.flows.init`)."""

from __future__ import annotations

import click

from gitsleep.flows import init as flow


@click.command("init")
@click.option("--force", is_flag=True, help="Replace files that already exist.")
@click.option("--action-repo", default=None, metavar="OWNER/REPO",
              help="The GitHub repository publishing the gitsleep action, for the workflow "
                   "(default: where this gitsleep was installed from, when that is GitHub).")
@click.option("--action-ref", default=None, metavar="SHA",
              help="The gitsleep commit (or, once published, tag) the workflow, the `$schema` "
                   "line and the pre-commit snippet pin (default: the commit pip installed "
                   "this gitsleep from).")
@click.pass_context
def init(ctx: click.Context, force: bool, action_repo: str | None,
         action_ref: str | None) -> None:
    """Write .gitsleep.yml, an example skill and tasks, and the nightly and review workflows."""
    obj = ctx.obj or {}
    said = flow.set_up(obj.get("repo"), obj.get("config"), force=force,
                       action_repo=action_repo, action_ref=action_ref)
    for line, err in said:
        click.echo(line, err=err)


command = init  # the name `gitsleep.cli` loads
