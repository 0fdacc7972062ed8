"""Helpers the command modules share: building a Setup, printing results."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from gitsleep.run import Setup


def setup_from(ctx: click.Context, *, backend: str | None = None,
               model: str | None = None) -> Setup:
    obj = ctx.obj or {}
    verbosity = obj.get("verbosity", 0)

    def progress(line: str) -> None:
        if verbosity >= 0:
            click.echo(line, err=True)

    return Setup.load(obj.get("repo", "."), obj.get("config"), backend=backend, model=model,
                      progress=progress)


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def worst_exit(codes: list[int]) -> int:
    """Several skills: the most serious exit code wins (0 < 1 < 2 ... by number)."""
    return max(codes, default=0)


def exit_with(code: int) -> None:
    sys.stdout.flush()
    if code:
        raise SystemExit(code)
