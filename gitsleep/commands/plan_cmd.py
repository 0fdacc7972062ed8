"""`gitsleep plan`: the configured skills, as a GitHub Actions matrix.

`gitsleep plan --json` prints `{"include": [{"skill": "<name>"}, ...]}` on one line, ready
for `strategy.matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}`, so a workflow runs
one job per skill without repeating the skill list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from gitsleep.inputs.config import Config, config_path, load_config


def matrix(config: Config) -> dict[str, Any]:
    """One matrix entry per skill, in config order."""
    return {"include": [{"skill": skill.name} for skill in config.skills]}


@click.command("plan")
@click.option("--json", "as_json", is_flag=True,
              help="Print the matrix as compact JSON on one line.")
@click.pass_context
def plan(ctx: click.Context, as_json: bool) -> None:
    """List the skills as a GitHub Actions matrix."""
    obj = ctx.obj or {}
    config = load_config(config_path(Path(obj.get("repo") or "."), obj.get("config")))
    if as_json:
        click.echo(json.dumps(matrix(config), separators=(",", ":")))
        return
    for skill in config.skills:
        files = ", ".join(f"{t.path} ({t.split})" for t in skill.tasks)
        memory = f", memory {skill.memory}" if skill.memory else ""
        click.echo(f"{skill.name}: {skill.skill}{memory}; tasks {files}")
