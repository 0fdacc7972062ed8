"""Child processes that tests start to play a crashed or concurrent gitsleep run."""

from __future__ import annotations

import signal
import subprocess
from typing import Any


def kill_child(proc: subprocess.Popen[Any]) -> None:
    """Kill the child as a crash would (no cleanup runs), reap it and close its pipes."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
