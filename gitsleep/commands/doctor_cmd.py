"""`gitsleep doctor`: one task through the configured agent, shown step by step.

The steps are `gitsleep.flows.doctor`'s; this module reads the options and prints each step
(redacted, control characters escaped).
"""

from __future__ import annotations

import click

from gitsleep.base.redact import Redactor
from gitsleep.base.terminal import visible
from gitsleep.commands.common import end_progress, only_skill, setup_from
from gitsleep.flows.doctor import check_agent


@click.command("doctor")
@click.option("--skill", "skill_name", default=None,
              help="The skill whose agent to check (default: the only skill).")
@click.option("--task", "task_id", default=None,
              help="The task to run (default: the first val task).")
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.pass_context
def doctor(ctx: click.Context, skill_name: str | None, task_id: str | None, backend: str | None,
            model: str | None) -> None:
    """Run one task through the configured agent and show what it saw."""
    setup = setup_from(ctx, backend=backend, model=model)
    skill = setup.config.skill(skill_name) if skill_name else only_skill(setup.config.skills)
    check_agent(setup, skill, task_id, _Shower(setup.redactor),
                started=lambda: end_progress(setup))


class _Shower:
    """Prints `label: value` lines (redacted, control characters escaped: what the agent
    printed is shown, never run by the terminal); multi-line values as an indented block."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def __call__(self, label: str, value: str, *, block: bool = False) -> None:
        text = visible(self.redactor.redact(value))
        if block or "\n" in text:
            click.echo(f"{label}:")
            for line in text.splitlines() or [""]:
                click.echo(f"    {line}")
        else:
            click.echo(f"{label}: {text}")
