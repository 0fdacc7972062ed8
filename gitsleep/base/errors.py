"""Errors that end a command, each with the documented exit code.

The CLI prints `str(error)` as one line and exits with `error.exit_code`; nothing else
should turn an exception into an exit status.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_PROBLEMS = 1  # `validate` found problems
EXIT_USAGE = 2  # bad usage, config or input
EXIT_BACKEND = 3  # model backend failure: nothing committed
EXIT_GIT = 4  # git or forge failure: local work kept
EXIT_LOCKED = 5  # another run holds the lock for this repo and skill
EXIT_BUDGET = 6  # budget exhausted before a decision: nothing committed
EXIT_REGRESSION = 7  # `review --fail-on-regression`: a held-out score fell beyond noise
EXIT_UNSCORED = 8  # `review --fail-on-regression`: no verdict (could not score); never a pass
EXIT_INTERRUPTED = 130  # Ctrl-C: what shells report for SIGINT


class GitsleepError(Exception):
    """Base class: a one-line message for the user and an exit code."""

    exit_code = EXIT_USAGE


class UsageError(GitsleepError):
    """Bad usage, configuration or input (exit 2). Name the file, the field and the fix."""

    exit_code = EXIT_USAGE


class BackendError(GitsleepError):
    """The model backend cannot go on: auth, unknown model, too many failed calls (exit 3)."""

    exit_code = EXIT_BACKEND


class GitError(GitsleepError):
    """git or the forge refused (exit 4). Local work is kept."""

    exit_code = EXIT_GIT


class LockHeld(GitsleepError):
    """Another gitsleep run holds the lock for this repo and skill (exit 5)."""

    exit_code = EXIT_LOCKED


class BudgetExhausted(GitsleepError):
    """`budget.max_calls` or `budget.max_tokens` ran out before a decision (exit 6)."""

    exit_code = EXIT_BUDGET
