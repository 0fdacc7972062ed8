"""`doctor`'s flow: one task through the configured agent, each step shown as it happens.

A night of agent runs is only as good as its wiring: the program found, logged in, the
skill installed where the agent reads it, the answer read from the right place. This runs
one task exactly as an epoch would (no cache) and hands each step to `show` (the command
prints it), so a user can check all of that in a minute before a night.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from gitsleep.backends.agent_cli import AgentCliBackend
from gitsleep.backends.select import RoutedBackend
from gitsleep.base.errors import BackendError, UsageError
from gitsleep.base.redact import Redactor
from gitsleep.core import judges, trace
from gitsleep.core.models import Answer, Task
from gitsleep.core.ports import ModelCall
from gitsleep.core.replay import answer_call
from gitsleep.flows.prepare import Setup, make_backend, read_inputs
from gitsleep.inputs.config import SkillConfig
from gitsleep.sandbox import workspace as task_workspace
from gitsleep.sandbox.processes import STDERR_TAIL_BYTES

SHOWN_CHARS = 2000  # of the answer
STDERR_SHOWN_CHARS = 800  # of the end of the agent's stderr


class Show(Protocol):
    """Where each step goes: `label: value`, a multi-line value as a block."""

    def __call__(self, label: str, value: str, *, block: bool = False) -> None: ...


def _nothing() -> None:
    """No progress line to finish."""


def check_agent(setup: Setup, skill: SkillConfig, task_id: str | None, show: Show,
                started: Callable[[], None] = _nothing) -> None:
    """Run one task of `skill` (`task_id`, default the first val task) through its agent,
    showing each step, the judge's score last. `started` runs once the inputs are read and
    the backend built, before the first step is shown. Raises BackendError when the
    agent's call or the rubric judge fails."""
    tasks, documents = read_inputs(setup.repo, skill)
    task = _pick(tasks, task_id, skill.name)
    chosen = make_backend(setup, skill.name)
    agent = chosen.by_purpose["answer"] if isinstance(chosen, RoutedBackend) else chosen
    settings = setup.config.epoch_settings(skill=skill.name)
    started()
    try:
        backends = setup.config.backends()
        show("backends", f"answer {backends[0]}, propose {backends[1]}, judge {backends[2]}")
        show("models", f"agent {settings.model}, optimizer {settings.optimizer_model}, "
                       f"judge {settings.judge_model}")
        show("task", f"{task.id} ({task.split}, {task.judge.kind} judge)")
        call = answer_call(documents, task, settings.model, 0)
        if isinstance(agent, AgentCliBackend):
            answer = _run_agent(agent, call, show, setup.redactor)
        else:
            answer = agent.complete(call)
        if not answer.ok:
            raise BackendError(f"doctor: the agent's call failed: {answer.error}")
        show("answer", setup.redactor.clip(answer.text or "", SHOWN_CHARS), block=True)
        if answer.trace is not None and (answer.trace or task.tools):  # what it called
            show("tool calls", setup.redactor.redact(trace.shown(answer.trace)), block=True)
        score = judges.score_local(task.judge, answer.text or "",
                                   judges.workspace_outcomes(answer, task.workspace is not None),
                                   pass_env=settings.check_pass_env,
                                   program=settings.check_program, trace=answer.trace)
        if score is None:  # a rubric: ask the judge backend
            reply = chosen.complete(judges.rubric_call(
                settings.judge_model, task.prompt, task.judge.rubric or "",
                answer.text or "", 0))
            score = judges.parse_rubric_reply(reply.text or "") if reply.ok else None
            if score is None:
                why = reply.error or "no readable score in the judge's reply"
                raise BackendError(f"doctor: the rubric judge failed: {why}")
        show("judge", f"hard {score.hard:.2f}, soft {score.soft:.2f}: {score.reason}")
    finally:
        chosen.close()



def _pick(tasks: list[Task], task_id: str | None, skill: str) -> Task:
    if task_id is not None:
        for task in tasks:
            if task.id == task_id:
                return task
        raise UsageError(f"skill {skill} has no task {task_id!r}: pass an id from its task files")
    for split in ("val", "train", "test"):
        for task in tasks:
            if task.split == split:
                return task
    raise UsageError(f"skill {skill} has no tasks: add some to its task files")



def _run_agent(agent: AgentCliBackend, call: ModelCall, show: Show, redactor: Redactor
               ) -> Answer:
    """One run of the agent CLI with every detail shown, decided by the epoch's rules."""
    spec = agent.spec
    in_folder = "workspace" in (call.context or {})  # its write mode
    command = spec.workspace_command if in_folder and spec.workspace_command else spec.command
    show("command", " ".join(command) + (" <task>" if spec.prompt == "arg" else ""))
    show("version", agent.version())
    show("prompt via", spec.prompt)
    show("answer from", spec.answer)
    show("timeout", f"{spec.timeout:g}s")
    context = call.context
    folder = task_workspace.workspace_of(context, "answer")
    package = task_workspace.package_of(context)
    if folder is not None:
        show("workspace", f"a copy of {folder['folder']} as committed, where the agent runs")
    if package is not None:
        show("package", f"a copy of {package['folder']} beside {spec.install}")
    result = agent.run_once(call)
    show("installed documents", ", ".join(result.files) or "(none)")
    exit_text = "timed out (process group killed)" if result.timed_out else str(result.exit_code)
    show("exit", exit_text)
    show("time", f"{result.seconds:.2f}s" + (f" (+{result.check_seconds:.2f}s of checks)"
                                               if result.checks is not None else ""))
    tail = result.stderr_tail.decode("utf-8", "replace").strip()
    if tail:  # masked whole before the cut; the capture's own cut loses its partial word
        show("stderr (tail)", redactor.clip(
            tail, STDERR_SHOWN_CHARS, tail=True,
            cut_start=len(result.stderr_tail) >= STDERR_TAIL_BYTES), block=True)
    if result.checks is not None:  # a workspace task the agent answered: what it did there
        show("changed files", ", ".join(result.changed) or "(none)")
    answer, retry = agent.decide(result)  # raises on a fatal sign, like an epoch would
    if answer.ok:
        tokens = (f"{answer.prompt_tokens} prompt, {answer.completion_tokens} completion"
                  if answer.tokens_known else "null (the agent did not report them)")
        show("tokens", tokens)
    elif retry:
        show("note", "an epoch would retry this call (empty answer or timeout)")
    return answer
