"""Every process an agent run starts dies with the run, and with gitsleep.

An agent runs in its own session and process group (so a Ctrl-C at the terminal reaches
gitsleep, not the agent), and a group kill stops the agent and its ordinary children.
It does not stop a descendant that called setsid() (a daemon, a detached tool server):
that one lives in a new session and group. So each run also carries a marker, the
variable `GITSLEEP_AGENT_RUN=<gitsleep pid>-<random>` in the agent's environment, which
every descendant inherits through fork, exec and setsid. Killing a run means, on Linux:

1. scan /proc for the run's processes: those whose environment holds the marker, the
   agent's process group, and every descendant of the agent (by parent pid, for a child
   that rebuilt its environment while its parent still lives);
2. SIGSTOP them, and scan again until no new one appears (a stopped process cannot fork,
   so nothing escapes between the scan and the kill);
3. SIGKILL them all.

Why not the alternatives: cgroups need privileges or systemd; PR_SET_CHILD_SUBREAPER
only reparents orphans to gitsleep, and gitsleep still has to tell them from its own git
children (the marker does exactly that). Limit: a descendant that scrubs its environment
AND whose parent has already exited is not found; only a cgroup finds that one. Without
/proc (macOS), step 1 is the process group alone.

SIGTERM, SIGHUP and SIGINT to gitsleep kill every running agent this way (SIGTERM to
each first, SIGKILL after the kill grace), stop new runs and retries, and unwind the
command: exit 143 (SIGTERM), 129 (SIGHUP) or 130 (SIGINT), that is 128 + the signal.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import IO

from gitsleep.base.errors import BackendError

MARKER_ENV = "GITSLEEP_AGENT_RUN"
KILL_GRACE = 2.0  # seconds between SIGTERM and SIGKILL
POLL_SECONDS = 0.02
STDERR_TAIL_BYTES = 4096  # the tail of a run's stderr that is kept
KILL_WAIT = 2.0  # seconds to wait for SIGKILLed processes to be gone
# A program some process still holds open for writing cannot be executed (ETXTBSY). With
# several workers, a thread that forks while another writes `./check.sh` hands the child a
# write descriptor until the child's exec, so a fresh script can be busy for a moment.
BUSY_RETRY_SECONDS = 5.0
_PROC = "/proc"

# marker -> root pid of every agent run under way, in any backend of this process.
# A plain dict: the signal handler reads it on the main thread, which may hold any lock.
_LIVE: dict[str, int] = {}
_STOPPING = threading.Event()  # a signal arrived: no agent may start any more


class Terminated(KeyboardInterrupt):
    """gitsleep got SIGTERM or SIGHUP: unwind like Ctrl-C, exit 128 + the signal.

    A KeyboardInterrupt, so no `except Exception` on the way swallows it, and every
    `finally` (locks, worktrees, the agents' kill) runs.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        self.message = f"terminated by {signal.Signals(signum).name}"
        super().__init__(self.message)


def new_marker() -> str:
    """A marker value no other run (of this or another gitsleep) carries."""
    return f"{os.getpid()}-{secrets.token_hex(8)}"


def stopping() -> bool:
    """Whether gitsleep is shutting down on a signal: start no agent, retry nothing."""
    return _STOPPING.is_set()


def register(marker: str, pid: int) -> None:
    _LIVE[marker] = pid


def unregister(marker: str) -> None:
    _LIVE.pop(marker, None)


def _live_runs() -> list[tuple[str, int]]:
    while True:
        try:
            return list(_LIVE.items())
        except RuntimeError:  # changed size while copying (another thread): copy again
            continue


# --- finding a run's processes -----------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, process group) of a process, or None when it is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _has_marker(pid: int, needles: set[bytes], prefix: bytes | None) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except OSError:  # gone, or not ours to read
        return False
    return any(e in needles or (prefix is not None and e.startswith(prefix)) for e in entries)


def own_prefix() -> bytes:
    """What every marker of this gitsleep process starts with (`new_marker`)."""
    return f"{MARKER_ENV}={os.getpid()}-".encode()


def run_processes(runs: dict[str, int], prefix: bytes | None = None) -> set[int]:
    """Live pids of the runs (marker -> root pid): marked, in a root's process group, or
    below a root; with `prefix`, also any process whose marker starts with it. Without
    /proc: nothing (the caller kills the groups)."""
    if (not runs and prefix is None) or not os.path.isdir(_PROC):
        return set()
    needles = {f"{MARKER_ENV}={m}".encode() for m in runs}
    roots = set(runs.values())
    me = os.getpid()
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    for entry in os.listdir(_PROC):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        info = _stat(pid)
        if info is None or info[0] in ("Z", "X"):
            continue
        state, ppid, pgid = info
        children.setdefault(ppid, []).append(pid)
        if pgid in roots or pid in roots or _has_marker(pid, needles, prefix):
            found.add(pid)
    stack = list(roots)
    while stack:  # descendants, by parent pid
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    found.discard(me)
    return found


def _gone(pid: int) -> bool:
    info = _stat(pid)
    return info is None or info[0] in ("Z", "X")


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def kill_runs(runs: dict[str, int], prefix: bytes | None = None) -> None:
    """SIGKILL every process of these runs (marker -> root pid; with `prefix`, of every
    run whose marker starts with it): stop, rescan until nothing new, kill."""
    for root in runs.values():
        _signal_group(root, signal.SIGKILL)
    stopped: set[int] = set()
    for _ in range(50):  # each round stops what the last one found; a fork bomb ends too
        fresh = run_processes(runs, prefix) - stopped
        if not fresh:
            break
        _signal(fresh, signal.SIGSTOP)
        stopped |= fresh
    _signal(stopped, signal.SIGKILL)
    # SIGKILL is delivered asynchronously: wait (bounded) until each is dead, so "killed"
    # means gone when this returns (seen: a stopped grandchild still listed a moment later).
    deadline = time.monotonic() + KILL_WAIT
    while stopped and time.monotonic() < deadline:
        stopped = {pid for pid in stopped if not _gone(pid)}
        if stopped:
            time.sleep(POLL_SECONDS)


def kill_run(marker: str, root: int) -> None:
    """SIGKILL every process of one agent run."""
    kill_runs({marker: root})


def terminate_runs(runs: dict[str, int], grace: float = KILL_GRACE,
                   prefix: bytes | None = None) -> None:
    """SIGTERM every process of these runs, SIGKILL what is left after `grace`."""
    if not runs and prefix is None:
        return
    pids = run_processes(runs, prefix)
    for root in runs.values():
        _signal_group(root, signal.SIGTERM)
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not run_processes(runs, prefix) and all(_gone(root) for root in runs.values()):
            break
        time.sleep(POLL_SECONDS)
    kill_runs(runs, prefix)


def terminate_all(grace: float = KILL_GRACE) -> None:
    """Stop every agent run of this process: no new one starts, the running ones die,
    also one started a moment before it could be registered (found by its marker)."""
    _STOPPING.set()
    terminate_runs(dict(_live_runs()), grace, own_prefix())


# --- signals -------------------------------------------------------------------------------


def _on_signal(signum: int, frame: FrameType | None) -> None:
    terminate_all()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """SIGTERM, SIGHUP and SIGINT kill the running agents and unwind the command.

    Only from the main thread, and only over the default handlers: a SIGHUP that
    `nohup` ignores stays ignored, and a handler someone else set is left alone.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    defaults: dict[int, object] = {signal.SIGTERM: signal.SIG_DFL,
                                   signal.SIGINT: signal.default_int_handler}
    hangup = getattr(signal, "SIGHUP", None)  # POSIX only; Windows has no SIGHUP
    if hangup is not None:
        defaults[hangup] = signal.SIG_DFL
    for signum, default in defaults.items():
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(signum) is default:
                signal.signal(signum, _on_signal)


# --- running one program ------------------------------------------------------------------


@dataclass
class _Capture:
    """Drains one pipe on a thread: keeps its head (stdout) or its tail (stderr)."""

    stream: IO[bytes]
    limit: int
    tail: bool = False
    overflow: threading.Event = field(default_factory=threading.Event)
    data: bytearray = field(default_factory=bytearray)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self._drain, daemon=True)
        thread.start()
        return thread

    def _drain(self) -> None:
        fd = self.stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            if self.tail:
                self.data += chunk
                del self.data[: max(0, len(self.data) - self.limit)]
            elif len(self.data) <= self.limit:
                self.data += chunk
                if len(self.data) > self.limit:
                    self.overflow.set()  # keep draining so the agent never blocks on a pipe


def _exited(pid: int) -> bool:
    """Whether the process has exited, without reaping it: its pid, and so its process
    group id, stay reserved until we have killed what is left of the group."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _wait_until(pid: int, deadline: float, stop: threading.Event | None = None) -> bool:
    while not _exited(pid):
        if (time.monotonic() >= deadline or (stop is not None and stop.is_set())
                or stopping()):
            return False
        time.sleep(POLL_SECONDS)
    return True


def _start(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], stdin: bool
           ) -> subprocess.Popen[bytes]:
    """Start argv in its own session; a program that is busy (ETXTBSY: another process
    still holds it open for writing) is tried again for up to `BUSY_RETRY_SECONDS`."""
    deadline = time.monotonic() + BUSY_RETRY_SECONDS
    pause = 0.01
    while True:
        try:
            return subprocess.Popen(  # noqa: S603 - argv from the config, never a shell
                list(argv), cwd=cwd, env=dict(env), start_new_session=True,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as exc:
            if exc.errno != errno.ETXTBSY or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    stdin: bytes | None,
    timeout: float,
    max_output_bytes: int,
    kill_grace: float = KILL_GRACE,
    live: Callable[[str, int, bool], None] | None = None,
) -> tuple[int, bool, bool, bytes, bytes, float]:
    """Run argv in its own session; at the deadline, and in any case when it ends, kill
    every process it started (its group, its descendants, whatever carries its marker:
    see agent_procs), so a setsid() daemon dies with the run too.

    Returns (exit code, timed out, output over the cap, stdout head, stderr tail, seconds).
    Raises OSError when the program cannot be started, BackendError when gitsleep is
    stopping on a signal. `live(marker, pid, running)` is told when the run starts and
    ends, so an owner can kill it early.
    """
    if stopping():
        raise BackendError("gitsleep is stopping (a signal): no agent is started")
    started = time.monotonic()
    marker = new_marker()
    proc = _start(argv, cwd=cwd, env={**env, MARKER_ENV: marker}, stdin=stdin is not None)
    assert proc.stdout is not None and proc.stderr is not None
    out = _Capture(proc.stdout, max_output_bytes)
    err = _Capture(proc.stderr, STDERR_TAIL_BYTES, tail=True)
    threads: list[threading.Thread] = []
    finished = False
    try:  # from here on, whatever happens (Ctrl-C included), the run is killed and reaped
        register(marker, proc.pid)
        if live is not None:
            live(marker, proc.pid, True)
        threads += [out.start(), err.start()]
        if stdin is not None:
            threads.append(threading.Thread(target=_feed, args=(proc.stdin, stdin),
                                            daemon=True))
            threads[-1].start()
        finished = _wait_until(proc.pid, started + timeout, out.overflow)
        if not finished:
            terminate_runs({marker: proc.pid}, kill_grace)
    finally:
        # What ignores SIGTERM, what outlived the agent, what moved to its own session:
        # before the agent is reaped, so its pid (and group id) cannot have been reused.
        kill_run(marker, proc.pid)
        unregister(marker)
        if live is not None:
            live(marker, proc.pid, False)
        code = proc.wait()
        for thread in threads:
            thread.join(timeout=5)
        proc.stdout.close()
        proc.stderr.close()
    seconds = time.monotonic() - started
    overflow = out.overflow.is_set()
    timed_out = not finished and not overflow
    return code, timed_out, overflow, bytes(out.data), bytes(err.data), seconds


def _feed(stream: IO[bytes] | None, data: bytes) -> None:
    if stream is None:
        return
    try:
        stream.write(data)
    except (BrokenPipeError, OSError):
        pass  # the agent did not read its stdin: that is its business
    finally:
        with contextlib.suppress(OSError):
            stream.close()
