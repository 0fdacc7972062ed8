"""The command line: a thin click group; each command lives in `gitsleep/commands/`."""

from __future__ import annotations

import importlib
import sys

import click

from gitsleep import __version__
from gitsleep.base.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, GitsleepError
from gitsleep.base.logs import redact, setup_logging
from gitsleep.base.terminal import visible

COMMANDS = ("init", "validate", "eval", "consolidate", "status", "log", "plan", "demo",
            "harvest", "doctor", "review")


class _LazyGroup(click.Group):
    """Imports a command's module only when it runs, so `validate` stays fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module = importlib.import_module(f"gitsleep.commands.{cmd_name}_cmd")
        command = next(value for value in vars(module).values()  # the click function
                       if isinstance(value, click.Command) and value.name == cmd_name)
        _accept_verbosity(command)
        return command


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: int | bool) -> None:
    """`gitsleep validate -q` as `gitsleep -q validate`: the group's setting, moved."""
    if not value or ctx.resilient_parsing:
        return
    obj = ctx.ensure_object(dict)
    obj["verbosity"] = -1 if param.name == "quiet" else int(value)
    setup_logging(obj["verbosity"])


def _accept_verbosity(command: click.Command) -> None:
    """Give each command the group's -v / -q too, so they work after the command name
    (where people type them), not only before it."""
    if any(p.name in ("verbose", "quiet") for p in command.params):
        return
    command.params.extend([
        click.Option(["-v", "--verbose"], count=True, expose_value=False,
                     callback=_set_verbosity, help="More progress output."),
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False,
                     callback=_set_verbosity, help="No progress output."),
    ])


@click.group(cls=_LazyGroup)
@click.version_option(__version__, prog_name="gitsleep")
@click.option("--repo", "repo", default=".", type=click.Path(file_okay=False),
              help="The git repository to work in (default: the current directory).")
@click.option("--config", "config", default=None,
              help="The config file (default: .gitsleep.yml in the repository).")
@click.option("-v", "--verbose", count=True, help="More progress output.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.pass_context
def cli(ctx: click.Context, repo: str, config: str | None, verbose: int, quiet: bool) -> None:
    """gitsleep: consolidate agent skill documents through git, gated on your tasks."""
    ctx.obj = {"repo": repo, "config": config, "verbosity": -1 if quiet else verbose}
    setup_logging(-1 if quiet else verbose)


def main(argv: list[str] | None = None) -> None:
    """Entry point: every GitsleepError becomes one line on stderr and its exit code."""
    try:
        code = cli.main(args=argv, prog_name="gitsleep", standalone_mode=False)
    except GitsleepError as exc:
        click.echo(f"gitsleep: error: {visible(redact(str(exc)))}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort as exc:
        # Ctrl-C: 130; SIGTERM/SIGHUP (agent_procs.Terminated): 128 + the signal
        click.echo(f"gitsleep: {getattr(exc.__cause__, 'message', 'aborted')}", err=True)
        sys.exit(getattr(exc.__cause__, "exit_code", EXIT_INTERRUPTED))
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE if exc.exit_code == 1 else exc.exit_code)  # click says 1
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(code if isinstance(code, int) else EXIT_OK)


if __name__ == "__main__":  # pragma: no cover
    main()
