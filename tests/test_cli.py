"""The click group: every command loads lazily from `commands/<name>_cmd.py`, found by
its name whatever its function is called, and takes -v / -q after its name too."""

from __future__ import annotations

import click
import pytest

from gitsleep.cli import COMMANDS, cli
from tests.support.cli import run_cli


def test_every_listed_command_loads_as_the_click_command_of_its_name() -> None:
    context = click.Context(cli)
    assert cli.list_commands(context) == list(COMMANDS)
    for name in COMMANDS:
        command = cli.get_command(context, name)
        assert isinstance(command, click.Command) and command.name == name
        assert {"verbose", "quiet"} <= {p.name for p in command.params}
    assert cli.get_command(context, "nope") is None


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "nope")
    assert done.code == 2 and "No such command" in done.err
