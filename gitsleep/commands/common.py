"""Helpers the command modules share: building a Setup, printing results."""

from __future__ import annotations

import itertools
import json
import math
import os
import shutil
import sys
import threading
from collections.abc import Callable
from typing import Any

import click

from gitsleep.base.errors import EXIT_OK, UsageError
from gitsleep.flows.prepare import Setup
from gitsleep.inputs.config import SkillConfig

PLAIN_EVERY = 8  # in a log, passes this long get a line per quarter, shorter ones just one
BAR_WIDTH, BAR_MIN = 20, 6  # a progress bar's cells on a wide terminal; the fewest shown


class StderrProgress:
    """Progress on stderr: one live status line and a progress bar per pass on a terminal,
    plain lines in CI logs, with -v or when stderr is not a terminal; nothing with -q."""

    def __init__(self, verbosity: int) -> None:
        self.verbosity = verbosity
        self.live = (verbosity == 0 and sys.stderr.isatty()
                     and not os.environ.get("CI") and os.environ.get("TERM") != "dumb")
        self._open = False
        self._bar: Any = None  # click's ProgressBar of the pass being scored, if any
        self._lock = threading.Lock()  # ticks come from the worker threads

    def __call__(self, line: str) -> None:
        if self.verbosity < 0:
            return
        with self._lock:
            self._end_bar()
            if not self.live:
                click.echo(line, err=True)
                return
            width = max(20, shutil.get_terminal_size().columns - 1)
            if len(line) > width:  # cut, it loses its end; wrapped, it breaks the redraw
                click.echo("\r\033[K" + line, err=True)
                self._open = False
                return
            click.echo("\r\033[K" + line, err=True, nl=False)
            self._open = True

    def steps(self, label: str, total: int) -> Callable[[], None]:
        """A tick per answer of a pass: a click progress bar on a terminal; in a log, a line
        at the start and, on a pass of PLAIN_EVERY or more, one each quarter."""
        if self.verbosity < 0 or total <= 0:
            return lambda: None
        if not self.live:
            click.echo(f"{label}: {total} to score", err=True)
            if total < PLAIN_EVERY:
                return lambda: None
            every = math.ceil(total / 4)
            done = itertools.count(1)

            def line() -> None:
                n = next(done)
                if n % every == 0 or n == total:
                    click.echo(f"{label}: {n}/{total}", err=True)

            return line
        with self._lock:
            self._end_bar()
            if self._open:
                click.echo("\r\033[K", err=True, nl=False)
                self._open = False
            width = max(20, shutil.get_terminal_size().columns - 1)
            # the label is what is being scored: the bar shrinks before the label is cut,
            # and a label too long for any bar gets a line of its own above it
            room = width - len(label) - 2 * len(str(total)) - 7  # "  [" "]  " "/"
            if room < BAR_MIN:
                click.echo(label, err=True)
                label, room = "", width - 2 * len(str(total)) - 7
            bar = click.progressbar(length=total, label=label, file=sys.stderr,
                                    show_pos=True, show_eta=False,
                                    width=max(BAR_MIN, min(BAR_WIDTH, room)))
            bar.__enter__()  # draws it; the last tick or the next line finishes it
            self._bar = bar

        def tick() -> None:
            with self._lock:
                if self._bar is bar:
                    bar.update(1)
                    if bar.pos >= total:
                        self._end_bar()

        return tick

    def _end_bar(self) -> None:
        if self._bar is not None:
            self._bar.render_finish()
            self._bar = None

    def close(self) -> None:
        with self._lock:
            self._end_bar()
        if self._open:
            click.echo("", err=True)
            self._open = False


def setup_from(ctx: click.Context, *, backend: str | None = None,
               model: str | None = None) -> Setup:
    obj = ctx.obj or {}
    progress = StderrProgress(obj.get("verbosity", 0))
    ctx.call_on_close(progress.close)
    return Setup.load(obj.get("repo", "."), obj.get("config"), backend=backend, model=model,
                      progress=progress, steps=progress.steps)


def only_skill(skills: list[SkillConfig]) -> SkillConfig:
    """The skill a command means when `--skill` is left out: the config's only one."""
    if len(skills) == 1:
        return skills[0]
    names = ", ".join(s.name for s in skills[:10]) + (", ..." if len(skills) > 10 else "")
    raise UsageError(f"--skill NAME is needed: the config has {len(skills)} skills ({names})")


def end_progress(setup: Setup) -> None:
    """Finish a live status line before printing results on stdout."""
    close = getattr(setup.progress, "close", None)
    if close is not None:
        close()


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def worst_exit(codes: list[int]) -> int:
    """Several skills: the most serious exit code wins (0 < 1 < 2 ... by number)."""
    return max(codes, default=EXIT_OK)


def exit_with(code: int) -> None:
    sys.stdout.flush()
    if code:
        raise SystemExit(code)
