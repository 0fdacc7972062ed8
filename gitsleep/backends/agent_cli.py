"""The agent CLI backend: a task answered by the agent program that reads the skill.

Each call runs the configured argv (never a shell) in a fresh temporary workspace that
holds only the installed documents; the task goes in as data (stdin, the last argument
after `--`, or `--NAME=<task>`), never as a flag; forge tokens stay out of its environment
unless `agent.pass_env` names them. The rules the seed's Codex backend learned the hard
way, applied to any CLI:

- a non-zero exit is a failed call: the redacted stderr tail is kept, the output is
  never scored and never used as an answer;
- an empty answer or a timeout is retried (bounded), then it is a failed call;
- fatal signs (401, expired tokens, unsupported model, outdated CLI, command not found,
  permission denied, and `agent.fatal_patterns`) in a failed run stop the epoch (exit 3);
- at the deadline every process of the run gets SIGTERM, then SIGKILL after a grace;
  what is still alive when the agent exits is killed too, a setsid() daemon included
  (see agent_procs: the run's group, its descendants and its marker variable);
- output over the cap stops the run (a failed call); output that is not UTF-8 text
  (NUL bytes or invalid UTF-8) is a failed call, because a judge would score garbage.

POSIX only: process groups and `waitid` are what make the kill reliable.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from gitsleep.backends import cli_traces
from gitsleep.backends.presets import ANSWER_FILE
from gitsleep.base.errors import BackendError, UsageError
from gitsleep.base.redact import Redactor, without_forge_tokens
from gitsleep.core import sandbox
from gitsleep.core.markdown import clip, one_line
from gitsleep.core.models import Answer, ToolCall
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.sandbox import processes as agent_procs
from gitsleep.sandbox import workspace as task_workspace
from gitsleep.sandbox.cleanup import remove_tree
from gitsleep.sandbox.processes import STDERR_TAIL_BYTES
from gitsleep.sandbox.trees import NoTrees, Tree, TreeSource

MESSAGE_MAX_CHARS = 500
VERSION_TIMEOUT = 30.0

# (pattern, fix): checked, case-insensitively, in the stderr and stdout tails of a run
# that exited non-zero. A match stops the epoch: retrying cannot log anyone in.
_LOGIN_FIX = "log the agent in again (e.g. `codex login`, `claude /login`) or give it a valid key"
FATAL_SIGNS: tuple[tuple[str, str], ...] = (
    (r"\b401\b|\bunauthori[sz]ed\b", _LOGIN_FIX),
    (r"token_expired|refresh_token_reused|authentication token is expired", _LOGIN_FIX),
    (r"not logged in|please log ?in|please run /login|invalid api key|no key found", _LOGIN_FIX),
    (r"unknown model|model not found|is not a known model",
     "pick a model this agent knows (model / agent.command)"),
    (r"requires a newer version", "upgrade the agent CLI"),
    (r"not supported", "pick a model or option this agent supports (model / agent.command)"),
    (r"command not found", "install the program the agent runs, or fix agent.command"),
    (r"permission denied", "make the agent executable and its files readable, "
                           "or fix agent.command"),
)
_TOKEN_USAGE = re.compile(r"Token usage:\s*([\d,]+)\s+input,\s*([\d,]+)\s+output", re.I)


@dataclass(frozen=True)
class AgentSpec:
    """How to run one agent CLI; built from `agent:` in .gitsleep.yml."""

    command: tuple[str, ...]
    # the argv for a task with a workspace (a preset's write mode); None: `command`
    workspace_command: tuple[str, ...] | None = None
    prompt: str = "stdin"  # stdin | arg (after `--`) | option:--NAME (as `--NAME=<task>`)
    install: str = "AGENTS.md"  # the skill document's path in the workspace
    memory_install: str | None = None  # None: the memory is appended to the skill file
    answer: str = "stdout"  # stdout | file:<path in the workspace>
    timeout: float = 300.0
    retries: int = 2  # extra attempts after an empty answer or a timeout
    env: tuple[tuple[str, str], ...] = ()  # resolved extra variables
    pass_env: tuple[str, ...] = ()  # forge-token variables the agent may still see
    fatal_patterns: tuple[str, ...] = ()  # plain text, case-insensitive
    label: str = ""  # preset name or program name, for messages
    max_output_bytes: int = 1 << 20
    kill_grace: float = agent_procs.KILL_GRACE  # seconds between SIGTERM and SIGKILL
    # the machine output on stdout that says what the agent called (`cli_traces`):
    # claude (stream-json, which also holds the answer) | codex (exec --json) | "" (none)
    trace: str = ""
    tool_names: tuple[tuple[str, str], ...] = ()  # the CLI's tool name -> the declared one

    @property
    def answer_file(self) -> str | None:
        return self.answer.removeprefix("file:") if self.answer.startswith("file:") else None

    @property
    def name(self) -> str:
        return self.label or Path(self.command[0]).name


@dataclass
class AgentRun:
    """What one run of the agent did: enough to decide the call and to show in `doctor`."""

    argv: list[str]
    files: list[str]  # workspace paths of the installed documents
    exit_code: int | None = None
    timed_out: bool = False
    overflow: bool = False
    stdout: bytes = b""
    stderr_tail: bytes = b""
    answer: bytes = b""
    seconds: float = 0.0  # the agent's own run
    check_seconds: float = 0.0  # its workspace task's checks, judged after it
    workspace: str = ""
    refused: str = ""  # why the task could not be handed to the agent (never started)
    # a workspace task: its checks judged in the workspace after the agent ran (index,
    # passed, reason), and the files the agent changed; None for a text task
    checks: tuple[tuple[int, bool, str], ...] | None = None
    changed: list[str] = field(default_factory=list)
    diff: str | None = None  # the agent's change, redacted and clipped (for reflection)


def _inside(root: Path, relative: str) -> Path:
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise BackendError(f"agent workspace path {relative!r} leaves the workspace; "
                           "fix agent.install / agent.answer")
    return path


def decode_text(data: bytes) -> str | None:
    """The output as text, or None when it is binary (a NUL byte or invalid UTF-8)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def reported_tokens(
    stdout: bytes, stderr: bytes, *, stdout_is_answer: bool
) -> tuple[int, int] | None:
    """Tokens the agent itself reported, else None (never estimated).

    Read from `llm -u` ("Token usage: N input, M output" on stderr) and, when the
    answer comes from a file, from JSON event lines with a `usage` object on stdout
    (`codex exec --json`: `turn.completed`).
    """
    found = False
    prompt = completion = 0
    if not stdout_is_answer:
        for line in stdout.decode("utf-8", "replace").splitlines():
            line = line.strip()
            if not line.startswith("{") or '"usage"' not in line:
                continue
            try:
                usage = json.loads(line).get("usage")
            except (ValueError, AttributeError):
                continue
            if isinstance(usage, dict):
                ins = usage.get("input_tokens", usage.get("prompt_tokens"))
                outs = usage.get("output_tokens", usage.get("completion_tokens"))
                if isinstance(ins, int) and isinstance(outs, int):
                    prompt, completion, found = prompt + ins, completion + outs, True
    for match in _TOKEN_USAGE.finditer(stderr.decode("utf-8", "replace")):
        prompt += int(match.group(1).replace(",", ""))
        completion += int(match.group(2).replace(",", ""))
        found = True
    return (prompt, completion) if found else None


class AgentCliBackend(Backend):
    """Answers calls by running an agent CLI; see the module docstring for the rules."""

    name = "command"
    workspaces = True  # runs a workspace task in a copy of its folder

    def __init__(
        self,
        spec: AgentSpec,
        *,
        env: Mapping[str, str],
        redactor: Redactor | None = None,
        check_pass_env: Sequence[str] = (),
        trees: TreeSource | None = None,
    ) -> None:
        if not spec.command:
            raise BackendError("agent.command is empty: set agent.command or agent.preset")
        for key, value in (("install", spec.install), ("memory_install", spec.memory_install)):
            problem = install_path_problem(value) if value is not None else None
            if problem:
                raise UsageError(f"agent.{key}: {problem} (got {value!r})")
        conflict = agent_path_conflict(spec.install, spec.memory_install, spec.answer)
        if conflict:
            raise UsageError(conflict)
        self.spec = spec
        self.traces = bool(spec.trace)  # reads what its agent called from its output
        self.env = agent_environment(env, spec)
        self.check_pass_env = tuple(check_pass_env)  # what checks see beyond the minimum
        self.redactor = redactor or Redactor.from_env({**env, **dict(spec.env)},
                                                      [n for n, _ in spec.env])
        self._fatal = [(re.compile(p, re.I), fix) for p, fix in FATAL_SIGNS] + [
            (re.compile(re.escape(p), re.I), "see agent.fatal_patterns in .gitsleep.yml")
            for p in spec.fatal_patterns
        ]
        self._version: str | None = None
        self._version_lock = threading.Lock()
        self._running: dict[str, int] = {}  # marker -> root pid of the calls under way
        self._running_lock = threading.Lock()
        self._interrupted = threading.Event()
        # the task folders, read once a run by the run's setup; this backend owns them
        self._workspaces: TreeSource = trees or NoTrees()

    def _track(self, marker: str, pid: int, running: bool) -> None:
        with self._running_lock:
            if running:
                self._running[marker] = pid
            else:
                self._running.pop(marker, None)

    def _kill_running(self) -> None:
        with self._running_lock:
            runs = dict(self._running)
        agent_procs.kill_runs(runs)

    def close(self) -> None:
        """Kill the agents still running (an epoch that stopped early, Ctrl-C): they live
        in their own sessions, so nothing else would stop them."""
        self._kill_running()
        self._workspaces.cleanup()  # the workspace folders read for this run

    def interrupt(self) -> None:
        """Ctrl-C or a signal: kill the agents under way now and start no run or retry."""
        self._interrupted.set()
        self._kill_running()

    # -- identity ----------------------------------------------------------------------

    def version(self) -> str:
        """`<program> --version`, run once per backend; a missing program is fatal."""
        with self._version_lock:
            if self._version is None:
                self._version = self._read_version()
            return self._version

    def _read_version(self) -> str:
        program = self.spec.command[0]
        with tempfile.TemporaryDirectory(prefix="gitsleep-agent-") as cwd:
            try:
                code, timed_out, _, out, err, _ = agent_procs.run_process(
                    [program, "--version"], cwd=cwd, env=self.env, stdin=None,
                    timeout=VERSION_TIMEOUT, max_output_bytes=65536,
                    kill_grace=self.spec.kill_grace,
                )
            except OSError as exc:
                raise self._spawn_error(exc) from None
        if timed_out:
            return f"unknown (`{program} --version` timed out)"
        if code != 0:
            return f"unknown (`{program} --version` exited {code})"
        text = (out or err).decode("utf-8", "replace").strip().splitlines()
        return one_line(self.redactor.clip(text[0], 200)) if text else "unknown (no output)"

    def _spawn_error(self, exc: OSError) -> BackendError:
        program = self.spec.command[0]
        if isinstance(exc, FileNotFoundError):
            if "/" in program and not program.startswith("/"):  # read in the call's folder
                return BackendError(
                    f"agent command {program!r} not found (command not found): the agent runs "
                    "in a fresh temporary folder, not in the repository, so a relative path "
                    "finds nothing; put the program on PATH or use an absolute path in "
                    "agent.command")
            return BackendError(f"agent command {program!r} not found (command not found): "
                                "install the agent CLI or fix agent.command")
        if isinstance(exc, PermissionError):
            return BackendError(f"agent command {program!r} cannot be run (permission denied): "
                                "make it executable (chmod +x) or fix agent.command")
        return BackendError(f"agent command {program!r} cannot be started: {exc.strerror or exc}; "
                            "fix agent.command")

    def cache_salt(self, call: ModelCall) -> str:
        """The command, the agent's version and the installed files: an upgrade re-scores."""
        spec = self.spec
        files = sorted(self.installed_files(call).items())
        workspace = task_workspace.workspace_of(call.context, call.purpose)
        command = spec.workspace_command if workspace is not None else None
        payload = json.dumps([list(command or spec.command), spec.prompt, spec.answer,
                              list(spec.env), self.version(), files], ensure_ascii=False)
        payload += task_workspace.call_key(call.context, call.purpose,  # fixture, checks,
                                           self.check_pass_env)  # package, check variables:
        # a cached answer carries its checks' outcomes, valid for these only
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    # -- what the agent sees -----------------------------------------------------------

    def installed_files(self, call: ModelCall) -> dict[str, str]:
        """workspace path -> text of the documents an answer call installs (none otherwise)."""
        if call.purpose != "answer":
            return {}
        context = call.context or {}
        skill = context.get("skill")
        memory = context.get("memory")
        if skill is None and "skill" not in context:  # a call built without named documents
            skill = call.messages[0][1] if call.messages and call.messages[0][0] == "system" else ""
        files: dict[str, str] = {self.spec.install: str(skill or "")}
        if memory:
            if self.spec.memory_install:
                files[self.spec.memory_install] = str(memory)
            else:
                files[self.spec.install] = f"{files[self.spec.install].rstrip()}\n\n{memory}"
        return files

    def prompt_text(self, call: ModelCall) -> str:
        """The task as the agent receives it: answer calls leave out the installed
        documents (the first system message); other calls send every message."""
        messages = list(call.messages)
        if call.purpose == "answer" and messages and messages[0][0] == "system":
            messages = messages[1:]
        return "\n\n".join(content for _, content in messages if content)

    # -- running -----------------------------------------------------------------------

    def run_once(self, call: ModelCall, *, keep_workspace: bool = False) -> AgentRun:
        """One run of the agent in a fresh workspace. Raises BackendError if it cannot start."""
        spec = self.spec
        prompt = self.prompt_text(call)
        task_folder = task_workspace.workspace_of(call.context, call.purpose)
        argv = agent_argv(spec, prompt, workspace=task_folder is not None)
        if self._interrupted.is_set():
            return AgentRun(argv=list(spec.command), files=[],
                            refused="interrupted (Ctrl-C or a signal); nothing was run")
        if spec.prompt != "stdin" and "\0" in prompt:
            return AgentRun(argv=list(spec.command), files=[], refused=(
                "the task contains a NUL character, which no program argument can hold; "
                "set agent.prompt: stdin or remove the NUL from the task"))
        workspace = Path(tempfile.mkdtemp(prefix="gitsleep-agent-"))
        tree: Tree | None = None
        try:
            if task_folder is not None:  # the task's folder as committed, then the skill
                tree = self._workspaces.prepare_tree(
                    Path(str(task_folder["repo"])), str(task_folder["tree"]),
                    str(task_folder["folder"]))
                self._workspaces.copy(tree, workspace)
            package = task_workspace.package_of(call.context) if call.purpose == "answer" else None
            packaged = ({} if package is None else  # beside the skill document
                        task_workspace.install_package(self._workspaces, package, workspace,
                                                       spec.install))
            installed = self.installed_files(call)
            for relative, text in installed.items():
                path = _inside(workspace, relative)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
            run = AgentRun(argv=argv, files=sorted(installed), workspace=str(workspace))
            before = sandbox.snapshot(workspace) if task_folder is not None else None
            try:
                (run.exit_code, run.timed_out, run.overflow, run.stdout, run.stderr_tail,
                 run.seconds) = agent_procs.run_process(
                    argv, cwd=str(workspace), env=self.env,
                    stdin=prompt.encode("utf-8") if spec.prompt == "stdin" else None,
                    timeout=spec.timeout, max_output_bytes=spec.max_output_bytes,
                    kill_grace=spec.kill_grace, live=self._track,
                )
            except OSError as exc:
                raise self._spawn_error(exc) from None
            answer_file = spec.answer_file
            if answer_file is None:
                run.answer = run.stdout
            else:
                path = _inside(workspace, answer_file)
                if path.is_file():
                    with path.open("rb") as fh:
                        run.answer = fh.read(spec.max_output_bytes + 1)
                    run.overflow = run.overflow or len(run.answer) > spec.max_output_bytes
            if task_folder is not None and before is not None and tree is not None:
                self._judge_workspace(run, workspace, before, task_folder, tree,
                                      (packaged, installed))
            return run
        finally:
            if not keep_workspace:
                remove_tree(workspace)  # read-only folders the agent left too

    def complete(self, call: ModelCall) -> Answer:
        self.version()  # a missing or unrunnable program stops here, before any task
        attempts = 1 + max(0, self.spec.retries)
        seconds = 0.0
        why = ""
        for _ in range(attempts):
            run = self.run_once(call)
            seconds += run.seconds + run.check_seconds  # a call's time holds its checks
            answer, retry = self.decide(run)
            if not retry or self._interrupted.is_set() or agent_procs.stopping():
                answer.seconds = seconds
                return answer
            why = answer.error or ""
        return Answer(text=None, error=self._line(f"{why} ({attempts} attempts)"),
                      seconds=seconds, tokens_known=False)

    def decide(self, run: AgentRun) -> tuple[Answer, bool]:
        """(answer, retry?) for one run, by the rules in the module docstring.
        Raises BackendError on a fatal sign."""
        name = self.spec.name
        if run.refused:
            return self._failed(f"agent {name} not run: {run.refused}"), False
        if run.overflow:
            cap = self.spec.max_output_bytes
            return self._failed(f"agent {name} wrote more than {cap} bytes; stopped it "
                                "(a runaway answer is never scored)"), False
        if run.timed_out:
            return self._failed(f"agent {name} timed out after {self.spec.timeout:g}s "
                                "(process group killed)"), True
        if run.exit_code != 0:
            self._check_fatal(run)
            how = (f"killed by signal {-(run.exit_code or 0)}" if (run.exit_code or 0) < 0
                   else f"exited {run.exit_code}")
            tail = self.redactor.clip(  # the end says most; masked before the cut
                run.stderr_tail.decode("utf-8", "replace").strip(), MESSAGE_MAX_CHARS - 120,
                tail=True, cut_start=len(run.stderr_tail) >= STDERR_TAIL_BYTES) or "(empty)"
            return self._failed(f"agent {name} {how}; stderr: {tail}"), False
        text = decode_text(run.answer)
        if text is None:
            return self._failed(f"agent {name} wrote binary output ({len(run.answer)} bytes, "
                                "not UTF-8 text); never scored"), False
        trace = self._trace(run)
        if self._answer_in_stream():
            text = trace[1] or ""
        if not text.strip():
            where = self.spec.answer if self.spec.answer_file else "stdout"
            return self._failed(f"agent {name} gave an empty answer ({where})"), True
        tokens = reported_tokens(run.stdout, run.stderr_tail,
                                 stdout_is_answer=self.spec.answer_file is None
                                 and not self._answer_in_stream())
        prompt_tokens, completion_tokens = tokens or (0, 0)
        return Answer(text=text.strip(), prompt_tokens=prompt_tokens,
                      completion_tokens=completion_tokens, tokens_known=tokens is not None,
                      checks=run.checks, diff=run.diff, trace=trace[0]), False

    def _answer_in_stream(self) -> bool:
        """Claude Code's stream-json on stdout: the answer is its `result` line."""
        return self.spec.trace == "claude" and self.spec.answer_file is None

    def _trace(self, run: AgentRun) -> tuple[tuple[ToolCall, ...] | None, str | None]:
        """(what the agent called, redacted and named as declared; None without a trace
        format) and the answer its stream holds, if it holds one."""
        if not self.spec.trace:
            return None, None
        calls, answer = cli_traces.read_trace(self.spec.trace, run.stdout)
        redact = self.redactor.redact
        calls = tuple(replace(c, arguments=redact(c.arguments), result=redact(c.result),
                              error=None if c.error is None else redact(c.error))
                      for c in cli_traces.mapped(calls, dict(self.spec.tool_names)))
        return calls, answer

    def _judge_workspace(self, run: AgentRun, workspace: Path, before: sandbox.Snapshot,
                         task_folder: Mapping[str, object], tree: Tree,
                         given: tuple[Mapping[str, bytes], Mapping[str, str]]) -> None:
        """After a run that can become an answer: what the agent changed and its diff (the
        package and the documents in `given` over the fixture are what it got), then the
        task's workspace and command checks judged in the folder (the answer in a file
        outside it, named by $GITSLEEP_ANSWER; the files a command names put back from the
        pristine fixture). The checks' wall time (`check_seconds`) is the call's too, so
        it counts against budget.max_agent_minutes. A check program that cannot start
        raises CheckCannotRun (exit 3)."""
        if run.refused or run.overflow or run.timed_out or run.exit_code != 0:
            return  # a failed call: never scored, so nothing to judge
        text = decode_text(run.answer)
        if text is None or not text.strip():
            return
        answer_file = self.spec.answer_file
        started = time.monotonic()  # the snapshot's reading is the call's time too
        after = sandbox.snapshot(workspace)
        run.changed = [p for p in sandbox.changed_files(before, after)
                       if answer_file is None or workspace_path(p) != workspace_path(answer_file)]
        # the diff before the checks: they put back the fixture files they name
        run.diff = task_workspace.agent_diff(tree, workspace, run.changed, *given,
                                             redact=self.redactor.redact)
        run.checks = task_workspace.judge_answer(workspace, task_folder, run.changed,
                                                 text.strip(), redact=self.redactor.redact,
                                                 pristine=tree.path,
                                                 kill_grace=self.spec.kill_grace,
                                                 pass_env=self.check_pass_env)
        run.check_seconds = time.monotonic() - started

    def _check_fatal(self, run: AgentRun) -> None:
        if run.exit_code in (126, 127):  # what shells and env(1) say for these
            sign = "permission denied" if run.exit_code == 126 else "command not found"
            raise BackendError(self._line(
                f"agent {self.spec.name} exited {run.exit_code} ({sign}): "
                "install the program it runs or fix agent.command"))
        # the tails, masked, each without the partial word where its capture cut it
        seen = "\n".join(self.redactor.clip(
            part.decode("utf-8", "replace"), None, cut_start=len(part) >= STDERR_TAIL_BYTES)
            for part in (run.stderr_tail, run.stdout[-STDERR_TAIL_BYTES:]))
        for pattern, fix in self._fatal:
            match = pattern.search(seen)
            if match is None:
                continue
            line = next((ln for ln in seen.splitlines() if pattern.search(ln)), match.group(0))
            raise BackendError(self._line(
                f"agent {self.spec.name} failed with a fatal sign ({match.group(0)!r}): "
                f"{self.redactor.clip(line.strip(), 200)}; fix: {fix}"))

    def _failed(self, message: str) -> Answer:
        return Answer(text=None, error=self._line(message), tokens_known=False)

    def _line(self, text: str) -> str:
        """Redacted, one line, short: safe for diagnostics, logs and commits."""
        return clip(" ".join(one_line(self.redactor.redact(text)).split()), MESSAGE_MAX_CHARS)


def agent_environment(env: Mapping[str, str], spec: AgentSpec) -> dict[str, str]:
    """The variables the agent runs with: gitsleep's own, minus the forge tokens
    (GITHUB_TOKEN, GH_TOKEN, GITLAB_TOKEN, CI job tokens, ...) that open pull requests,
    unless `agent.pass_env` or `agent.env` names them; plus `agent.env`. Task prompts drive
    the agent, so a token it holds is a token a task can make it use or print."""
    named = set(spec.pass_env) | {name for name, _ in spec.env}
    return {**without_forge_tokens(env, named), **dict(spec.env)}


def agent_argv(spec: AgentSpec, task: str, *, workspace: bool = False) -> list[str]:
    """The argv that hands `task` to the agent, where it can never be read as an option;
    with `workspace`, the agent's write mode when the spec has one (`workspace_command`).

    `arg` puts it after `--` (POSIX: the end of options), so `--dangerously-skip-
    permissions` or `-h` as a task is text, not a flag. `option:--NAME` passes it glued
    to its option, `--NAME=<task>`, for CLIs whose prompt is an option's value (gemini's
    `--prompt`): a parser never reads the rest of that word as another option.
    """
    command = (spec.workspace_command if workspace and spec.workspace_command
               else spec.command)
    if spec.prompt == "arg":
        return [*command, "--", task]
    if spec.prompt.startswith("option:"):
        return [*command, f"{spec.prompt.removeprefix('option:')}={task}"]
    return list(command)


def prompt_mode_problem(mode: str) -> str | None:
    """Why `agent.prompt` is not one of stdin, arg or option:--NAME, or None."""
    if mode in ("stdin", "arg") or re.fullmatch(r"option:--[A-Za-z0-9][A-Za-z0-9_-]*", mode):
        return None
    return (f"must be stdin, arg (the task after `--`) or option:--NAME (the task as "
            f"`--NAME=<task>`), got {mode!r}")


def install_path_problem(relative: str) -> str | None:
    """Why a workspace path from the config is unusable, or None."""
    text = relative.replace("\\", "/")
    path = PurePosixPath(text)
    if not relative.strip() or path.is_absolute() or ".." in path.parts:
        return "must be a relative path inside the agent's workspace (no '..')"
    if "\0" in text or text.endswith("/") or workspace_path(text) == ".":
        # "." is the workspace itself: writing the skill there was an IsADirectoryError
        return "must name a file in the agent's workspace, not a folder (e.g. AGENTS.md)"
    return None


def workspace_path(relative: str) -> str:
    """A workspace path in one spelling (`./a//b` -> `a/b`), so two fields naming one
    file are seen as one; case-folded too, for the case-insensitive disks of macOS."""
    return posixpath.normpath(relative.replace("\\", "/")).casefold()


def agent_path_conflict(install: str, memory_install: str | None, answer: str) -> str | None:
    """Why the installed documents and the answer file collide, or None.

    The memory must not overwrite the skill (or sit inside a folder the skill is written
    as), and the answer file must not be an installed document: an agent that wrote
    nothing would then have the document itself scored as its answer.
    """
    fields = [("install", install)]
    if memory_install:
        fields.append(("memory_install", memory_install))
    answer_file = answer.removeprefix("file:") if answer.startswith("file:") else None
    if answer_file is not None:
        fields.append(("answer", answer_file))
    for i, (name_a, a) in enumerate(fields):
        for name_b, b in fields[i + 1:]:
            na, nb = workspace_path(a), workspace_path(b)
            if name_b == "answer" and na == nb:
                return (f"agent.answer is the installed agent.{name_a} ({b!r}): the document "
                        "would be scored as the answer of an agent that wrote none; write "
                        f"the answer to a file of its own (e.g. file:{ANSWER_FILE})")
            if na == nb:
                return (f"agent.{name_b} and agent.{name_a} are one file ({b!r} and {a!r}): "
                        f"give each its own path (or leave memory_install null)")
            outer, inner = ((name_a, a), (name_b, b)) if len(na) < len(nb) else ((name_b, b),
                                                                                (name_a, a))
            if workspace_path(inner[1]).startswith(workspace_path(outer[1]) + "/"):
                return (f"agent.{outer[0]} is a folder of agent.{inner[0]} ({outer[1]!r} "
                        f"holds {inner[1]!r}): give each a file of its own")
    return None
