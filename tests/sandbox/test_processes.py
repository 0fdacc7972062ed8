"""No agent process outlives gitsleep by more than the kill grace.

A real `gitsleep eval` runs as its own process with an agent that hides its work (a
setsid() grandchild and a child, all ignoring SIGTERM); the test sends gitsleep SIGTERM,
SIGHUP or SIGINT while agents run, and checks by pid and by an inherited variable that
nothing the agents started is left, that gitsleep exits with 128 + the signal within the
grace, and that no agent was started (no retry) after the signal.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gitsleep.sandbox.processes import KILL_GRACE
from tests.support.fake_agents import install
from tests.support.processes import carrying, gone, pids_in

pytestmark = pytest.mark.slow  # agent processes killed on deadlines

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"


def agent_repo(tmp_path: Path, program: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    config = (repo / ".gitsleep.yml").read_text(encoding="utf-8")
    config = config.replace(
        "backend: offline            # the deterministic simulator: no key, no network",
        "backend: command\noptimizer_backend: offline\n"
        f"agent: {{command: [{json.dumps(str(program))}], retries: 2}}")
    assert "backend: command" in config
    (repo / ".gitsleep.yml").write_text(config, encoding="utf-8")
    return repo


def start_gitsleep(repo: Path, pidfile: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "FAKE_AGENT_PIDFILE": str(pidfile)}
    return subprocess.Popen(  # its own session: the signal goes to gitsleep alone
        [sys.executable, "-m", "gitsleep", "--repo", str(repo), "eval", "--split", "val"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_default_sighup)


def _default_sighup() -> None:
    """gitsleep as a shell starts it: a test run under `nohup` passes SIGHUP on ignored,
    and gitsleep keeps an inherited ignore on purpose (test_nohup_keeps_sighup_ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129),
                                           (signal.SIGINT, 130)])
def test_a_signal_to_gitsleep_kills_every_agent_process(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    pidfile = tmp_path / "pids"
    repo = agent_repo(tmp_path, install("detacher", tmp_path))
    proc = start_gitsleep(repo, pidfile)
    try:
        deadline = time.monotonic() + 60
        while len(pids_in(pidfile)) < 6:  # two agents (each with its two helpers) run
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agents never started"
            time.sleep(0.05)
        started = pids_in(pidfile)
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=KILL_GRACE + 20)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err
    assert took < KILL_GRACE + 8, f"gitsleep took {took:.1f}s to stop"
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("gitsleep: ")
    assert all(gone(pid) for pid in started), [p for p in started if not gone(p)]
    time.sleep(0.5)  # a retry or queued call that started late would show up now
    assert carrying("FAKE_AGENT_PIDFILE", str(pidfile)) == []
    every = pids_in(pidfile)
    assert every == started or all(gone(pid) for pid in every)
    assert len(every) - len(started) <= 3 * 2, "agents kept starting after the signal"


def test_nohup_keeps_sighup_ignored(tmp_path: Path) -> None:
    """`nohup gitsleep ...` ignores SIGHUP on purpose: gitsleep must not take that back."""
    probe = ("import signal\n"
             "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
             "from gitsleep.sandbox.processes import install_signal_handlers\n"
             "install_signal_handlers()\n"
             "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN,"
             " signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", "True"]
