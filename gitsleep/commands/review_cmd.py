"""`gitsleep review`: score a change to a skill (base REF against the head) on the base's
exam. Everything printed is redacted, then shown with its control characters escaped."""

from __future__ import annotations

import json

import click

from gitsleep.base.errors import EXIT_REGRESSION, EXIT_UNSCORED
from gitsleep.base.terminal import visible
from gitsleep.commands.common import end_progress, exit_with, setup_from
from gitsleep.flows.prepare import Setup
from gitsleep.flows.review import edges, verdict


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
              help="Exit 7 when the held-out score (val and held-out together for a "
                   "person's change) falls by more than gate.min_delta beyond noise.")
@click.option("--allow-unscored", is_flag=True,
              help="With --fail-on-regression: a change that could not be scored passes "
                   "(exit 0) instead of exit 8.")
@click.option("--trust-head", is_flag=True,
              help="Score on the head's tasks, judges and settings: runs the pull request's "
                   "command checks, fixtures and agent settings. Read them first.")
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--json", "as_json", is_flag=True, help="Print the review as JSON.")
@click.pass_context
def review(ctx: click.Context, base: str, skills: tuple[str, ...], comment: bool | None,
            pr: int | None, fail_on_regression: bool, allow_unscored: bool, trust_head: bool,
            backend: str | None, model: str | None, as_json: bool) -> None:
    """Score the base and head documents of each changed skill on the base's tasks."""
    setup = setup_from(ctx, backend=backend, model=model)
    options = edges.ReviewOptions(base=base, skills=skills, comment=comment,
                                       fail_on_regression=fail_on_regression, pr=pr,
                                       trust_head=trust_head, allow_unscored=allow_unscored,
                                       backend=backend, model=model)
    outcome = edges.run_review(setup, options)
    end_progress(setup)
    if as_json:
        # ASCII only: JSON escapes C0 controls itself, not C1 or bidi ones (a task id's)
        click.echo(json.dumps(setup.redactor.redact_obj(edges.to_json(outcome, options)),
                              indent=2, ensure_ascii=True))
        _say_error(setup, outcome)
        exit_with(outcome.exit_code)
        return
    metric = outcome.metric

    def say(line: str, err: bool = False) -> None:
        click.echo(verdict.one_line(setup.redactor.redact(line)), err=err)

    for note in outcome.notes:
        say(f"note: {note}")
    for item in outcome.reviews:
        for line in verdict.terminal_lines(item, metric, setup.redactor,
                                           trusted_head=outcome.trusted_head):
            click.echo(line)
    overall = "not run" if outcome.not_run else verdict.overall(outcome.reviews)
    say(f"review: {overall} (base {outcome.base_label}, head {outcome.head_label})")
    shown = outcome.comment
    if shown.error:
        say(f"gitsleep: error: comment: {shown.error}", err=True)
    elif shown.operation == "none":
        say(f"comment: none ({shown.reason or ''})")
    else:
        say(f"comment: {shown.operation} {shown.url}")
    _say_error(setup, outcome)
    if outcome.exit_code == EXIT_REGRESSION:
        click.echo(verdict.regression_line(outcome.reviews), err=True)
    exit_with(outcome.exit_code)


def _say_error(setup: Setup, outcome: edges.ReviewOutcome) -> None:
    """Why no verdict was reached (a budget, exit 6; no score, exit 8): one line on stderr."""
    if outcome.error:
        click.echo(f"gitsleep: error: {visible(setup.redactor.redact(outcome.error))}",
                   err=True)
    if outcome.exit_code == EXIT_UNSCORED:
        why = "; ".join(outcome.unscored)
        click.echo(f"gitsleep: error: no verdict (--fail-on-regression fails a change that "
                   f"could not be scored: exit 8): {verdict.one_line(setup.redactor.redact(why))}"
                   "; fix the cause, or pass --allow-unscored to let it pass", err=True)
