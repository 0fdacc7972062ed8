"""Scoring the splits of one epoch: every pass the night makes goes through `Scorer`, which
keeps them in order for the night's record and says what each one is doing.

The search (`gitsleep.core.search`) and the epoch (`gitsleep.core.epoch`) share one
`Scorer`: the val baseline is scored once, whoever needs it first, and a budget stop names
the step that was running (`Scorer.step`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

from gitsleep.core import gate, judges, replay, rollouts
from gitsleep.core.calls import CallRunner, StepHook, no_tick
from gitsleep.core.models import EpochSettings, PassResult, Split, Task, TaskResult


class Scorer:
    """Scores splits under given documents and records every pass, in the order made."""

    def __init__(self, tasks: Sequence[Task], original: Mapping[str, str | None],
                 settings: EpochSettings, runner: CallRunner, *, skill: str,
                 progress: Callable[[str], None], steps: StepHook | None) -> None:
        self.settings = settings
        self.runner = runner
        self.skill = skill
        self.progress = progress
        self.steps = steps  # per-answer progress of a pass, from the edge (a bar, lines)
        self.original = dict(original)
        self.split = {s: [t for t in tasks if t.split == s] for s in ("train", "val", "test")}
        self.step = "the baseline"  # what runs now: a budget stop says what it skipped
        self.passes: list[PassResult] = []  # every pass, in the order made
        self.base_val: PassResult | None = None  # val under the original documents, once scored
        self.contrasts: dict[str, list[rollouts.Contrast]] = {}  # by train pass version

    def score(self, split: Split, documents: Mapping[str, str | None], label: str,
              against: PassResult | None = None, bar: float | None = None,
              near: PassResult | None = None, only: list[Task] | None = None) -> PassResult:
        """Score a split; a candidate scored `against` the best stops once it cannot beat
        the gate, or (given a `bar`) once its val mean cannot reach the `bar`.

        `near`: the pass of a document this candidate differs from by one edit or so (the
        bundle a leave-one-out would replace): its weakest tasks are scored first, where
        the candidate most likely falls short too, so the pass stops sooner. The result
        lists its tasks in the split's order whatever order they were scored in. `only`:
        these tasks of the split, not all of them (the thrifty screen)."""
        count = len(self.split[split] if only is None else only)
        tick = no_tick
        if self.steps is not None:
            tick = self.steps(f"{self.skill}: scoring {split} ({label})",
                              count * max(1, self.settings.gate.repeats))
        else:
            self.progress(f"{self.skill}: scoring {split} ({label}, "
                          f"{_how_many(self.split[split] if only is None else only)})")
        stop = None
        # several agents gated on their weakest (`gate.agents: min`): the stop rule bounds
        # the mean of every answer, not the weakest agent's, so such a pass is not stopped
        weakest = bool(self.settings.agents) and self.settings.gate.agents == "min"
        if against is not None and self.settings.early_stop and not weakest:
            def stop(done: list[TaskResult], rest: list[str]) -> bool:
                return gate.cannot_win(against, done, rest, self.settings.gate) or (
                    bar is not None
                    and gate.best_reachable(against, done, rest) < bar - gate.STOP_MARGIN)
        order = self.split[split] if only is None else only
        if stop is not None and near is not None:
            order = _weakest_first(order, near)
        self.step = f"scoring {split} ({label})"
        hits = self.runner.cost.cache_hits
        result = replay.score_split(
            self.runner, order, documents, self.settings, label=label, split=split,
            on_answer=tick, stop=stop, chunk=self.settings.workers,
        )
        self._say_cached(result, self.runner.cost.cache_hits - hits)
        if order is not self.split[split]:
            position = {t.id: i for i, t in enumerate(self.split[split])}
            result.tasks.sort(key=lambda t: position[t.task_id])
        self.passes.append(result)
        note = integrity_note(result)
        if note:  # answers that only echo the learned template: failed whatever the checks say
            self.progress(f"{self.skill}: {split} ({label}){note}")
        return result

    def _say_cached(self, result: PassResult, hits: int) -> None:
        """`val (baseline): 6/6, 6 from cache`: what the cache saved in this pass (said
        only when it saved something)."""
        if hits <= 0:
            return
        repeats = max(1, self.settings.gate.repeats)
        done = sum(len(t.samples) for t in result.tasks)
        self.progress(f"{self.skill}: {result.split} ({result.label}): {done}/"
                      f"{result.planned * repeats}, {hits} from cache")

    def val_baseline(self) -> PassResult:
        """Val under the original documents, scored once: first of all under `search:
        thorough`; under `thrifty` when the first candidate that passed its train screen
        needs the gate, so a night whose every proposal is screened out scores no val."""
        if self.base_val is None:
            self.base_val = self.score("val", self.original, "baseline")
        return self.base_val

    def score_train(self, documents: Mapping[str, str | None], label: str) -> PassResult:
        """Train under `documents`: all of it under `search: thorough`; under
        `thrifty` the seeded sample `train_minibatch` draws (GEPA's reflection minibatch:
        the failures the optimizer sees and the screens come from it), and the rest of train
        when no task of the sample fails (then nothing could be learned from it)."""
        train = self.split["train"]
        sample = (train_minibatch(train, self.skill, documents)
                  if self.settings.search == "thrifty" else train)
        if len(sample) == len(train):
            return self.score("train", documents, label)
        self.progress(f"{self.skill}: train: scored on {len(sample)} of {len(train)} "
                      "(search: thrifty: a seeded sample to reflect on)")
        part = self.score("train", documents, label, only=sample)
        if any(t.hard is not None and t.hard < 1.0 for t in part.tasks):
            return part
        chosen = {t.id for t in sample}
        rest = [t for t in train if t.id not in chosen]
        self.progress(f"{self.skill}: no train task of the sample fails: scoring the other "
                      f"{len(rest)}")
        more = self.score("train", documents,
                          f"{label} (the rest of train: the sample had no failure)", only=rest)
        by_id = {t.task_id: t for t in [*part.tasks, *more.tasks]}
        return PassResult(label, "train", part.version, [by_id[t.id] for t in train],
                          calls=part.calls + more.calls,
                          prompt_tokens=part.prompt_tokens + more.prompt_tokens,
                          completion_tokens=part.completion_tokens + more.completion_tokens,
                          planned=len(train), seconds=part.seconds + more.seconds)

    def contrasts_of(self, train: PassResult,
                     documents: Mapping[str, str | None]) -> list[rollouts.Contrast]:
        """Better/worse answer pairs of the train tasks under `train`'s documents, from
        `rollouts - 1` sampled answers per task (none when rollouts are off)."""
        if self.settings.rollouts <= 1:
            return []
        key = f"{train.version}:{','.join(t.task_id for t in train.tasks)}"
        if key not in self.contrasts:
            self.progress(f"{self.skill}: sampling {self.settings.rollouts - 1} more answer(s) "
                          f"per train task")
            self.step = "the rollouts"
            scored = {t.task_id for t in train.tasks}  # thrifty: its sample of train
            sampled = rollouts.sample(self.runner,
                                      [t for t in self.split["train"] if t.id in scored],
                                      documents, self.settings)
            self.passes.append(PassResult(
                "rollouts", "rollouts", train.version,
                [TaskResult(task_id, "rollouts", samples) for task_id, samples in sampled.items()],
            ))
            self.contrasts[key] = rollouts.contrasts(train.tasks, sampled, self.settings)
        return self.contrasts[key]

    def rest_of_val(self, val: PassResult, documents: Mapping[str, str | None]) -> PassResult:
        """A val pass that stopped early, completed: the tasks it skipped scored under
        `documents` (their own pass in the record) and joined to it in the split's order."""
        done = {t.task_id for t in val.tasks}
        rest = [t for t in self.split["val"] if t.id not in done]
        label = f"{val.label} (the rest, to compare the losers)"
        self.step = f"scoring val ({label})"
        more = replay.score_split(self.runner, rest, documents, self.settings,
                                  label=label, split="val")
        self.passes.append(more)
        by_id = {t.task_id: t for t in [*val.tasks, *more.tasks]}
        return PassResult(val.label, "val", val.version,
                          [by_id[t.id] for t in self.split["val"]],
                          calls=val.calls + more.calls,
                          prompt_tokens=val.prompt_tokens + more.prompt_tokens,
                          completion_tokens=val.completion_tokens + more.completion_tokens,
                          planned=len(self.split["val"]))


def _how_many(tasks: Sequence[Task]) -> str:
    """`6 tasks`, or with several agents `6 tasks x 2 agents` (of the copies scored)."""
    names = {t.agent for t in tasks if t.agent}
    count = len({t.base_id for t in tasks}) if names else len(tasks)
    said = f"{count} task{'' if count == 1 else 's'}"
    return f"{said} x {len(names)} agent{'' if len(names) == 1 else 's'}" if names else said


def integrity_note(result: PassResult) -> str:
    """`; 3 answer(s) failed integrity ...` for a progress line, '' when none did."""
    count = judges.integrity_failures(s for t in result.tasks for s in t.samples)
    if not count:
        return ""
    return (f"; {count} answer(s) failed integrity (a template placeholder or rule slot "
            "repeated, or a required section left empty)")


SCREEN_FIXES = 3  # train failures a thrifty screen scores a proposal on (plus one passing task)
TRAIN_MINIBATCH = 8  # train tasks a thrifty night scores and reflects on (benchmarks: 1c)


def train_minibatch(train: Sequence[Task], skill: str,
                    documents: Mapping[str, str | None]) -> list[Task]:
    """The train tasks `search: thrifty` scores under `documents` and reflects on:
    `TRAIN_MINIBATCH` of them (at least a screen's worth), in the split's order, and all
    of train when a sample would leave out less than half of it: on 10-15 train tasks the
    few calls a pass saves hid failures a proposal needed, and cost held-out gain with real
    models (benchmarks/real_model/results.md). Each task is ranked by a hash of the skill's
    name, the documents' text and its id: the same inputs draw the same sample (a re-run
    is a cache hit), documents an accepted round or a merged night changed draw another
    (the optimizer sees other failures), and adding a task moves at most one other out."""
    size = max(SCREEN_FIXES + 1, TRAIN_MINIBATCH)
    if len(train) < 2 * size:
        return list(train)
    seed = "\0".join([skill, documents.get("skill") or "", documents.get("memory") or ""])

    def rank(task: Task) -> str:
        return hashlib.sha256(f"{seed}\0{task.id}".encode()).hexdigest()

    chosen = {t.id for t in sorted(train, key=rank)[:size]}
    return [t for t in train if t.id in chosen]


def _weakest_first(tasks: list[Task], near: PassResult) -> list[Task]:
    """`tasks` by their value in `near`, lowest first (a task it could not score first of
    all; ties keep the split's order): a fixed order, so the saving repeats."""
    values = near.by_id()

    def value(task: Task) -> float:
        known = values.get(task.id)
        return -1.0 if known is None or known.value is None else known.value

    return sorted(tasks, key=value)
