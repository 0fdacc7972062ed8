"""The `command` tool: the declared argv, run for the agent under the workspace rules.

The agent chooses nothing but the text on stdin: the program and its arguments are the
declaration's. It runs in a scratch copy of the tool's folder (its text files, as read
from git at the base commit), with a check's minimal environment (no model key, no cloud
or forge token, PATH without relative entries), a wall-time bound (its process group
killed after it) and an output bound. What it printed comes back redacted and clipped.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from gitsleep.base.redact import clip
from gitsleep.core.tools import ToolSpec, path_problem
from gitsleep.sandbox import processes
from gitsleep.sandbox.check_program import check_environment

MAX_OUTPUT_BYTES = 256 * 1024
RESULT_CHARS = 4000
KILL_GRACE = 2.0


def write_folder(tool: ToolSpec, dest: Path) -> None:
    """The folder's text files under `dest`; a path that would leave it is skipped."""
    for relative, text in tool.files:
        if path_problem(relative):
            continue
        path = dest / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_command_tool(tool: ToolSpec, stdin: str, *, pass_env: Iterable[str] = (),
                     redact: Callable[[str], str] | None = None) -> tuple[str, str | None]:
    """(output, error): `exit <code>` and what the program printed, or why it did not run."""
    scratch = Path(tempfile.mkdtemp(prefix="gitsleep-tool-"))
    try:
        write_folder(tool, scratch)
        try:
            code, timed_out, overflow, out, err, _ = processes.run_process(
                list(tool.argv), cwd=str(scratch), env=check_environment(None, pass_env),
                stdin=stdin.encode("utf-8"), timeout=tool.timeout,
                max_output_bytes=MAX_OUTPUT_BYTES, kill_grace=KILL_GRACE)
        except OSError as exc:
            return "", f"the command {tool.argv[0]!r} cannot be started: {exc.strerror or exc}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    printed = (out + b"\n" + err).decode("utf-8", "replace").strip()
    mask = redact or (lambda text: text)
    shown = clip(printed, RESULT_CHARS, tail=True, mask=mask)
    if timed_out:
        return shown, f"timed out after {tool.timeout:g}s (process group killed)"
    if overflow:
        return shown, f"wrote more than {MAX_OUTPUT_BYTES} bytes of output; stopped"
    return f"exit {code}\n{shown}".rstrip(), None
