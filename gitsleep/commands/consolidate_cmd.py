"""`gitsleep consolidate`: run one epoch per skill, commit, push and open PRs (the flow is
`gitsleep.flows.consolidate`)."""

from __future__ import annotations

from pathlib import Path

import click

from gitsleep import report
from gitsleep.base.terminal import visible
from gitsleep.commands.common import end_progress, exit_with, print_json, setup_from, worst_exit
from gitsleep.flows import consolidate as flow
from gitsleep.inputs import repo_paths


@click.command("consolidate")
@click.option("--skill", "skills", multiple=True, help="Skill to run (repeatable; default all).")
@click.option("--base", default=None, help="Ref to start from (default: the current branch).")
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--dry-run", is_flag=True, help="Run on the working files: no commit, push or PR.")
@click.option("--push/--no-push", default=None,
              help="Push the branch (default: when a remote exists; a simulated night with "
                   "the offline backend only to a remote that is a folder here). Given and "
                   "impossible (no remote): exit 2, the commit kept.")
@click.option("--pr/--no-pr", default=None,
              help="Open/update the PR (default: when a token exists and the branch is "
                   "pushed). Given and impossible (no remote, no token): exit 2.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where diagnostics.json goes (default .gitsleep/runs/<skill>-<time>/).")
@click.pass_context
def consolidate(ctx: click.Context, skills: tuple[str, ...], base: str | None,
                backend: str | None, model: str | None, dry_run: bool, push: bool | None,
                pr: bool | None, as_json: bool, output_dir: Path | None) -> None:
    """Run one consolidation epoch per skill."""
    setup = setup_from(ctx, backend=backend, model=model)
    chosen = setup.skills(skills)
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen], runs=output_dir is None)
    push, local_reason = flow.simulated_push(setup, push, pr)
    options = flow.GitOptions(base=base, push=push, pr=pr, output_dir=output_dir,
                              local_reason=local_reason)
    summaries, codes = [], []
    for night in flow.nights(setup, chosen, options, dry=dry_run):
        codes.append(night.exit_code)
        if night.outcome is None:
            continue
        summaries.append(night.outcome.summary.to_json())
        end_progress(setup)
        if not as_json:
            lines, err = report.night_lines(night.outcome.summary, night.outcome.result,
                                            dry_run=dry_run, local_reason=local_reason)
            for line in lines:
                click.echo(visible(line), err=err)
    if as_json:
        print_json(summaries[0] if len(summaries) == 1 and len(chosen) == 1 else summaries)
    exit_with(worst_exit(codes))


command = consolidate  # the name `gitsleep.cli` loads
