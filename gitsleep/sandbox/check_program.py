"""The `command` check: a program from a committed task file judges the answer or the work.

A check is an argv (never a shell string) run in a folder: the task's workspace after the
agent ran, or, for a text task, an empty scratch folder. The answer is in a file the
variable `GITSLEEP_ANSWER` names (outside that folder, so it is never one of the agent's
changes). Pass = exit 0. It runs as an agent does (`backends.agent_procs.run_process`): its
own session, a deadline, an output cap, and every process it started killed when it ends.
Its environment is minimal (`check_environment`): what a program needs to start, plus
the names `checks.pass_env` lists; never the model key, cloud keys or forge tokens.

A check that fails, hangs or floods is a failed check whose reason is the tail of its
output, redacted whole first and then clipped: that is what the optimizer reads. A check
that cannot run at all (its program is missing or not executable) is `CheckCannotRun`,
exit 3 like a broken agent: a missing pytest must never read as a bad skill.

Trust: the argv comes only from task files committed to the repository, the same trust a
repository gives its own CI; `harvest` never writes a `command` check.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsleep.base.errors import BackendError
from gitsleep.base.redact import clip
from gitsleep.sandbox import processes as agent_procs
from gitsleep.sandbox.cleanup import remove_tree

if TYPE_CHECKING:
    from gitsleep.core.models import Task

ANSWER_ENV = "GITSLEEP_ANSWER"
ANSWER_FILE = "answer.txt"
CHECK_TIMEOUT = 300.0  # seconds one check command may run
MAX_OUTPUT_BYTES = 1 << 20  # stdout beyond this stops the check (a flood)
REASON_CHARS = 400  # the output tail kept in the reason
KILL_GRACE = 2.0
# What every check runs with: what a program needs to find its tools, its home, its
# locale and a temporary folder (and `LC_*`). Nothing here holds a key; anything else a
# check needs is named in `checks.pass_env`.
BASE_ENV = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ",
                      "TERM", "TMPDIR", "TMP", "TEMP"})


class CheckCannotRun(BackendError):
    """A check command could not be started at all (exit 3): the night stops, because a
    missing program would otherwise score every answer as failing."""


def argv_problem(value: Any) -> str | None:
    """Why a task's `command` arg is not a usable argv, or None."""
    if not isinstance(value, list):
        return ('must be a list of strings, the program and its arguments, e.g. '
                '["python", "-m", "pytest", "-q"] (never a shell string)')
    if not value:
        return 'is empty: give the program and its arguments, e.g. ["python", "-m", "pytest"]'
    if not all(isinstance(item, str) for item in value):
        return "must hold only strings (quote numbers, e.g. \"3\")"
    if not value[0].strip():
        return "has an empty program name: the first item names the program to run"
    if any("\0" in item for item in value):
        return "holds a NUL character, which no program argument can carry"
    return None


def program_problem(argv: Sequence[str], workspace: Path | None = None) -> str | None:
    """Why the program of `argv` cannot be found where the check would run, or None.

    A bare name must be on PATH. A path with a '/' is read in the workspace for a
    workspace task (`./run.sh`); a text task runs in an empty scratch folder, so only an
    absolute path can name a file there."""
    program = argv[0]
    if "/" not in program:
        if shutil.which(program) is None:
            return (f"program {program!r} is not on PATH: install it where gitsleep runs, "
                    "or fix the check's command")
        return None
    if not program.startswith("/"):
        if workspace is None:
            return (f"program {program!r} is a relative path, but a task without a workspace "
                    "runs its checks in an empty scratch folder: use a program on PATH or an "
                    "absolute path, or give the task a workspace")
        path = workspace / program
    else:
        path = Path(program)
    if not path.is_file():
        return f"program {program!r} does not exist: fix the check's command"
    if not os.access(path, os.X_OK):
        return f"program {program!r} is not executable: chmod +x it, or run it through python/sh"
    return None


def check_environment(base: Mapping[str, str] | None = None,
                      pass_env: Iterable[str] = ()) -> dict[str, str]:
    """The variables of `base` (gitsleep's environment) a check runs with: `BASE_ENV`, the
    `LC_*` locale and the names in `pass_env` (`checks.pass_env`). An agent may have
    rewritten what a check reads, and a check's output reaches the optimizer, so the model
    key, cloud keys and forge tokens stay out unless a person lists them; PATH keeps only
    its absolute entries, so no program is looked up in the agent's folder."""
    source = os.environ if base is None else base
    wanted = set(pass_env)
    kept = {name: value for name, value in source.items()
            if name in BASE_ENV or name.startswith("LC_") or name in wanted}
    if "PATH" in kept:  # an empty or relative entry is the check's folder: the agent's
        kept["PATH"] = os.pathsep.join(
            entry for entry in kept["PATH"].split(os.pathsep) if os.path.isabs(entry))
    return kept


def _default_redact(text: str) -> str:
    from gitsleep.base import logs

    return logs.redact(text)


def _reason(how: str, stdout: bytes, stderr: bytes, *, stdout_cut: bool, stderr_cut: bool,
            redact: Callable[[str], str]) -> str:
    """`how` and the output's tail: each stream masked whole (the partial word at a capture
    cut dropped first), then the joined text clipped from its start, on one line."""
    out = clip(stdout.decode("utf-8", "replace"), None, cut_end=stdout_cut, mask=redact)
    err = clip(stderr.decode("utf-8", "replace"), None,
               cut_start=stderr_cut or len(stderr) >= agent_procs.STDERR_TAIL_BYTES, mask=redact)
    text = " ".join(" ".join(part.split()) for part in (out, err) if part.strip())
    tail = clip(text, REASON_CHARS, tail=True)
    return f"{how}: {tail}" if tail else f"{how} (no output)"


def run_check(
    argv: Sequence[str],
    folder: Path,
    *,
    answer_file: Path | None = None,
    timeout: float = CHECK_TIMEOUT,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    kill_grace: float = KILL_GRACE,
    redact: Callable[[str], str] | None = None,
    env: Mapping[str, str] | None = None,
    pass_env: Iterable[str] = (),
) -> tuple[bool, str]:
    """Run one check in `folder`: (passed, reason); the reason is "" when it passed.
    `env`: the environment to take the check's from (gitsleep's own by default);
    `pass_env`: names passed on beyond the minimal set. Raises CheckCannotRun when the
    program cannot be started."""
    mask = redact or _default_redact
    variables = check_environment(env, pass_env)
    if answer_file is not None:
        variables[ANSWER_ENV] = str(answer_file)
    try:
        code, timed_out, overflow, out, err, _ = agent_procs.run_process(
            list(argv), cwd=str(folder), env=variables, stdin=None, timeout=timeout,
            max_output_bytes=max_output_bytes, kill_grace=kill_grace)
    except OSError as exc:
        raise CheckCannotRun(_cannot_run(argv, exc)) from None
    if overflow:
        return False, _reason(f"wrote more than {max_output_bytes} bytes of output; stopped",
                              out[-REASON_CHARS * 4:], err, stdout_cut=True, stderr_cut=False,
                              redact=mask)
    if timed_out:
        return False, _reason(f"timed out after {timeout:g}s (process group killed)",
                              out[-REASON_CHARS * 4:], err,
                              stdout_cut=len(out) > REASON_CHARS * 4, stderr_cut=False,
                              redact=mask)
    if code == 0:
        return True, ""
    how = f"killed by signal {-code}" if code < 0 else f"exited {code}"
    return False, _reason(how, out[-REASON_CHARS * 4:], err,
                          stdout_cut=len(out) > REASON_CHARS * 4, stderr_cut=False,
                          redact=mask)


def _cannot_run(argv: Sequence[str], exc: OSError) -> str:
    program = argv[0] if argv else ""
    if isinstance(exc, FileNotFoundError):
        return (f"check command {program!r} not found (command not found): install it where "
                "gitsleep runs, or fix the check's command in the task file")
    if isinstance(exc, PermissionError):
        return (f"check command {program!r} cannot be run (permission denied): make it "
                "executable, or fix the check's command in the task file")
    return (f"check command {program!r} cannot be started: {exc.strerror or exc}; "
            "fix the check's command in the task file")


def check_answer(argv: Sequence[str], answer: str, **options: Any) -> tuple[bool, str]:
    """Run a check on a text answer: in an empty scratch folder, the answer in a file
    beside it that `GITSLEEP_ANSWER` names; both deleted afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="gitsleep-check-"))
    try:
        work = scratch / "work"
        work.mkdir()
        answer_path = scratch / ANSWER_FILE
        answer_path.write_text(answer, encoding="utf-8")
        return run_check(argv, work, answer_file=answer_path, **options)
    finally:
        remove_tree(scratch)


def night_commands(skill: str, tasks: Iterable[Task]) -> list[str]:
    """One line per check command the tasks would run, for `validate` to show: a person
    reading a task file change sees every program a night will start."""
    from gitsleep.core.check_ops import check_argv

    lines = []
    for task in tasks:
        for check in task.judge.checks:
            argv = check_argv(check.op, check.text)
            if argv is None:
                continue
            where = (f"in the workspace {task.workspace}" if task.workspace
                     else f"in a scratch folder, the answer in ${ANSWER_ENV}")
            lines.append(f"{skill}: task {task.id!r}: {shlex.join(argv)} ({where})")
    return lines
