"""`gitsleep eval`: score the current documents on a split, without changing anything."""

from __future__ import annotations

import click

from gitsleep.commands.common import end_progress, print_json, setup_from
from gitsleep.core.scores import SMALL_SPLIT, fmt_score
from gitsleep.flows.eval import evaluate
from gitsleep.report import metric_note


@click.command("eval")
@click.option("--skill", "skills", multiple=True, help="Skill to score (repeatable; default all).")
@click.option("--split", type=click.Choice(["train", "val", "test", "all"]), default="all",
              show_default=True)
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--json", "as_json", is_flag=True, help="Print per-task results as JSON.")
@click.pass_context
def eval(ctx: click.Context, skills: tuple[str, ...], split: str, backend: str | None,
         model: str | None, as_json: bool) -> None:
    """Score the current skill documents on their tasks."""
    setup = setup_from(ctx, backend=backend, model=model)
    outcome = evaluate(setup, skills, split)
    end_progress(setup)
    if as_json:
        print_json([row.json for row in outcome.rows if row.result is not None])
        return
    for row in outcome.rows:
        if row.result is None:
            click.echo(f"{row.skill} {row.split:5} n=0    (no tasks)")
            continue
        click.echo(f"{row.skill} {row.split:5} n={row.n:<4} {row.metric}"
                   f"={fmt_score(row.result.mean)}  errors={row.result.errors}")
        for agent in row.agents:
            click.echo(f"  agent {agent['name']} ({agent['model']}) n={agent['n']} "
                       f"{row.metric}={fmt_score(agent['score'])}")
    if metric_note(outcome.metric):
        click.echo(f"{metric_note(outcome.metric).replace('`', '')}.")
    if outcome.small:
        click.echo(f"warning: few tasks in {'; '.join(outcome.small)}: with fewer than "
                   f"{SMALL_SPLIT} one task moves the score a lot; add tasks before trusting "
                   "a change", err=True)
