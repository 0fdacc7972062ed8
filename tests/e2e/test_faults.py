"""Faults injected into whole `gitsleep consolidate` runs, and what each one leaves behind.

Every test breaks one thing at the edge (the model server, GitHub, the git remote, the
process, the disk, the lock), then checks four things: the exit code, the one line the
user reads, that the user's checkout and the remote are unchanged or consistent, and that
the next run recovers with no manual cleanup (usually without a single model call, from
the response cache). The README's fault table is this file, in prose.

Killed during scoring is `tests/e2e/test_git_run.py::
test_a_run_killed_mid_epoch_leaves_nothing_that_breaks_the_next`; stopped after the
commit and before the push is `test_run_stopped_after_commit_before_push_is_finished_by_
the_next` there. This file adds real kills during the push itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_git_run import user_state
from tests.e2e.test_model_server import scripted_model
from tests.support.cli import CliResult, run_cli
from tests.support.fake_github import FakeGitHub, secondary_rate_limit, server_error
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import clone, commit_files, example_files, git, isolate_git, make_repo
from tests.support.processes import kill_child

pytestmark = pytest.mark.slow  # whole nights killed and resumed

BRANCH = "gitsleep/brief-writer"
KEY = "sk-faults-0123456789abcdefghijklmnopqrstu"
KEY_ENV = "GITSLEEP_FAULTS_KEY"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The example in a working clone with a bare origin; no forge token, no model key."""
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, KEY)
    work, origin = make_repo(tmp_path, example_files())
    commit_files(work, {".gitignore": ".gitsleep/\n"}, "ignore gitsleep runs")
    git(work, "push", "--quiet", "origin", "main")
    return work, origin


def use_model_server(work: Path, base_url: str, **extra: Any) -> None:
    """Commit a config that talks to an OpenAI-compatible server at `base_url`."""
    cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
    cfg.update({"backend": "openai", "model": "agent-model",
                "optimizer_model": "optimizer-model", "base_url": base_url,
                "api_key_env": KEY_ENV, "timeout": 2, "max_retries": 1, **extra})
    commit_files(work, {".gitsleep.yml": yaml.safe_dump(cfg)}, "use the model server")
    git(work, "push", "--quiet", "origin", "main")


def consolidate(capsys: pytest.CaptureFixture[str], work: Path, *extra: str) -> CliResult:
    return run_cli(capsys, "--repo", str(work), "consolidate", "--push", *extra)


def summary(result: CliResult) -> dict[str, Any]:
    """The --json object, from a run made with --json."""
    return json.loads(result.out)


def the_line(result: CliResult) -> str:
    """What the user reads: the one `gitsleep: error:` line, or the one result line."""
    assert "Traceback" not in result.err, result.err
    errors = [line for line in result.err.splitlines() if line.startswith("gitsleep: error:")]
    if errors:
        assert len(errors) == 1, result.err
        return errors[0]
    results = [line for line in result.out.splitlines() if line.startswith("brief-writer: ")]
    # An aborted epoch is a failure: its result line goes to stderr, with the errors.
    results += [line for line in result.err.splitlines()
                if line.startswith("brief-writer: aborted: ")]
    assert len(results) == 1, (result.out, result.err)
    return results[0]


def remote_tip(origin: Path) -> str | None:
    return git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) or None


def remote_note(origin: Path, commit: str) -> str | None:
    return git(origin, "notes", "--ref=gitsleep", "show", commit, check=False) or None


def assert_nothing_left(work: Path) -> None:
    """No lock, no worktree: nothing a person would have to clean up."""
    locks = work / ".git" / "gitsleep" / "locks"
    assert not locks.exists() or not list(locks.glob("*.lock")), list(locks.iterdir())
    assert git(work, "worktree", "list").count("\n") == 0


def assert_nothing_committed(work: Path, origin: Path) -> None:
    assert git(work, "branch", "--list", BRANCH) == ""
    assert remote_tip(origin) is None


def recovers(capsys: pytest.CaptureFixture[str], work: Path, origin: Path,
             *, calls: int | None = None) -> dict[str, Any]:
    """The next plain run ends accepted and pushed; `calls` model calls if given."""
    result = consolidate(capsys, work, "--json")
    assert result.code == 0, result.err
    data = summary(result)
    assert data["decision"] == "accepted", data
    if calls is not None:
        assert data["cost"]["calls"] == calls, data["cost"]
    assert remote_tip(origin) == data["commit"]
    assert remote_note(origin, data["commit"]), "the diagnostics note reached the remote"
    assert_nothing_left(work)
    return data


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the model server ----------------------------------------------------------------------


def test_model_server_down_is_exit_3_and_nothing_is_committed(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    port = free_port()
    use_model_server(work, f"http://127.0.0.1:{port}/v1")
    before = user_state(work)
    result = consolidate(capsys, work)
    assert result.code == 3
    line = the_line(result)
    assert line.startswith("brief-writer: aborted:") and "model calls failed" in line
    assert "connect" in line.lower()
    assert user_state(work) == before
    assert_nothing_committed(work, origin)
    assert_nothing_left(work)
    with FakeOpenAIServer(responder=scripted_model) as server:  # the server is back
        use_model_server(work, server.base_url)
        recovers(capsys, work, origin)


def test_the_abort_line_goes_to_stderr_and_stdout_stays_empty(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _origin = repo
    use_model_server(work, f"http://127.0.0.1:{free_port()}/v1")
    result = consolidate(capsys, work)
    assert result.code == 3
    assert "aborted" not in result.out and result.out == "", result.out
    assert [line for line in result.err.splitlines()
            if line.startswith("brief-writer: aborted: ")], result.err


def test_a_few_hung_calls_are_retried_and_the_run_goes_on(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    with FakeOpenAIServer(responder=scripted_model, hang_seconds=3) as server:
        use_model_server(work, server.base_url, timeout=0.5, max_retries=2)
        server.inject("hang", "hang", "hang")
        data = recovers(capsys, work, origin)
        assert server.pending_faults == 0
    assert data["cost"]["calls"] < server.request_count, "the hung requests were retried"


def test_a_slow_server_times_out_into_exit_3_and_the_next_run_recovers(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    with FakeOpenAIServer(responder=scripted_model, latency=2.0) as server:
        use_model_server(work, server.base_url, timeout=0.25, max_retries=0)
        before = user_state(work)
        started = time.monotonic()
        result = consolidate(capsys, work)
        elapsed = time.monotonic() - started
    assert result.code == 3
    line = the_line(result)
    assert "aborted" in line and "timeout: no reply within 0.25s" in line
    assert elapsed < 15, "timeouts bound the run: it does not wait for the slow server"
    assert user_state(work) == before
    assert_nothing_committed(work, origin)
    assert_nothing_left(work)
    with FakeOpenAIServer(responder=scripted_model) as server:
        use_model_server(work, server.base_url)
        recovers(capsys, work, origin)


def test_a_server_that_trickles_is_cut_by_the_total_deadline_into_exit_3(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Headers at once, then one byte per 0.2 s: no read ever times out, every call does."""
    work, origin = repo
    with FakeOpenAIServer(responder=scripted_model, trickle_interval=0.2,
                          trickle_seconds=60) as server:
        use_model_server(work, server.base_url, timeout=0.4, max_retries=0, workers=16)
        server.inject(*["trickle"] * 1000)
        started = time.monotonic()
        result = consolidate(capsys, work)
        elapsed = time.monotonic() - started
        server.reset()
        assert result.code == 3
        line = the_line(result)
        assert "aborted" in line and "timeout: no reply within 0.4s" in line
        assert elapsed < 30, f"each call is bounded by its timeout; took {elapsed:.0f}s"
        assert_nothing_committed(work, origin)
        assert_nothing_left(work)
        # the user's next step: a timeout the server can meet (0.4 s with no retry is a
        # coin toss on a busy machine once sixteen trickles are still closing)
        use_model_server(work, server.base_url, workers=16)
        recovers(capsys, work, origin)


def test_a_429_storm_is_waited_out(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    with FakeOpenAIServer(responder=scripted_model, retry_after=0.05) as server:
        use_model_server(work, server.base_url, max_retries=4)
        server.inject(*["429"] * 12)
        data = recovers(capsys, work, origin)
        statuses = [r.status for r in server.requests]
    assert statuses.count(429) == 12
    assert data["cost"]["calls"] == statuses.count(200), "each call counted once, not per retry"


def test_a_429_storm_that_never_ends_is_exit_3_and_recoverable(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    with FakeOpenAIServer(responder=scripted_model, retry_after=0.01) as server:
        use_model_server(work, server.base_url, max_retries=1)
        server.inject(*["429"] * 1000)
        before = user_state(work)
        result = consolidate(capsys, work)
        line = the_line(result)
        server.reset()
        assert result.code == 3
        assert "aborted" in line and "429" in line
        assert user_state(work) == before
        assert_nothing_committed(work, origin)
        recovers(capsys, work, origin)


def test_a_401_in_the_middle_of_a_run_stops_it_at_once(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The key is revoked after 20 answers: exit 3 at once, no further call, no commit;
    the answers already paid for are cached, so the next run does not pay for them again."""
    work, origin = repo
    answered = 0
    server: FakeOpenAIServer

    def revoke_after_20(request: dict[str, Any]) -> str:
        nonlocal answered
        answered += 1
        if answered == 20:
            server.api_key = "sk-rotated-key-the-run-does-not-have"
        return scripted_model(request)

    with FakeOpenAIServer(responder=revoke_after_20) as server:
        use_model_server(work, server.base_url, workers=2)
        before = user_state(work)
        result = consolidate(capsys, work, "--json")
        sent = server.request_count
        assert result.code == 3
        data = summary(result)
        assert data["decision"] == "aborted" and KEY_ENV in data["reason"]
        assert "\n" not in data["reason"]
        assert sent <= 20 + 2, "no call starts after the 401 (at most those in flight)"
        assert KEY not in result.out + result.err
        assert user_state(work) == before
        assert_nothing_committed(work, origin)
        assert_nothing_left(work)
        server.api_key = None  # the key works again
        again = recovers(capsys, work, origin)
    assert again["cost"]["cache_hits"] >= 19, "the answers before the 401 were kept"


# -- GitHub --------------------------------------------------------------------------------


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        yield fake


def test_github_500_then_success_opens_the_pull_request(
    repo: tuple[Path, Path], github: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    github.fail_next(server_error(method="POST", path_contains="/pulls"))
    data = recovers(capsys, work, origin)
    assert data["pr"]["operation"] == "created"
    assert len(github.pulls) == 1
    posts = [r for r in github.requests if r.method == "POST" and r.path.endswith("/pulls")]
    assert len(posts) == 2, "the 500 was retried once"


def test_github_rate_limit_then_success_opens_the_pull_request(
    repo: tuple[Path, Path], github: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    github.fail_next(secondary_rate_limit(retry_after=None, method="POST",
                                          path_contains="/pulls"))
    data = recovers(capsys, work, origin)
    assert data["pr"]["operation"] == "created" and len(github.open_pulls()) == 1


def test_github_down_for_good_is_exit_4_and_the_next_run_opens_the_pr(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit is pushed, the PR cannot be opened: exit 4 and the branch kept; the next
    run (GitHub is back) opens the PR with no model call and no new commit."""
    work, origin = repo
    with FakeGitHub() as down:
        for key, value in down.env().items():
            monkeypatch.setenv(key, value)
        down.fail_next(*[server_error() for _ in range(100)])
        before = user_state(work)
        result = consolidate(capsys, work)
    assert result.code == 4
    line = the_line(result)
    assert "GitHub" in line and "try again later" in line
    assert down.token not in result.err
    pushed = remote_tip(origin)
    assert pushed and git(work, "rev-parse", BRANCH) == pushed, "local work kept and pushed"
    assert user_state(work) == before
    assert_nothing_left(work)
    with FakeGitHub() as back:
        for key, value in back.env().items():
            monkeypatch.setenv(key, value)
        data = recovers(capsys, work, origin, calls=0)
        assert len(back.open_pulls()) == 1
    assert data["commit"] == pushed and data["pr"]["operation"] == "created"


def test_a_github_api_url_that_is_not_http_is_exit_4_and_the_next_run_opens_the_pr(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    work, origin = repo
    with FakeGitHub() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("GITHUB_API_URL", "ftp://" + fake.api_url.removeprefix("http://"))
        result = consolidate(capsys, work)
        assert result.code == 4
        line = the_line(result)
        assert line.startswith("gitsleep: error: GITHUB_API_URL is not an http(s) URL")
        pushed = remote_tip(origin)
        assert pushed, "the commit was pushed: only the pull request is missing"
        assert fake.requests == []
        monkeypatch.setenv("GITHUB_API_URL", fake.api_url)
        data = recovers(capsys, work, origin, calls=0)
        assert data["commit"] == pushed and data["pr"]["operation"] == "created"


# -- the git remote ------------------------------------------------------------------------


def test_push_rejected_because_someone_moved_the_remote_branch(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """While the epoch runs, another machine's gitsleep replaces the remote branch. The
    lease refuses the push (exit 4), nothing is overwritten, the local branch keeps the
    new commit, and the next run pushes it over the other gitsleep commit."""
    work, origin = repo
    moved = False
    other = tmp_path / "other-machine"

    def move_remote_branch_once(request: dict[str, Any]) -> str:
        nonlocal moved
        if not moved:
            moved = True
            git(other, "fetch", "--quiet", "origin", BRANCH)
            git(other, "checkout", "--quiet", "-B", "their-run", "FETCH_HEAD")
            git(other, "-c", "user.name=Other Machine", "commit", "--quiet", "--amend",
                "--no-edit", "--reset-author")
            # gitsleep's own commit: its note names it (without one it would be a person's)
            sha = git(other, "rev-parse", "HEAD")
            git(other, "fetch", "--quiet", "origin", "refs/notes/gitsleep:refs/notes/gitsleep")
            git(other, "notes", "--ref=gitsleep", "add", "-m",
                json.dumps({"commit": sha, "branch": BRANCH}), sha)
            git(other, "push", "--quiet", "--force", "origin", f"HEAD:refs/heads/{BRANCH}",
                "refs/notes/gitsleep")
        return scripted_model(request)

    with FakeOpenAIServer(responder=scripted_model) as server:
        use_model_server(work, server.base_url)
        first = recovers(capsys, work, origin)
        clone(origin, other)
        tasks = work / "evals/brief-writer/tasks.jsonl"
        extra = {"id": "train-new", "split": "train", "prompt": "Write a brief on backups.",
                 "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Owner"}]}}
        commit_files(work, {"evals/brief-writer/tasks.jsonl":
                            tasks.read_text() + json.dumps(extra) + "\n"}, "a new task")
        git(work, "push", "--quiet", "origin", "main")  # new requests: the model is asked
        server.responder = move_remote_branch_once
        before = user_state(work)
        result = consolidate(capsys, work)
        assert moved
        theirs = remote_tip(origin)
        assert result.code == 4
        line = the_line(result)
        assert "rejected" in line and "Nothing was overwritten" in line
        assert theirs not in (None, first["commit"]), "their push stands"
        ours = git(work, "rev-parse", BRANCH)
        assert ours != theirs and git(work, "rev-parse", f"{ours}^") == git(work, "rev-parse",
                                                                            "main")
        assert user_state(work) == before
        assert_nothing_left(work)
        data = recovers(capsys, work, origin, calls=0)
    assert data["commit"] == ours, "the kept commit is the one pushed, not a new one"


PRE_RECEIVE = """#!/bin/sh
# Hold pushes of refs matching $GITSLEEP_TEST_HOLD until the test kills the pusher.
while read old new ref; do
  case "$ref" in
    {pattern}) touch "{started}"; while [ ! -f "{release}" ]; do sleep 0.05; done;;
  esac
done
exit 0
"""


# Runs in separate processes get the same hash seed: see
# test_a_rerun_in_a_new_process_makes_no_model_call for why that matters today.
SEED = {"PYTHONHASHSEED": "0"}


def _gitsleep_process(work: Path, *args: str) -> subprocess.Popen[str]:
    """gitsleep in its own session, so the kill takes its `git push` child with it, as
    when a CI runner or a laptop dies."""
    return subprocess.Popen([sys.executable, "-m", "gitsleep", "consolidate", "--push", *args],
                            cwd=work,
                            env={**os.environ, **SEED}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def recovers_in_a_new_process(work: Path, origin: Path, *, calls: int) -> dict[str, Any]:
    """`recovers`, as the next cron job would run it: a new process."""
    proc = _gitsleep_process(work, "--json")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    data = json.loads(out)
    # a run that only had the note left to push finds the branch up to date: it says so,
    # with the epoch's own decision beside it
    decision = data["recorded_decision"] if data.get("up_to_date") else data["decision"]
    assert decision == "accepted" and data["cost"]["calls"] == calls, data
    assert remote_tip(origin) == data["commit"]
    assert remote_note(origin, data["commit"]), "the diagnostics note reached the remote"
    assert_nothing_left(work)
    return data


def _kill_while_pushing(work: Path, origin: Path, tmp_path: Path, pattern: str) -> None:
    started, release = tmp_path / "push-started", tmp_path / "push-release"
    hook = origin / "hooks" / "pre-receive"
    hook.write_text(PRE_RECEIVE.format(pattern=pattern, started=started, release=release))
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    proc = _gitsleep_process(work)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists(), proc.communicate()[1] if proc.poll() is not None else "slow"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # gitsleep, its git push and the hook
        proc.communicate()
        hook.unlink()
        release.touch()
    assert proc.returncode == -signal.SIGKILL


def test_killed_while_pushing_the_branch(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """SIGKILL while the remote holds the branch push: the remote is unchanged, the local
    commit and a dead run's lock are left; the next run takes the lock over and pushes
    the same commit, replayed from the cache."""
    work, origin = repo
    before = user_state(work)
    _kill_while_pushing(work, origin, tmp_path, "refs/heads/*")
    assert remote_tip(origin) is None, "the push never landed"
    local = git(work, "rev-parse", BRANCH)
    assert git(work, "notes", "--ref=gitsleep", "show", local), "the note was made"
    assert list((work / ".git" / "gitsleep" / "locks").glob("*.lock")), "a dead run's lock"
    assert user_state(work) == before
    data = recovers_in_a_new_process(work, origin, calls=0)
    assert data["commit"] == local


def test_killed_while_pushing_the_notes(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin = repo
    _kill_while_pushing(work, origin, tmp_path, "refs/notes/*")
    commit = git(work, "rev-parse", BRANCH)
    assert remote_tip(origin) == commit, "the branch push landed before the kill"
    assert remote_note(origin, commit) is None
    recovers_in_a_new_process(work, origin, calls=0)  # asserts the note reached the remote


# -- the disk and the lock -----------------------------------------------------------------


@pytest.mark.parametrize("dry", [False, True], ids=["consolidate", "dry-run"])
def test_diagnostics_that_cannot_be_written_are_exit_4_before_any_commit(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path, dry: bool
) -> None:
    """--output-dir under a regular file: every write fails like a full or read-only disk
    (even for root). The epoch's replies are cached, so the next run is free."""
    work, origin = repo
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be\n")
    before = user_state(work)
    result = consolidate(capsys, work, *(["--dry-run"] if dry else []),
                         "--output-dir", str(blocker / "runs"))
    assert result.code == 4
    line = the_line(result)
    assert "cannot write diagnostics" in line and str(blocker) in line
    assert user_state(work) == before
    assert_nothing_committed(work, origin)
    assert_nothing_left(work)
    recovers(capsys, work, origin, calls=0)


def test_a_lock_left_by_a_killed_run_is_taken_over(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time, git\n"
         "from gitsleep.git_forge.lock import RepoLock\n"
         "with RepoLock(git.Repo(sys.argv[1]), 'brief-writer'):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(120)\n", str(work)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        busy = consolidate(capsys, work)
        assert busy.code == 5
        assert f"pid {holder.pid}" in the_line(busy)
    finally:
        kill_child(holder)
    assert list((work / ".git" / "gitsleep" / "locks").glob("*.lock")), "the lock was left"
    recovers(capsys, work, origin)


def test_a_lock_from_another_host_is_never_guessed_about(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    lock = (work / ".git").resolve() / "gitsleep" / "locks" / "brief-writer.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"pid": 1, "host": "ci-runner-7", "time": "2026-01-01T00:00:00",
                                "skill": "brief-writer", "token": "x"}))
    result = consolidate(capsys, work)
    assert result.code == 5
    line = the_line(result)
    assert "ci-runner-7" in line and str(lock) in line
    assert remote_tip(origin) is None
    lock.unlink()  # what the message says to do
    recovers(capsys, work, origin)


def test_a_rerun_in_a_new_process_makes_no_model_call() -> None:
    """The optimizer prompt for the same failures must be the same text in every process.

    Each process here has its own hash seed; three checks failed by equally many tasks can
    come out in 6 orders, so 6 seeds agreeing by chance is a 1-in-7,776 event.
    """
    script = (
        "from gitsleep.core.models import Check, Score, SampleResult, TaskResult\n"
        "from gitsleep.core.reflect import failing_checks\n"
        "checks = (Check('contains', 'Owner'), Check('regex', 'Risk'), Check('max_chars', 300))\n"
        "failed = [TaskResult(f't{i}', 'train', [SampleResult(0, 'a', None, "
        "Score(0.0, 0.0, 'x', checks))]) for i in range(3)]\n"
        "print([c.label() for c, _ in failing_checks(failed).most_common()])\n"
    )
    orders = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)},
                             ).stdout for seed in range(6)}
    assert len(orders) == 1, orders
