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

from gitsleep.base.errors import EXIT_OK, EXIT_PROBLEMS
from gitsleep.base.redact import Redactor
from gitsleep.inputs.config import Config, config_path, load_config
from gitsleep.inputs.validation import (
    learned_block_report,
    repo_relative,
    split_lines,
    validate_repo,
)


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
def command(ctx: click.Context, paths: tuple[str, ...], output_format: str, as_json: bool,
            learned_block_only: bool) -> None:
    """Check config, task files, documents and learned blocks offline. Exit 1 on problems.

    With PATHS, only problems in those files (and the config) are reported.
    """
    obj = ctx.obj or {}
    output_format = "json" if as_json else output_format
    repo_root = Path(obj.get("repo") or ".")
    cfg = config_path(repo_root, obj.get("config"))
    config: Config | None = None
    if learned_block_only:
        report = learned_block_report(repo_root, cfg, paths)
        scope = f"{report.files} document(s)"
    else:
        config = load_config(cfg)
        report = validate_repo(repo_root, config, os.environ, cfg)
        if paths:
            wanted = {repo_relative(repo_root, p) for p in paths}
            wanted.add(repo_relative(repo_root, str(cfg)))
            report.problems = [p for p in report.problems if p.path in wanted]
        scope = (f"{report.skills} skill(s), {report.tasks} task(s), "
                 f"{report.files} file(s)")

    # Problems quote task text; nothing secret-shaped may reach the terminal or a CI log.
    key_env = [config.api_key_env] if config is not None else []
    redact = Redactor.from_env(os.environ, key_env).redact_obj
    if output_format == "json":
        click.echo(json.dumps(redact([p.as_dict() for p in report.problems]), indent=2))
    else:
        for problem in report.problems:
            click.echo(redact(problem.render()))
    sizes = split_lines(report.splits)
    for line in sizes:
        click.echo(line, err=True)
    # the split warnings are printed here, not as problems: the count includes them
    warnings = report.warnings + sum(1 for line in sizes if "warning: " in line)
    if report.commands:  # trust: every program a night starts, said where people look
        click.echo(f"commands a night would run ({len(report.commands)}, from committed task "
                   "files; they run with the trust of the repository's own CI):", err=True)
        for line in report.commands:
            click.echo(f"  {redact(line)}", err=True)
    if report.problems or warnings:
        summary = f"{report.errors} error(s), {warnings} warning(s)"
    else:
        summary = "no problems"
    click.echo(f"gitsleep validate: {summary} ({scope})", err=True)
    # SystemExit, not ctx.exit: click's non-standalone mode would swallow ctx.exit's code.
    raise SystemExit(EXIT_PROBLEMS if report.errors else EXIT_OK)
