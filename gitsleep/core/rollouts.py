"""Contrastive rollouts: the same train task answered several times, better beside worse.

With `rollouts: K` (K > 1) every train task whose judge is local (rule or exact) is
answered K - 1 more times at a temperature above zero, each with its own seed, next to
the greedy answer the score already has. Where two answers to the same prompt differ
on some check, the optimizer is shown both, with the checks that separate them: the
strongest signal a small optimizer can get ("do what this answer did"). Where every
answer fails the same checks, the reflection is today's. Sampled answers go through the
calls layer like every answer (cached, counted, budgeted); they never score a split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from gitsleep.core import judges, replay
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Check, EpochSettings, SampleResult, Task, TaskResult

TEMPERATURE = 0.8
SEED_BASE = 9000  # rollout k uses seed SEED_BASE + k; scoring uses seeds 0..repeats-1
MAX_SHOWN = 3


@dataclass(frozen=True)
class Contrast:
    """Two answers to one train task, and the checks the better passes and the worse fails."""

    task_id: str
    better: str
    worse: str
    separating: tuple[Check, ...]
    better_value: float
    worse_value: float


def sampled_tasks(tasks: Sequence[Task]) -> list[Task]:
    """The tasks rollouts answer: those judged locally (a rubric would need a judge call)."""
    return [t for t in tasks if t.judge.kind != "rubric"]


def extra_calls(settings: EpochSettings, train: Sequence[Task]) -> int:
    """Model calls one rollout pass over `train` makes before the cache saves any."""
    return max(0, settings.rollouts - 1) * len(sampled_tasks(train))


def sample(
    runner: CallRunner,
    tasks: Sequence[Task],
    documents: Mapping[str, str | None],
    settings: EpochSettings,
) -> dict[str, list[SampleResult]]:
    """K - 1 sampled, judged answers per task under `documents` (failed calls left out)."""
    chosen = sampled_tasks(tasks)
    jobs = [(task, k) for task in chosen for k in range(1, settings.rollouts)]
    if not jobs:
        return {}
    calls = [replace(replay.answer_call(documents, task, settings.model_for(task.agent), 0),
                     temperature=TEMPERATURE, seed=SEED_BASE + k, sample=SEED_BASE + k)
             for task, k in jobs]
    out: dict[str, list[SampleResult]] = {t.id: [] for t in chosen}
    shape = replay.learned_shape(documents)  # integrity, as replay scores answers
    answers = runner.map(calls)
    scores = runner.judge_locally([replay.local_judging(task, answer, settings)
                                   for (task, _), answer in zip(jobs, answers, strict=True)])
    for (task, k), answer, score in zip(jobs, answers, scores, strict=True):
        if answer.ok:
            text = answer.text or ""
            if score is not None:
                score = judges.with_integrity(score, text, shape)
            out[task.id].append(SampleResult(SEED_BASE + k, text, None, score))
    return out


def contrasts(
    results: Sequence[TaskResult],
    sampled: Mapping[str, Sequence[SampleResult]],
    settings: EpochSettings,
) -> list[Contrast]:
    """Per task, the best and the worst answer when some check tells them apart;
    the widest gaps first, at most MAX_SHOWN."""
    found: list[Contrast] = []
    for result in results:
        answers = [s for s in [*result.samples, *sampled.get(result.task_id, ())]
                   if s.score is not None and s.answer is not None]
        if len(answers) < 2:
            continue
        ranked = sorted(answers, key=lambda s: replay.metric_value(s.score, settings.gate)
                        if s.score is not None else 0.0)  # never None: filtered above
        worse, better = ranked[0], ranked[-1]
        assert worse.score is not None and better.score is not None
        separating = tuple(c for c in worse.score.failed if c not in better.score.failed)
        if not separating:
            continue
        found.append(Contrast(
            result.task_id, better.answer or "", worse.answer or "", separating,
            replay.metric_value(better.score, settings.gate),
            replay.metric_value(worse.score, settings.gate)))
    found.sort(key=lambda c: (-len(c.separating), c.worse_value - c.better_value))
    return found[:MAX_SHOWN]
