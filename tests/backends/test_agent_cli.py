"""The agent CLI backend against small fake agent programs, one per failure rule."""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
from gitsleep.base.errors import BackendError
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Judge, Task
from gitsleep.core.ports import ModelCall
from gitsleep.core.replay import answer_call
from tests.support.fake_agents import install
from tests.support.processes import carrying, pids_in

TASK = Task(id="t1", prompt="Summarise the outage", split="val", judge=Judge(kind="rule"))
DOCS = {"skill": "# Skill\nAlways start with TL;DR.", "memory": None}


def call(documents: dict[str, str | None] | None = None, task: Task = TASK) -> ModelCall:
    return answer_call(documents or DOCS, task, "agent", 0)


def backend(program: Path, env: dict[str, str] | None = None, **spec: object) -> AgentCliBackend:
    settings = AgentSpec(command=(str(program),), timeout=10.0, kill_grace=0.5, retries=2)
    return AgentCliBackend(replace(settings, **spec), env={**os.environ, **(env or {})})


def gone(pid: int) -> bool:
    """A pid that no longer runs (absent, or a zombie its new parent has not reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_good_agent_reads_the_installed_skill_in_a_fresh_workspace(tmp_path: Path) -> None:
    agent = backend(install("good", tmp_path))
    answer = agent.complete(call())
    assert answer.ok, answer.error
    assert "task: Summarise the outage" in answer.text
    assert "rules: # Skill\nAlways start with TL;DR." in answer.text
    assert answer.text.endswith("files: AGENTS.md")  # the workspace holds only the skill
    assert answer.seconds is not None and answer.seconds > 0
    assert not answer.tokens_known and answer.prompt_tokens == 0  # never invented


def test_memory_goes_where_memory_install_says_or_after_the_skill(tmp_path: Path) -> None:
    docs = {"skill": "skill rules", "memory": "team memory"}
    program = install("good", tmp_path)
    split = backend(program, memory_install="notes/MEMORY.md").complete(call(docs))
    assert "files: AGENTS.md notes/MEMORY.md" in split.text
    assert "rules: skill rules\n" in split.text
    joined = backend(program).complete(call(docs))
    assert "rules: skill rules\n\nteam memory" in joined.text


def test_prompt_as_last_argument_and_answer_from_a_file_with_reported_tokens(
    tmp_path: Path,
) -> None:
    agent = backend(install("good", tmp_path), prompt="arg", answer="file:out/answer.md",
                    env={"FAKE_AGENT_PROMPT": "arg", "FAKE_AGENT_ANSWER_FILE": "answer.txt"})
    missing = agent.complete(call())  # the agent wrote answer.txt, not out/answer.md
    assert missing.error and "empty answer (file:out/answer.md)" in missing.error
    agent = backend(install("good", tmp_path), prompt="arg", answer="file:answer.txt",
                    env={"FAKE_AGENT_PROMPT": "arg", "FAKE_AGENT_ANSWER_FILE": "answer.txt"})
    answer = agent.complete(call())
    assert answer.text == "from file: Summarise the outage"
    assert (answer.prompt_tokens, answer.completion_tokens, answer.tokens_known) == (7, 3, True)


def test_token_usage_reported_on_stderr_is_counted(tmp_path: Path) -> None:
    answer = backend(install("good", tmp_path), env={"FAKE_AGENT_USAGE": "1"}).complete(call())
    assert (answer.prompt_tokens, answer.completion_tokens, answer.tokens_known) == (11, 5, True)


def test_auth_failure_is_fatal_at_once_and_never_an_answer(tmp_path: Path) -> None:
    agent = backend(install("auth_fail", tmp_path))
    with pytest.raises(BackendError) as caught:
        agent.complete(call())
    message = str(caught.value)
    assert "401" in message and "refresh_token_reused" in message
    assert "fix: log the agent in again" in message
    assert "\n" not in message and "partial output" not in message


@pytest.mark.parametrize(
    ("stderr", "code", "fix"),
    [
        ("stream error: token_expired", 1, "log the agent in again"),
        ("The 'gpt-9' model is not supported when using Codex with a ChatGPT account.", 1,
         "pick a model or option this agent supports"),
        ("This model requires a newer version of Codex. Please upgrade.", 1,
         "upgrade the agent CLI"),
        ("npx: codex: command not found", 1, "install the program"),
        ("/usr/bin/env: 'node': Permission denied", 1, "make the agent executable"),
        ("Error: 'qwen9' is not a known model", 1, "pick a model this agent knows"),
        ("Error: No key found - add one using 'llm keys set openai'", 1,
         "log the agent in again"),
        ("", 127, "install the program it runs"),
        ("", 126, "install the program it runs"),
    ],
)
def test_each_fatal_sign_stops_the_epoch(tmp_path: Path, stderr: str, code: int,
                                         fix: str) -> None:
    agent = backend(install("auth_fail", tmp_path),
                    env={"FAKE_AGENT_ERROR": stderr, "FAKE_AGENT_EXIT": str(code)})
    with pytest.raises(BackendError) as caught:
        agent.complete(call())
    assert fix in str(caught.value)


def test_non_zero_exit_is_a_failed_call_with_the_redacted_stderr_tail(tmp_path: Path) -> None:
    secret = "sk-proj-" + "a" * 40
    agent = backend(install("crash", tmp_path), env={"FAKE_SECRET_KEY": secret})
    answer = agent.complete(call())
    assert not answer.ok and answer.text is None
    assert "exited 2" in answer.error
    assert "Traceback: upstream error with key [REDACTED" in answer.error  # the tail, whole
    assert secret not in answer.error and "[REDACTED" in answer.error
    assert "answer-looking" not in answer.error


def test_configured_fatal_pattern_stops_the_epoch(tmp_path: Path) -> None:
    agent = backend(install("crash", tmp_path), fatal_patterns=("UPSTREAM ERROR",))
    with pytest.raises(BackendError, match="agent.fatal_patterns"):
        agent.complete(call())


def test_empty_answer_is_retried_then_a_failed_call(tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    agent = backend(install("empty", tmp_path), env={"FAKE_AGENT_COUNTER": str(counter)})
    answer = agent.complete(call())
    assert answer.error and "empty answer" in answer.error and "(3 attempts)" in answer.error
    assert len(counter.read_text().splitlines()) == 3
    counter.unlink()
    recovering = backend(install("empty", tmp_path),
                         env={"FAKE_AGENT_COUNTER": str(counter), "FAKE_AGENT_ANSWER_ON": "2"})
    assert recovering.complete(call()).text == "an answer at last"


@pytest.mark.parametrize("stubborn", [False, True], ids=["sleeper", "ignores-sigterm"])
def test_timeout_kills_the_whole_process_group(tmp_path: Path, stubborn: bool) -> None:
    pidfile = tmp_path / "pids"
    env = {"FAKE_AGENT_PIDFILE": str(pidfile)}
    if stubborn:
        env["FAKE_AGENT_STUBBORN"] = "1"
    agent = backend(install("sleeper", tmp_path), env=env, timeout=1.5, retries=0)
    started = time.monotonic()
    answer = agent.complete(call())
    assert time.monotonic() - started < 10
    assert answer.error and "timed out after 1.5s" in answer.error
    agent_pid, child_pid = map(int, pidfile.read_text().split())
    deadline = time.monotonic() + 5
    while not (gone(agent_pid) and gone(child_pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(agent_pid) and gone(child_pid)


def test_close_kills_agents_still_running(tmp_path: Path) -> None:
    """An epoch that stops early (a fatal error elsewhere, Ctrl-C) leaves no agent behind."""
    pidfile = tmp_path / "pids"
    agent = backend(install("sleeper", tmp_path), env={"FAKE_AGENT_PIDFILE": str(pidfile)},
                    timeout=60, retries=0)
    answers = []
    worker = threading.Thread(target=lambda: answers.append(agent.complete(call())))
    worker.start()
    deadline = time.monotonic() + 20
    while not pidfile.exists() or not pidfile.read_text().endswith("\n"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    agent.close()
    worker.join(timeout=10)
    assert answers and "killed by signal 9" in (answers[0].error or "")
    assert all(gone(int(pid)) for pid in pidfile.read_text().split())


def test_timeout_is_retried_a_bounded_number_of_times(tmp_path: Path) -> None:
    agent = backend(install("sleeper", tmp_path), env={"FAKE_AGENT_PIDFILE": str(tmp_path / "p")},
                    timeout=0.5, retries=1)
    answer = agent.complete(call())
    assert answer.error and "(2 attempts)" in answer.error
    assert answer.seconds is not None and answer.seconds >= 1.0


def test_huge_output_is_capped_and_the_agent_stopped(tmp_path: Path) -> None:
    agent = backend(install("huge", tmp_path), max_output_bytes=200_000, timeout=30)
    started = time.monotonic()
    answer = agent.complete(call())
    assert time.monotonic() - started < 10  # stopped at the cap, not at the deadline
    assert answer.error and "more than 200000 bytes" in answer.error


def test_binary_output_is_a_failed_call(tmp_path: Path) -> None:
    answer = backend(install("binary", tmp_path)).complete(call())
    assert answer.text is None and "binary output" in answer.error


def test_missing_command_is_fatal(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="command not found.*agent.command"):
        backend(tmp_path / "no-such-agent").complete(call())


def test_relative_agent_path_is_fatal_and_says_the_agent_runs_in_a_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`./tools/agent.py` exists in the repository, but each call runs in
    a fresh temporary folder, so the program is not found there: the line says why, and
    names no config file (the config may come from --config)."""
    (tmp_path / "tools").mkdir()
    program = install("good", tmp_path / "tools")
    monkeypatch.chdir(tmp_path)
    relative = f"./tools/{program.name}"
    assert (tmp_path / relative).is_file()
    with pytest.raises(BackendError) as raised:
        backend(Path(relative)).complete(call())
    message = str(raised.value)
    assert "temporary folder, not in the repository" in message
    assert "on PATH or use an absolute path" in message and ".gitsleep.yml" not in message


def test_non_executable_command_is_fatal(tmp_path: Path) -> None:
    program = install("good", tmp_path)
    program.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(BackendError, match=r"permission denied.*chmod \+x"):
        backend(program).complete(call())


def test_version_is_read_once_and_in_the_cache_key(tmp_path: Path) -> None:
    program = install("good", tmp_path)
    agent = backend(program)
    assert agent.version() == "good-agent 1.2.3"
    cache = ResponseCache(tmp_path / "cache")
    runner = CallRunner(agent, cache=cache, workers=1)
    runner.call(call())
    assert CallRunner(backend(program), cache=cache).call(call()).cached
    program.write_text(program.read_text().replace("1.2.3", "1.2.4"))
    upgraded = CallRunner(backend(program), cache=cache).call(call())
    assert not upgraded.cached  # an agent upgrade re-scores
    other_place = CallRunner(backend(program, install="docs/AGENTS.md"), cache=cache)
    assert not other_place.call(call()).cached  # so does installing the skill elsewhere


def test_calls_run_concurrently_up_to_workers(tmp_path: Path) -> None:
    script = tmp_path / "slow"
    script.write_text(f"#!{os.sys.executable}\nimport sys, time\n"
                      "if sys.argv[1:] == ['--version']: print('slow 1'); sys.exit(0)\n"
                      "time.sleep(1); print(sys.stdin.read())\n")
    script.chmod(0o755)
    runner = CallRunner(backend(script), workers=4)
    tasks = [replace(TASK, id=f"t{i}", prompt=f"task {i}") for i in range(4)]
    started = time.monotonic()
    answers = runner.map([call(task=t) for t in tasks])
    assert [a.text for a in answers] == [f"task {i}" for i in range(4)]
    assert time.monotonic() - started < 3.5  # four 1 s calls side by side, not one by one
    assert runner.cost.wall_seconds >= 4.0 and runner.cost.unmetered_calls == 4


def task_call(text: str) -> ModelCall:
    return call(task=Task(id="t", prompt=text, split="val", judge=Judge(kind="rule")))


FLAG_TASKS = ["--dangerously-skip-permissions", "-h", "--prompt=x", "-", "plain task"]


@pytest.mark.parametrize(
    ("prompt", "text"),
    [("arg", t) for t in [*FLAG_TASKS, "--"]]
    # argparse (the fake agent's parser, not gemini's yargs) drops a bare "--" value
    + [("option:--prompt", t) for t in FLAG_TASKS],
)
def test_a_task_that_looks_like_a_flag_reaches_the_agent_as_data(
    tmp_path: Path, prompt: str, text: str
) -> None:
    """With `prompt: arg` the task went into the argv bare, so the task
    `--dangerously-skip-permissions` set that flag and `-h` had the usage text scored."""
    agent = backend(install("flags", tmp_path), prompt=prompt, retries=0)
    answer = agent.complete(task_call(text))
    assert answer.ok, answer.error
    assert answer.text == f"skip-permissions=False\ntask={text}"


@pytest.mark.parametrize("prompt", ["arg", "option:--prompt"])
def test_a_nul_in_an_argv_task_is_an_error_result_not_a_traceback(
    tmp_path: Path, prompt: str
) -> None:
    """A NUL cannot be in a program argument; Popen raised ValueError."""
    counter = tmp_path / "runs"
    agent = backend(install("empty", tmp_path), prompt=prompt,
                    env={"FAKE_AGENT_COUNTER": str(counter)})
    runner = CallRunner(agent, cache=ResponseCache())
    answer = runner.call(task_call("before\0after"))
    assert not answer.ok and answer.text is None
    assert "NUL" in (answer.error or "") and "prompt: stdin" in (answer.error or "")
    assert runner.cost.errors == 1 and not counter.exists()  # refused, never started
    ran = tmp_path / "stdin-runs"
    backend(install("empty", tmp_path), retries=0,
            env={"FAKE_AGENT_COUNTER": str(ran)}).complete(task_call("before\0after"))
    assert ran.read_text() == "run\n"  # on stdin a NUL is just a byte of data


# --- no agent process outlives its call or gitsleep -------------------


def wait_for_pids(pidfile: Path, lines: int = 1, seconds: float = 30) -> list[int]:
    deadline = time.monotonic() + seconds
    while len(pids_in(pidfile)) < 3 * lines:
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.05)
    return pids_in(pidfile)


def test_a_detached_grandchild_dies_with_the_call_that_started_it(tmp_path: Path) -> None:
    """A setsid() child is in no process group of the agent's: the group kill missed it,
    it outlived the call and held the output pipe (the call waited 5 s for it)."""
    pidfile = tmp_path / "pids"
    agent = backend(install("detacher", tmp_path), retries=0,
                    env={"FAKE_AGENT_PIDFILE": str(pidfile), "FAKE_AGENT_EXIT_NOW": "1"})
    started = time.monotonic()
    answer = agent.complete(call())
    assert answer.ok and answer.text == "an answer from an agent that left a daemon behind"
    assert time.monotonic() - started < 4
    pids = pids_in(pidfile)
    assert len(pids) == 3 and all(gone(pid) for pid in pids), pids
    assert carrying("FAKE_AGENT_PIDFILE", str(pidfile)) == []


def test_timeout_kills_a_detached_grandchild_that_ignores_sigterm(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    agent = backend(install("detacher", tmp_path), retries=0, timeout=1.0,
                    env={"FAKE_AGENT_PIDFILE": str(pidfile)})
    answer = agent.complete(call())
    assert answer.error and "timed out after 1s" in answer.error
    assert all(gone(pid) for pid in pids_in(pidfile)) and len(pids_in(pidfile)) == 3
    assert carrying("FAKE_AGENT_PIDFILE", str(pidfile)) == []


def test_interrupt_kills_running_agents_and_starts_no_retry(tmp_path: Path) -> None:
    """Ctrl-C: the runner stops the calls under way at once (no waiting for the agent to
    finish, no retry after it was killed), and no queued call starts."""
    pidfile = tmp_path / "pids"
    agent = backend(install("detacher", tmp_path), retries=2, timeout=60,
                    env={"FAKE_AGENT_PIDFILE": str(pidfile)})
    runner = CallRunner(agent, cache=ResponseCache(), workers=2)
    tasks = [Task(id=f"t{i}", prompt=f"task {i}", split="val", judge=Judge(kind="rule"))
             for i in range(6)]
    failure: list[BaseException] = []

    def run() -> None:
        try:
            runner.map([call(task=t) for t in tasks])
        except BaseException as exc:  # noqa: BLE001 - what the main thread would see
            failure.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    wait_for_pids(pidfile, lines=2)
    started = time.monotonic()
    runner.interrupt(KeyboardInterrupt())
    worker.join(timeout=15)
    assert not worker.is_alive() and time.monotonic() - started < 5
    assert failure and isinstance(failure[0], KeyboardInterrupt)
    pids = pids_in(pidfile)
    assert len(pids) == 6 and all(gone(pid) for pid in pids)  # two runs, no retry, no third
    assert carrying("FAKE_AGENT_PIDFILE", str(pidfile)) == []


def test_forge_tokens_reach_the_agent_only_when_named(tmp_path: Path) -> None:
    """The forge token opens pull requests; a task prompt drives the agent, so the agent
    gets it only when agent.pass_env (or agent.env) names it."""
    env = {"GITHUB_TOKEN": "ghp_" + "a" * 36, "GH_TOKEN": "gho_" + "b" * 36,
           "GITLAB_TOKEN": "glpat-" + "c" * 20, "OPENAI_API_KEY": "sk-" + "d" * 40,
           "FAKE_AGENT_SHOW": "GITHUB_TOKEN,GH_TOKEN,GITLAB_TOKEN,OPENAI_API_KEY"}
    program = install("env_report", tmp_path)
    plain = backend(program, env=env).complete(call())
    assert plain.text == ("GITHUB_TOKEN=unset\nGH_TOKEN=unset\nGITLAB_TOKEN=unset\n"
                          "OPENAI_API_KEY=set")
    named = backend(program, env=env, pass_env=("GH_TOKEN",)).complete(call())
    assert "GH_TOKEN=set" in named.text and "GITHUB_TOKEN=unset" in named.text
    via_env = AgentCliBackend(  # agent.env: {GITHUB_TOKEN: $GITHUB_TOKEN} names it too
        AgentSpec(command=(str(program),), env=(("GITHUB_TOKEN", env["GITHUB_TOKEN"]),)),
        env={**os.environ, **env})
    assert "GITHUB_TOKEN=set" in via_env.complete(call()).text


def test_a_signal_also_kills_an_agent_started_before_it_was_registered(tmp_path: Path) -> None:
    """The signal handler sweeps every process carrying a marker of this gitsleep, so an
    agent started a moment before its run was registered (the signal came in between)
    dies too; another gitsleep's agents (another pid in the marker) are left alone."""
    import subprocess
    import sys

    from gitsleep.sandbox import processes as agent_procs

    hold = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n"

    def start(marker: str) -> subprocess.Popen[bytes]:
        env = {**os.environ, agent_procs.MARKER_ENV: marker}
        return subprocess.Popen([sys.executable, "-c", hold], env=env, start_new_session=True)

    ours = start(agent_procs.new_marker())  # never registered
    theirs = start(f"{os.getpid() + 1}-{'0' * 16}")
    try:
        deadline = time.monotonic() + 10
        while not (_marked(ours.pid) and _marked(theirs.pid)):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        agent_procs.terminate_runs({}, 0.3, agent_procs.own_prefix())
        assert ours.wait(timeout=5) in (-15, -9)  # TERM, or KILL once it ignores TERM
        assert theirs.poll() is None
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()


def _marked(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return b"GITSLEEP_AGENT_RUN=" in fh.read()
    except OSError:
        return False
