"""Replay: answer a split's tasks under one document version and judge the answers.

The agent sees the skill (and memory) document as its system instructions and the task
as the user message, with nothing added that competes with the skill. Scoring calls use
temperature 0 and a fixed seed per sample, so a score is repeatable and cacheable. An
answer that repeats a placeholder of the learned template or a typed slot of a learned
rule, or leaves a section the template requires empty, is scored as failing (see
`judges.with_integrity`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence

from gitsleep.base.errors import BackendError, BudgetExhausted, UsageError
from gitsleep.core import documents as docs
from gitsleep.core import honesty, judges, sandbox, tools, view
from gitsleep.core.calls import CallRunner, Tick, no_tick
from gitsleep.core.models import (
    Answer,
    EpochSettings,
    GateSettings,
    PassResult,
    SampleResult,
    Score,
    Split,
    Task,
    TaskResult,
)
from gitsleep.core.ports import ModelCall


def documents_version(documents: Mapping[str, str | None]) -> str:
    """A short digest naming one version of the documents."""
    h = hashlib.sha256()
    for name in sorted(documents):
        h.update(name.encode())
        h.update(b"\0")
        h.update((documents[name] or "").encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()[:16]


def agent_messages(documents: Mapping[str, str | None], task: Task) -> tuple[tuple[str, str], ...]:
    """The documents as the agent is shown them (imports expanded), then the task."""
    seen = view.shown_documents(documents)
    instructions = "\n\n".join(doc for doc in (seen["skill"], seen["memory"]) if doc)
    messages = [("system", instructions)]
    if task.system:
        messages.append(("system", task.system))
    messages.append(("user", task.prompt))
    return tuple(messages)


def answer_call(
    documents: Mapping[str, str | None], task: Task, model: str, sample: int,
    max_tokens: int | None = None,
) -> ModelCall:
    seen = view.shown_documents(documents)
    docs = [doc for doc in (seen["skill"], seen["memory"]) if doc]
    return ModelCall(
        purpose="answer",
        model=model,
        messages=agent_messages(documents, task),
        temperature=0.0,
        seed=sample,
        sample=sample,
        max_tokens=max_tokens,
        agent=task.agent or "",  # several agents: whose answer, routed to its backend
        tools=tools.declarations(task.tools),
        # named too, so an agent CLI can install each document where its agent reads it
        context={"documents": docs, "skill": seen["skill"], "memory": seen["memory"],
                 **({"tools": task.tools} if task.tools else {}),
                 **sandbox.call_context(task)},  # a workspace task: its folder, checks
    )


def learned_shape(documents: Mapping[str, str | None]) -> honesty.LearnedShape:
    """The templates and rule slots of the documents' learned blocks, which answers must
    fill (a corrupt block has none)."""
    templates: list[str] = []
    rules: list[str] = []
    for text in (documents.get("skill"), documents.get("memory")):
        if not text:
            continue
        try:
            template, found = docs.learned_template(text), docs.learned_rules(text)
        except UsageError:
            continue
        templates += [template] if template else []
        rules += found
    return honesty.LearnedShape(tuple(templates), tuple(honesty.rule_slots(rules)))


def metric_value(score: Score, gate: GateSettings) -> float:
    """The gate metric of one judged answer."""
    if gate.metric == "hard":
        return score.hard
    if gate.metric == "soft":
        return score.soft
    w = min(1.0, max(0.0, gate.mixed_weight))
    return (1.0 - w) * score.hard + w * score.soft


def _summarise(result: TaskResult, gate: GateSettings) -> TaskResult:
    scored = [s.score for s in result.samples if s.score is not None]
    if scored:
        result.hard = sum(s.hard for s in scored) / len(scored)
        result.soft = sum(s.soft for s in scored) / len(scored)
        result.value = sum(metric_value(s, gate) for s in scored) / len(scored)
    return result


StopRule = Callable[[list[TaskResult], list[str]], bool]  # (finished, remaining ids) -> stop


def score_split(
    runner: CallRunner,
    tasks: Sequence[Task],
    documents: Mapping[str, str | None],
    settings: EpochSettings,
    *,
    label: str,
    split: Split,
    on_answer: Tick = no_tick,
    stop: StopRule | None = None,
    chunk: int = 0,
) -> PassResult:
    """Score every task `repeats` times; failed calls are recorded, never scored.

    `on_answer` ticks once per answer (tasks x repeats), for a progress display.

    With a `stop` rule, tasks are scored in their given order, `chunk` tasks at a time,
    and the rule is asked between chunks with the finished tasks only; when it says the
    rest cannot change the outcome, the pass ends there (`stopped_after` is set and
    `tasks` holds only the finished ones). A pass with a failed call is never stopped:
    which tasks drop out is not known yet, and the error rate is judged on the whole pass.

    Raises BackendError when more than `max_error_rate` of the pass's calls failed:
    a night of errors must never read as a night of zeros. So does a budget stop when
    more than that share of the pass's calls so far failed: a broken agent that used up
    the calls must not read as a budget too small.
    """
    for task in tasks:  # before any call: only an agent CLI can work in a folder
        if task.workspace and not runner.backend.workspaces:
            raise UsageError(sandbox.backend_problem(task, runner.backend.name))
        if task.judge.reads_trace and not runner.backend.traces:
            where = f"{task.source}:{task.line}: " if task.line else f"{task.source}: "
            raise UsageError(f"{where}task {task.id!r}: {no_trace(runner.backend.name)}")
    started = time.perf_counter()
    step = len(tasks) if stop is None or chunk <= 0 else chunk
    results: list[TaskResult] = []
    fresh: list[Answer] = []
    total = 0
    stopped_after: int | None = None
    since = runner.tally()
    for start in range(0, len(tasks), max(1, step)):
        part = tasks[start:start + max(1, step)]
        try:
            done, answers, judged = _score_tasks(runner, part, documents, settings, split,
                                                 on_answer)
        except BudgetExhausted as stop:
            _check_errors_at_stop(runner, since, settings, f"{split} ({label})", stop)
            raise
        results += done
        fresh += [a for a in answers if not a.cached]
        total += len(answers) + judged
        rest = [t.id for t in tasks[start + len(part):]]
        if (stop is not None and rest and not any(t.errors for t in results)
                and stop(results, rest)):
            stopped_after = len(results)
            break
    outcome = PassResult(
        label, split, documents_version(documents), results, calls=len(fresh),
        prompt_tokens=sum(a.prompt_tokens for a in fresh),
        completion_tokens=sum(a.completion_tokens for a in fresh),
        stopped_after=stopped_after, planned=len(tasks),
        seconds=round(time.perf_counter() - started, 3),
    )
    if total and outcome.errors / total > settings.max_error_rate:
        first = next(s.error for t in results for s in t.samples if s.error)
        raise BackendError(
            f"{outcome.errors} of {total} model calls failed while scoring {split} "
            f"({label}), over max_error_rate {settings.max_error_rate:.0%}; first error: {first}"
        )
    _check_each_agent(results, tasks, settings, f"{split} ({label})")
    return outcome


def _check_each_agent(results: Sequence[TaskResult], tasks: Sequence[Task],
                      settings: EpochSettings, scoring: str) -> None:
    """Several agents: `max_error_rate` holds for each agent's answers too, so one dead
    agent among live ones stops the night (exit 3) instead of dropping out of the
    aggregate unseen."""
    owner = {task.id: task.agent for task in tasks if task.agent}
    if not owner:
        return
    answered: dict[str, list[TaskResult]] = {}
    for result in results:
        if result.task_id in owner:
            answered.setdefault(owner[result.task_id], []).append(result)
    for name, mine in answered.items():
        samples = sum(len(r.samples) for r in mine)
        failed = sum(r.errors for r in mine)
        if samples and failed / samples > settings.max_error_rate:
            first = next(s.error for r in mine for s in r.samples if s.error)
            raise BackendError(
                f"agent {name}: {failed} of its {samples} answers failed while scoring "
                f"{scoring}, over max_error_rate {settings.max_error_rate:.0%}; first error: "
                f"{first}")


def _check_errors_at_stop(runner: CallRunner, since: tuple[int, int, int],
                          settings: EpochSettings, scoring: str, stop: BudgetExhausted) -> None:
    """Raise BackendError (exit 3) instead of the budget stop when more than
    `max_error_rate` of the pass's calls until the stop failed (the calls running at the
    stop have finished by now)."""
    calls, hits, failed = (now - then for now, then in zip(runner.tally(), since, strict=True))
    total = calls + hits
    if total and failed / total > settings.max_error_rate:
        first = runner.errors[since[2]]
        raise BackendError(
            f"{failed} of {total} model calls failed while scoring {scoring}, over "
            f"max_error_rate {settings.max_error_rate:.0%}, before the budget stopped it "
            f"({stop}); first error: {first}"
        ) from stop


def _score_tasks(
    runner: CallRunner,
    tasks: Sequence[Task],
    documents: Mapping[str, str | None],
    settings: EpochSettings,
    split: Split,
    on_answer: Tick,
) -> tuple[list[TaskResult], list[Answer], int]:
    """The tasks' results, the answers that made them and the number of judge calls."""
    repeats = max(1, settings.gate.repeats)
    jobs = [(task, s) for task in tasks for s in range(repeats)]
    answers = runner.map([answer_call(documents, t, settings.model_for(t.agent), s,
                                      settings.max_answer_tokens)
                          for t, s in jobs], on_answer)
    samples: list[SampleResult] = []
    rubric_jobs: list[int] = []
    local = runner.judge_locally([local_judging(task, answer, settings)
                                  for (task, _), answer in zip(jobs, answers, strict=True)])
    for i, ((task, s), answer) in enumerate(zip(jobs, answers, strict=True)):
        if not answer.ok:
            samples.append(SampleResult(s, None, answer.error, None))
            continue
        if task.judge.reads_trace and answer.trace is None:  # unjudgeable: never a 0
            samples.append(SampleResult(s, None, no_trace(runner.backend.name), None))
            continue
        # An answer cut at the cap is scored as it is (see the README) and marked.
        samples.append(SampleResult(s, answer.text or "", None, local[i],
                                    finish_reason=answer.finish_reason, diff=answer.diff,
                                    trace=answer.trace))
        if task.judge.kind == "rubric":
            rubric_jobs.append(i)
    if rubric_jobs:
        calls = [
            judges.rubric_call(
                settings.judge_model,
                jobs[i][0].prompt,
                jobs[i][0].judge.rubric or "",
                samples[i].answer or "",
                jobs[i][1],
                max_tokens=settings.max_reflect_tokens,
            )
            for i in rubric_jobs
        ]
        for i, reply in zip(rubric_jobs, runner.map(calls), strict=True):
            parsed = judges.parse_rubric_reply(reply.text or "") if reply.ok else None
            if parsed is None:
                why = reply.error if not reply.ok else "judge reply had no readable score"
                samples[i].error = f"rubric judge: {why}"
            samples[i].score = parsed
    shape = learned_shape(documents)
    for sample in samples:
        if sample.score is not None and sample.answer is not None:
            sample.score = judges.with_integrity(sample.score, sample.answer, shape)
    results: list[TaskResult] = []
    for t_index, task in enumerate(tasks):
        mine = samples[t_index * repeats : (t_index + 1) * repeats]
        results.append(_summarise(TaskResult(task.id, split, mine), settings.gate))
    return results, answers, len(rubric_jobs)


def no_trace(backend: str) -> str:
    """Why an answer to a task with trajectory checks was not scored."""
    return (f"the {backend} backend gave no tool trace, so the task's trajectory checks "
            "(tool_called, ...) cannot be judged: answer it with a backend that records "
            "tool calls (offline, openai with `tools:`, or an agent CLI that reports them)")


def local_judging(task: Task, answer: Answer, settings: EpochSettings
                  ) -> tuple[Callable[[], Score | None], bool]:
    """The rule or exact judging of one answer, to run when the runner says (None for a
    failed call or a rubric judge), and whether it starts programs (a text task's
    `command` checks; a workspace task's come as the backend judged them)."""

    def judge() -> Score | None:
        if not answer.ok:
            return None
        outcomes = judges.workspace_outcomes(answer, task.workspace is not None)
        return judges.score_local(task.judge, answer.text or "", outcomes,
                                  pass_env=settings.check_pass_env,
                                  program=settings.check_program, trace=answer.trace)

    programs = answer.ok and task.workspace is None and judges.runs_programs(task.judge)
    return judge, programs
