"""Child processes that tests start to play a crashed or concurrent gitsleep run."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any


def kill_child(proc: subprocess.Popen[Any]) -> None:
    """Kill the child as a crash would (no cleanup runs), reap it and close its pipes."""
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def gone(pid: int) -> bool:
    """A pid that no longer runs (absent, or a zombie its new parent has not reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def carrying(name: str, value: str) -> list[int]:
    """Live pids whose environment holds NAME=value: every process an agent started
    inherits the variable, whatever session or group it moved itself to."""
    needle = f"{name}={value}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0") and not gone(int(entry)):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def pids_in(pidfile: Path) -> list[int]:
    """Every pid an agent wrote to its pid file (complete lines only)."""
    if not pidfile.exists():
        return []
    text = pidfile.read_text(encoding="utf-8")
    return [int(p) for line in text.splitlines(keepends=True) if line.endswith("\n")
            for p in line.split()]
