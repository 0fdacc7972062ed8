"""Run the real CLI entry point in-process and capture its exit code and output."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gitsleep.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """`gitsleep ARGS`, as a user would type it; SystemExit becomes the code."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)
