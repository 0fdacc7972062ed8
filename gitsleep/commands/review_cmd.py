"""`gitsleep review`: score a change to a skill (base REF against the head) on its tasks."""

from __future__ import annotations

import click

from gitsleep import review, review_run
from gitsleep.commands.common import end_progress, exit_with, print_json, setup_from
from gitsleep.errors import EXIT_REGRESSION
from gitsleep.prepare import Setup
from gitsleep.terminal import visible


@click.command("review")
@click.option("--base", "base", required=True, metavar="REF",
              help="The commit to compare against (a pull request's base, e.g. origin/main).")
@click.option("--skill", "skills", multiple=True,
              help="Skill to review (repeatable; default: the skills the change touched; "
                   "`all`: every skill).")
@click.option("--comment/--no-comment", "comment", default=None,
              help="Post or update the pull request's review comment (default: when on a "
                   "pull request with GITHUB_TOKEN or GH_TOKEN).")
@click.option("--pr", "pr", type=click.IntRange(min=1), default=None,
              help="The pull request number (default: from GITHUB_EVENT_PATH or GITHUB_REF).")
@click.option("--fail-on-regression", is_flag=True, envvar="GITSLEEP_FAIL_ON_REGRESSION",
              help="Exit 7 when a held-out score falls by more than gate.min_delta with its "
                   "95% interval below zero.")
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON.")
@click.pass_context
def command(ctx: click.Context, base: str, skills: tuple[str, ...], comment: bool | None,
            pr: int | None, fail_on_regression: bool, backend: str | None, model: str | None,
            as_json: bool) -> None:
    """Score the base and head documents of each changed skill on the head's tasks."""
    setup = setup_from(ctx, backend=backend, model=model)
    options = review_run.ReviewOptions(base=base, skills=skills, comment=comment,
                                       fail_on_regression=fail_on_regression, pr=pr)
    outcome = review_run.run_review(setup, options)
    end_progress(setup)
    if as_json:
        print_json(setup.redactor.redact_obj(review_run.to_json(outcome, options)))
        _say_error(setup, outcome)
        exit_with(outcome.exit_code)
        return
    metric = setup.config.gate.metric
    for note in outcome.notes:
        click.echo(f"note: {setup.redactor.redact(note)}")
    for item in outcome.reviews:
        for line in review.terminal_lines(item, metric):
            click.echo(setup.redactor.redact(line))
    verdict = "not run" if outcome.not_run else review.overall(outcome.reviews)
    click.echo(f"review: {verdict} (base {outcome.base_label}, head {outcome.head_label})")
    shown = outcome.comment
    if shown.get("error"):
        click.echo(f"gitsleep: error: comment: {setup.redactor.redact(shown['error'])}",
                   err=True)
    elif shown["operation"] == "none":
        click.echo(f"comment: none ({shown.get('reason', '')})")
    else:
        click.echo(f"comment: {shown['operation']} {shown['url']}")
    _say_error(setup, outcome)
    if outcome.exit_code == EXIT_REGRESSION:
        click.echo("gitsleep: a held-out score regressed (--fail-on-regression): exit 7",
                   err=True)
    exit_with(outcome.exit_code)


def _say_error(setup: Setup, outcome: review_run.ReviewOutcome) -> None:
    """Why no verdict was reached (a budget, exit 6): one line on stderr."""
    if outcome.error:
        click.echo(f"gitsleep: error: {visible(setup.redactor.redact(outcome.error))}",
                   err=True)
