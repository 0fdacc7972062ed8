"""`gitsleep validate`: everything that can be checked without a model, in well under a second.

Checks the config, every task file (formats, judges, splits, leaks), the skill and
memory documents (UTF-8, frontmatter, learned-block integrity and size) and looks for
secrets in task files, which are sent to a model provider. Prints one line per problem,
`path:line: CODE message`, and exits 0 when there is no error (warnings are fine), 1 when
there are errors, 2 when it cannot run. It makes no network call and never imports the
model, git or forge clients, so it is safe and fast as a pre-commit hook. The checks are
`gitsleep.inputs.validation`; this module only prints them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from gitsleep.base.redact import Redactor
from gitsleep.inputs import validation


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "output_format", type=click.Choice(["text", "json"]),
              default="text", show_default=True, help="Problem list format.")
@click.option("--json", "as_json", is_flag=True,
              help="Same as --format json (the flag the other commands take).")
@click.option("--learned-block-only", is_flag=True,
              help="Only check the learned blocks of the given Markdown files "
                   "(the gitsleep-learned-block pre-commit hook).")
@click.pass_context
def validate(ctx: click.Context, paths: tuple[str, ...], output_format: str, as_json: bool,
             learned_block_only: bool) -> None:
    """Check config, task files, documents and learned blocks offline. Exit 1 on problems.

    With PATHS, only problems in those files (and the config) are reported.
    """
    obj = ctx.obj or {}
    found = validation.validate(Path(obj.get("repo") or "."), obj.get("config"), paths,
                                os.environ, learned_block_only=learned_block_only)
    as_json = as_json or output_format == "json"
    if found.stopped is not None and not as_json:
        raise found.stopped  # one line on stderr, exit 2
    # Problems quote task text; nothing secret-shaped may reach the terminal or a CI log.
    redact = Redactor.from_env(os.environ, found.key_env).redact_obj
    if as_json:
        problems = found.problems + found.split_problems
        click.echo(json.dumps(redact([p.as_dict() for p in problems]), indent=2))
    else:
        for problem in found.problems:
            click.echo(redact(problem.render()))
    for line in found.sizes:
        click.echo(line, err=True)
    if found.commands:  # trust: every program a night starts, said where people look
        click.echo(f"commands a night would run ({len(found.commands)}, from committed task "
                   "files; they run with the trust of the repository's own CI):", err=True)
        for line in found.commands:
            click.echo(f"  {redact(line)}", err=True)
    if found.stopped is not None:
        click.echo(f"gitsleep: error: {redact(str(found.stopped))}", err=True)
    else:
        click.echo(f"gitsleep validate: {found.summary()}", err=True)
    # SystemExit, not ctx.exit: click's non-standalone mode would swallow ctx.exit's code.
    raise SystemExit(found.exit_code)


command = validate  # the name `gitsleep.cli` loads
