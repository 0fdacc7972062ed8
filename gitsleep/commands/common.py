"""Helpers the command modules share: building a Setup, printing results."""

from __future__ import annotations

import json
import os
import shutil
import sys
from typing import Any

import click

from gitsleep.run import Setup


class Progress:
    """Progress on stderr: one live status line on a terminal, plain lines in CI or -v."""

    def __init__(self, verbosity: int) -> None:
        self.verbosity = verbosity
        self.live = (verbosity == 0 and sys.stderr.isatty()
                     and not os.environ.get("CI") and os.environ.get("TERM") != "dumb")
        self._open = False

    def __call__(self, line: str) -> None:
        if self.verbosity < 0:
            return
        if not self.live:
            click.echo(line, err=True)
            return
        width = max(20, shutil.get_terminal_size().columns - 1)
        click.echo("\r\033[K" + line[:width], err=True, nl=False)
        self._open = True

    def close(self) -> None:
        if self._open:
            click.echo("", err=True)
            self._open = False


def setup_from(ctx: click.Context, *, backend: str | None = None,
               model: str | None = None) -> Setup:
    obj = ctx.obj or {}
    progress = Progress(obj.get("verbosity", 0))
    ctx.call_on_close(progress.close)
    return Setup.load(obj.get("repo", "."), obj.get("config"), backend=backend, model=model,
                      progress=progress)


def end_progress(setup: Setup) -> None:
    """Finish a live status line before printing results on stdout."""
    close = getattr(setup.progress, "close", None)
    if close is not None:
        close()


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def worst_exit(codes: list[int]) -> int:
    """Several skills: the most serious exit code wins (0 < 1 < 2 ... by number)."""
    return max(codes, default=0)


def exit_with(code: int) -> None:
    sys.stdout.flush()
    if code:
        raise SystemExit(code)
