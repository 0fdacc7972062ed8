"""One consolidation epoch for one skill: the pure core, with no git and no network.

    baseline: score train, val and test under the current documents
    for each target (skill, then memory when configured), up to `rounds` rounds:
        reflect on train failures -> `proposals` candidate edit sets
        apply each to its own copy of the document, score it on val
        the best candidate that beats the gate wins (ties go to the smaller change);
        the others' edits are remembered as rejected and shown to the next round
    held-out: score test under the final documents (never shown to the optimizer,
    never used to choose an edit)

Run it from a REPL with two strings and a list of tasks:

    run_epoch(tasks, {"skill": text, "memory": None}, settings, OfflineBackend(), skill="x")
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import ParamSpec

from gitsleep.backends.base import Backend, ModelCall
from gitsleep.core import diagnose, gate, groups, honesty, judges, reflect, replay, rollouts
from gitsleep.core import documents as docs
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner, StepHook, no_tick
from gitsleep.core.models import (
    Edit,
    EditOutcome,
    EpochResult,
    EpochSettings,
    GateTrial,
    PassResult,
    ProgressLines,
    Proposal,
    Split,
    SplitSummary,
    Task,
    TaskResult,
    usd,
)
from gitsleep.core.scores import fmt_score
from gitsleep.errors import EXIT_BACKEND, EXIT_BUDGET, BackendError, BudgetExhausted, UsageError


@dataclass
class _Candidate:
    trial: GateTrial
    documents: dict[str, str | None]
    val: PassResult
    size: int  # characters changed, for tie-breaks


@dataclass
class _Round:
    """One round of the search on one document, and what it found: the val pass candidates
    must beat, the documents already tried (each is scored once), the candidates scored,
    and the round's proposals, trials and refused edits. `Epoch._round` fills it and
    returns it with its winner; `Epoch._run` adds it to the epoch's result in one place."""

    target: str
    number: int
    scored_best: PassResult | None  # the val pass to beat; None: the baseline, not scored yet
    score_best: Callable[[], PassResult]  # scores it (`search: thrifty`'s lazy val baseline)
    seen: set[str] = field(default_factory=set)
    candidates: list[_Candidate] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    trials: list[GateTrial] = field(default_factory=list)
    rejected: list[EditOutcome] = field(default_factory=list)  # lost on val or screened out
    unmatched: list[EditOutcome] = field(default_factory=list)  # never scored, with why
    winner: _Candidate | None = None

    @property
    def best_val(self) -> PassResult:
        """The val pass candidates must beat. Under `search: thrifty` the val baseline is
        scored here, when the first candidate that passed its screen needs the gate."""
        if self.scored_best is None:
            self.scored_best = self.score_best()
        return self.scored_best

    @property
    def tried(self) -> bool:
        """A candidate was scored on val, or screened out on train: the optimizer had
        something new for this document."""
        return bool(self.candidates) or any(t.screened for t in self.trials)


def _quiet(_: str) -> None:
    pass


P = ParamSpec("P")


class Epoch:
    """The state of one epoch while it runs; `run()` returns the EpochResult."""

    def __init__(
        self,
        tasks: Sequence[Task],
        documents: Mapping[str, str | None],
        settings: EpochSettings,
        backend: Backend,
        *,
        skill: str,
        cache: ResponseCache | None = None,
        progress: ProgressLines | None = None,
        redact: Callable[[str], str] | None = None,
        steps: StepHook | None = None,
    ) -> None:
        self.settings = settings
        self.steps = steps  # per-answer progress of a pass, from the edge (a bar, lines)
        self._asking = threading.local()  # what each thread's optimizer call is for
        self.redact = redact
        self.skill = skill
        self.backend = backend
        self.progress = progress or _quiet
        self.tasks = {t.id: t for t in tasks}
        self.split = {s: [t for t in tasks if t.split == s] for s in ("train", "val", "test")}
        if not self.split["val"]:
            raise UsageError(f"skill {skill}: no task is in the val split; the gate needs val "
                             "tasks (label some tasks `split: val` or use `split: auto`)")
        keys = groups.varying_keys(self.split["train"])  # the judgment train asks for
        self.val_groups = groups.named_groups(keys, self.split["val"])
        self.original = dict(documents)
        self.current = dict(documents)
        self.runner = CallRunner.for_settings(backend, settings, cache=cache,
                                              on_start=self._call_started)
        self.ceiling = call_ceiling(settings, tasks, documents.get("memory") is not None)
        self.step = "the baseline"  # what runs now: a budget stop says what it skipped
        self.screened = 0  # proposals `search: thrifty` kept off val
        self.base_val: PassResult | None = None  # val under the original documents, once scored
        self.result = EpochResult(
            skill=skill,
            decision="no_edits",
            reason="",
            metric=settings.gate.metric,
            backend=backend.name,
            agent_model=settings.model,
            optimizer_model=settings.optimizer_model,
            judge_model=settings.judge_model,
            train=SplitSummary(None, None, len(self.split["train"])),
            val=SplitSummary(None, None, len(self.split["val"])),
            test=SplitSummary(None, None, len(self.split["test"])),
            documents={},
            decided_by="test" if self.split["test"] else "val",
            groups=groups.named_groups(keys, [*self.split["val"], *self.split["test"]]),
        )
        self.rejected: list[Edit] = []
        self.contrasts: dict[str, list[rollouts.Contrast]] = {}  # by train pass version
        self.trial_passes: list[PassResult] = []  # each candidate's val pass, in trial order

    # -- scoring -------------------------------------------------------------------------

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
            self.progress(f"{self.skill}: scoring {split} ({label}, {count} "
                          f"task{'' if count == 1 else 's'})")
        stop = None
        if against is not None and self.settings.early_stop:
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
        self.result.passes.append(result)
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

    def _call_started(self, call: ModelCall) -> None:
        """Say when an optimizer call goes out: it is the slow one, and it costs most."""
        if call.purpose == "propose":
            asking = getattr(self._asking, "text", "")
            self.progress(f"{self.skill}: optimizer call started ({call.model}): {asking}")

    # -- the epoch -------------------------------------------------------------------------

    def run(self) -> EpochResult:
        started = time.perf_counter()
        try:
            self._run()
        except BackendError as exc:
            self._abort(str(exc), EXIT_BACKEND)
        except BudgetExhausted as exc:
            left = max(0, self.ceiling - self.runner.cost.calls)
            self._abort(f"{exc}; stopped before a decision; skipped: {self.step} and the rest "
                        f"of the epoch (at most {left} more calls)", EXIT_BUDGET)
        finally:
            self.result.cost = self.runner.cost
            self.result.cost.seconds = round(time.perf_counter() - started, 3)
            self.result.cost.latency = self.runner.latency()
            self.result.errors = list(self.runner.errors)
            self.backend.close()
        self.result.documents = {
            name: (self.original[name] or "", self.current[name] or "")
            for name in ("skill", "memory")
            if self.original.get(name) is not None
        }
        return self.result

    def _abort(self, reason: str, code: int) -> None:
        self._undo("epoch aborted")
        self.result.decision = "aborted"
        self.result.reason = reason
        self.result.abort_code = code

    def _undo(self, why: str) -> None:
        """Back to the original documents: every applied edit becomes rejected with `why`,
        and no PR opens."""
        self.current = dict(self.original)
        self.result.pr_eligible = False
        self.result.rejected.extend(EditOutcome(o.edit, "rejected", why)
                                    for o in self.result.applied)
        self.result.applied = []

    def _run(self) -> None:
        thrifty = self.settings.search == "thrifty"
        base_train = self._score_train("baseline")
        if not thrifty:  # thrifty scores val once a candidate passed its screen and needs it
            self._val_baseline()
        # thrifty scores held-out only once something is accepted: no PR can open otherwise
        base_test = (self.score("test", self.original, "baseline")
                     if self.split["test"] and not thrifty else None)
        best_val, train_now = self.base_val, base_train
        train_current = True  # train_now was scored under the current documents
        targets = ["skill"] + (["memory"] if self.original.get("memory") is not None else [])
        any_candidate = False
        for target in targets:
            for round_no in range(1, self.settings.rounds + 1):
                failures = [t for t in train_now.tasks if t.hard is not None and t.hard < 1.0]
                if not failures:
                    break
                passes = [t for t in train_now.tasks if t.hard == 1.0]
                contrasts = self._contrasts(train_now)
                rnd = _Round(target, round_no, best_val, self._val_baseline)
                try:
                    self._round(rnd, failures, passes, contrasts)
                finally:  # an aborted round's trials are part of the record too
                    self._record(rnd)
                winner = rnd.winner
                any_candidate = any_candidate or rnd.tried
                best_val = rnd.scored_best  # the val baseline, if this round scored it
                if winner is None:
                    if not rnd.tried:
                        break  # the optimizer has nothing new for this target
                    continue
                self.current = winner.documents
                best_val = winner.val
                self.result.applied.extend(EditOutcome(e, "applied") for e in winner.trial.applied)
                if thrifty and target == targets[-1] and round_no == self.settings.rounds:
                    # nothing reflects on it after the last round (SkillOpt-Sleep's schedule)
                    train_current = False
                    self.progress(f"{self.skill}: train not re-scored after the last round "
                                  "(search: thrifty)")
                    continue
                train_now = self._score_train(f"after {target} round {round_no}")
        if thrifty and self.split["test"]:
            if self.current != self.original:
                base_test = self.score("test", self.original, "baseline")
            else:
                self.progress(f"{self.skill}: held-out not scored: nothing was accepted "
                              "(search: thrifty)")
        final_test = base_test
        if base_test is not None and self.current != self.original:
            final_test = self.score("test", self.current, "final")
        for final in (train_now if train_current else None, best_val, final_test):
            if final is not None and final.label != "baseline":
                final.final = True
        same_tasks = [t.task_id for t in train_now.tasks] == [t.task_id for t in base_train.tasks]
        self.result.train = (gate.summarise(base_train, train_now, len(self.split["train"]))
                             if train_current and same_tasks else  # thrifty: another sample
                             SplitSummary(base_train.mean, None, len(self.split["train"])))
        base_val = self.base_val
        if base_val is not None and best_val is not None:
            self.result.val = gate.summarise(base_val, best_val, len(self.split["val"]))
        elif self.screened:
            self.progress(f"{self.skill}: val not scored: every proposal was screened out on "
                          "train (search: thrifty)")
        else:
            self.progress(f"{self.skill}: val not scored: no candidate to gate (search: thrifty)")
        if base_test is not None and final_test is not None:
            self.result.test = gate.summarise(base_test, final_test, len(self.split["test"]))
        veto = (gate.held_out_integrity(base_test, final_test)
                if base_test is not None and final_test is not None
                and final_test is not base_test else "")
        self._decide(base_train, any_candidate, veto)
        if self.result.decision == "accepted":
            learned = [line for o in self.result.applied if o.edit.op in ("add", "replace")
                       for line in o.edit.content.split("\n") if line.strip()]
            self.result.warnings = honesty.over_reach(learned, list(self.tasks.values()))
        if (self.result.decision == "rejected" and base_val is not None
                and diagnose.all_tied(self.result.trials)):
            self.result.diagnosis = diagnose.per_check(base_val, self.trial_passes)
            if self.result.diagnosis:
                why = diagnose.summary(self.result.diagnosis)
                self.result.reason += f"; every candidate tied, per check: {why}"

    def _record(self, rnd: _Round) -> None:
        """A round's proposals, trials and refused edits become part of the epoch's result."""
        self.result.proposals.extend(rnd.proposals)
        self.result.unmatched.extend(rnd.unmatched)
        self.result.trials.extend(rnd.trials)
        self.result.rejected.extend(rnd.rejected)

    def _val_baseline(self) -> PassResult:
        """Val under the original documents, scored once: first of all under `search:
        thorough`; under `thrifty` when the first candidate that passed its train screen
        needs the gate, so a night whose every proposal is screened out scores no val."""
        if self.base_val is None:
            self.base_val = self.score("val", self.original, "baseline")
        return self.base_val

    def _score_train(self, label: str) -> PassResult:
        """Train under the current documents: all of it under `search: thorough`; under
        `thrifty` the seeded sample `train_minibatch` draws (GEPA's reflection minibatch:
        the failures the optimizer sees and the screens come from it), and the rest of train
        when no task of the sample fails (then nothing could be learned from it)."""
        train = self.split["train"]
        sample = (train_minibatch(train, self.skill, self.current)
                  if self.settings.search == "thrifty" else train)
        if len(sample) == len(train):
            return self.score("train", self.current, label)
        self.progress(f"{self.skill}: train: scored on {len(sample)} of {len(train)} "
                      "(search: thrifty: a seeded sample to reflect on)")
        part = self.score("train", self.current, label, only=sample)
        if any(t.hard is not None and t.hard < 1.0 for t in part.tasks):
            return part
        chosen = {t.id for t in sample}
        rest = [t for t in train if t.id not in chosen]
        self.progress(f"{self.skill}: no train task of the sample fails: scoring the other "
                      f"{len(rest)}")
        more = self.score("train", self.current,
                          f"{label} (the rest of train: the sample had no failure)", only=rest)
        by_id = {t.task_id: t for t in [*part.tasks, *more.tasks]}
        return PassResult(label, "train", part.version, [by_id[t.id] for t in train],
                          calls=part.calls + more.calls,
                          prompt_tokens=part.prompt_tokens + more.prompt_tokens,
                          completion_tokens=part.completion_tokens + more.completion_tokens,
                          planned=len(train), seconds=part.seconds + more.seconds)

    def _contrasts(self, train: PassResult) -> list[rollouts.Contrast]:
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
                                      self.current, self.settings)
            self.result.passes.append(PassResult(
                "rollouts", "rollouts", train.version,
                [TaskResult(task_id, "rollouts", samples) for task_id, samples in sampled.items()],
            ))
            self.contrasts[key] = rollouts.contrasts(train.tasks, sampled, self.settings)
        return self.contrasts[key]

    def _round(self, rnd: _Round, failures: list[TaskResult], passes: list[TaskResult],
               contrasts: list[rollouts.Contrast]) -> None:
        """Propose, apply and gate `proposals` candidates; `rnd.winner` is the winner, if any.

        When no candidate passes and the best one bundled several edits, each of its
        edits is gated alone: a helpful edit must not be lost to a harmful companion.
        """
        target, round_no = rnd.target, rnd.number
        document = self.current[target] or ""
        candidates = rnd.candidates
        count = max(1, self.settings.proposals)
        for index, proposal in enumerate(self._propose(target, round_no, document, failures,
                                                       passes, contrasts, count)):
            rnd.proposals.append(proposal)
            rnd.unmatched.extend(proposal.dropped)
            label = f"{target} round {round_no} proposal {index + 1}"
            # a later bundle must reach the best passing one so far to matter (item 2)
            leader = _leader(candidates)
            screen = None
            if self.settings.search == "thrifty":
                screen = screening_tasks(reflect.slice_failures(failures, index, count),
                                         passes, index)
            cand = self._try(rnd, index, proposal.edits, label,
                             bar=None if leader is None else leader.trial.candidate,
                             near=None if leader is None else leader.val, screen=screen)
            if cand is not None:
                candidates.append(cand)
        failed_calls = [p for p in rnd.proposals if p.raw is None and p.error]
        if len(failed_calls) == len(rnd.proposals):
            # every optimizer call failed: a silent "no edits" night would hide it
            raise BackendError(f"the optimizer model failed on all {count} call(s) of {target} "
                               f"round {round_no}; first error: {failed_calls[0].error}")
        for cand in list(candidates):
            rescued = self._without_copied(rnd, cand, candidates)
            if rescued is not None:
                candidates.append(rescued)
        if (not any(c.trial.accepted for c in candidates)
                and any(len(c.trial.applied) > 1 for c in candidates)):
            bundle = self._best_loser(candidates, rnd.best_val)
            if len(bundle.trial.applied) > 1:
                for i, edit in enumerate(bundle.trial.applied):
                    label = (f"{target} round {round_no} proposal {bundle.trial.proposal + 1}, "
                             f"edit {i + 1} alone")
                    cand = self._try(rnd, bundle.trial.proposal, [edit], label)
                    if cand is not None:
                        candidates.append(cand)
        if candidates:  # (none: every proposal screened out, and thrifty scored no val)
            self._finish_for_merge(candidates, rnd.best_val)
        passing = [c for c in candidates if c.trial.accepted]
        merged = self._merge(rnd, passing)
        if merged is not None:
            candidates.append(merged)
            passing += [merged] if merged.trial.accepted else []
        winner = max(passing, key=lambda c: (c.trial.candidate or 0.0, -c.size), default=None)
        pruned_from = len(rnd.trials)
        if (winner is not None and len(winner.trial.applied) > 1
                and (winner.trial.candidate or 0.0) < 1.0):
            # at a perfect val score no edit can be harmful on val: nothing to prune for
            winner = self._prune(rnd, winner)
        if winner is not None:  # within the val passes the pruning may use (the ceiling)
            spare = self.settings.edit_budget - 1 - (len(rnd.trials) - pruned_from)
            winner = self._prove_deletes(rnd, winner, spare)
        self._book_losers(rnd, winner)
        rnd.winner = winner

    def _propose(
        self,
        target: str,
        round_no: int,
        document: str,
        failures: list[TaskResult],
        passes: list[TaskResult],
        contrasts: list[rollouts.Contrast],
        count: int,
    ) -> list[Proposal]:
        """The round's `count` reflect calls, run at once (up to `workers`): each sees its
        own slice of the failures and its own seed, and none depends on another's reply,
        so the proposals and their order are those of one call after the other."""
        def one(index: int) -> Proposal:
            shown = reflect.slice_failures(failures, index, count)
            self._asking.text = (f"{target} round {round_no}, proposal {index + 1} of {count}, "
                                 f"from {len(shown)} failing train task"
                                 f"{'' if len(shown) == 1 else 's'}")
            evidence = reflect.Evidence(target, document, shown, passes, self.tasks,
                                        self.rejected, contrasts)
            return reflect.propose(self.runner, self.settings, evidence, round_no=round_no,
                                   index=index, redact=self.redact)

        self.step = f"the {target} round {round_no} proposals"
        workers = min(max(1, self.settings.workers), count)
        if workers == 1:
            return [one(index) for index in range(count)]
        self.progress(f"{self.skill}: {count} proposals for {target} round {round_no} "
                      f"started, {workers} at a time")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(one, index) for index in range(count)]
            return [future.result() for future in futures]

    def _without_copied(self, rnd: _Round, cand: _Candidate,
                        candidates: list[_Candidate]) -> _Candidate | None:
        """A bundle the gate refused because its val answers copy what one of its edits
        asks them to fill (a rule's typed slot, a template), gated once more without the
        edits they copy: the rest may be what lifted val. A real night (incident-notes,
        8b234b6) lost two section rules with the severity rule whose `<1-4>` one val answer
        repeated, and a single template scoring higher kept the bundle from being split."""
        if (cand.trial.accepted or len(cand.trial.applied) < 2
                or not gate.more_hollow(rnd.best_val, cand.val)):
            return None
        hollow = [s.answer for t in cand.val.tasks for s in t.samples
                  if s.answer is not None and judges.failed_integrity(s)]
        copied = [e for e in cand.trial.applied
                  if any(honesty.hollow_reason(answer, _asks_to_fill(e)) for answer in hollow)]
        rest = [e for e in cand.trial.applied if e not in copied]
        if not copied or not rest:
            return None
        leader = max((c for c in candidates if c.trial.accepted),
                     key=lambda c: c.trial.candidate or 0.0, default=None)
        label = (f"{rnd.target} round {rnd.number} proposal {cand.trial.proposal + 1}, "
                 "without the edit its answers copy")
        return self._try(rnd, cand.trial.proposal, rest, label,
                         bar=None if leader is None else leader.trial.candidate,
                         near=None if leader is None else leader.val)

    def _best_loser(self, candidates: list[_Candidate], best_val: PassResult) -> _Candidate:
        """The highest-scoring candidate, ties to the smaller (the first such in order).

        A candidate whose scoring stopped early has no val mean; it is scored in full
        only when the best mean it could still reach is not below the best known one,
        so the choice is the one a full scoring of every candidate would make."""
        def key(c: _Candidate) -> tuple[float, int]:
            return (c.trial.candidate or 0.0, -c.size)

        stopped = sorted((c for c in candidates if c.trial.stopped_after is not None),
                         key=lambda c: -_reach(best_val, c.val))
        known = [c for c in candidates if c.trial.stopped_after is None]
        for cand in stopped:
            best = max(known, key=key, default=None)
            if best is not None and _reach(best_val, cand.val) < key(best)[0] - gate.STOP_MARGIN:
                break  # neither this one nor any after it can be the highest
            self._complete(cand, best_val)
            known.append(cand)
        return max((c for c in candidates if c in known), key=key)

    def _complete(self, cand: _Candidate, best_val: PassResult,
                  why: str = "finished to choose the bundle whose edits are gated alone",
                  ) -> None:
        """Score the val tasks a stopped candidate skipped and judge it in full."""
        done = {t.task_id for t in cand.val.tasks}
        rest = [t for t in self.split["val"] if t.id not in done]
        label = f"{cand.val.label} (the rest, to compare the losers)"
        self.step = f"scoring val ({label})"
        more = replay.score_split(self.runner, rest, cand.documents, self.settings,
                                  label=label, split="val")
        self.result.passes.append(more)
        by_id = {t.task_id: t for t in [*cand.val.tasks, *more.tasks]}
        full = PassResult(cand.val.label, "val", cand.val.version,
                          [by_id[t.id] for t in self.split["val"]],
                          calls=cand.val.calls + more.calls,
                          prompt_tokens=cand.val.prompt_tokens + more.prompt_tokens,
                          completion_tokens=cand.val.completion_tokens + more.completion_tokens,
                          planned=len(self.split["val"]))
        self.trial_passes = [full if p is cand.val else p for p in self.trial_passes]
        stopped = cand.trial.stopped_after
        cand.val = full
        cand.trial.stopped_after = None
        cand.trial.deltas = gate.deltas(best_val, full)
        self._judge(cand.trial, best_val, full)
        cand.trial.reason += (f" (scoring had stopped after {stopped}/{len(self.split['val'])} "
                              f"tasks; {why})")

    def _finish_for_merge(self, candidates: list[_Candidate], best_val: PassResult) -> None:
        """Finish the bundles that stopped below a better passing one when the merge could
        need them: they may pass the gate, and the merge takes the edits of every passing
        bundle. It cannot need them when the best bundle alone fills the edit budget with
        distinct edits (the merge would be that bundle again), so then they stay stopped."""
        maybe = [c for c in candidates if c.trial.stopped_after is not None
                 and not self._cannot_pass(c, best_val)]
        passing = [c for c in candidates if c.trial.accepted]
        if not maybe or not passing:
            return
        leader = _leader(passing)
        keys = [e.key() for e in leader.trial.applied] if leader is not None else []
        if len(keys) == max(1, self.settings.edit_budget) and len(set(keys)) == len(keys):
            return
        for cand in maybe:
            self._complete(cand, best_val, why="finished: the merge takes the edits of "
                                                "every passing bundle")

    def _cannot_pass(self, cand: _Candidate, best_val: PassResult) -> bool:
        """Whether a stopped candidate provably fails the gate on the val it has."""
        done = {t.task_id for t in cand.val.tasks}
        rest = [t.id for t in self.split["val"] if t.id not in done]
        return gate.cannot_win(best_val, cand.val.tasks, rest, self.settings.gate)

    def _merge(self, rnd: _Round, passing: list[_Candidate]) -> _Candidate | None:
        """When several candidates pass, gate their edits together once.

        Different samples often fix different checks (one adds a heading, another a
        severity line); one round could otherwise keep only one of them. The union is
        capped at the edit budget, best candidates first, and competes like any other
        candidate: it wins only by scoring strictly higher, then its edits are pruned.
        """
        if len(passing) < 2:
            return None
        ranked = sorted(passing, key=lambda c: (-(c.trial.candidate or 0.0), c.size))
        edits: list[Edit] = []
        for cand in ranked:
            edits += [e for e in cand.trial.applied if e.key() not in {x.key() for x in edits}]
        edits = edits[: max(1, self.settings.edit_budget)]
        numbers = "+".join(str(c.trial.proposal + 1) for c in ranked)
        label = f"{rnd.target} round {rnd.number} proposals {numbers} merged"
        # it wins only by reaching the best candidate's mean (then it may be the smaller)
        return self._try(rnd, ranked[0].trial.proposal, edits, label,
                         bar=ranked[0].trial.candidate, near=ranked[0].val)

    def _prune(self, rnd: _Round, winner: _Candidate) -> _Candidate:
        """Leave each edit of a winning bundle out once; keep the bundle without it when
        val does not drop. A harmful edit cannot ride along with helpful ones, and an edit
        val cannot tell apart is left out (ties go to the smaller change)."""
        target = rnd.target
        # a delete of a person's rule last, so its leave-one-out is against the final bundle
        for edit in sorted(winner.trial.applied, key=lambda e: self._deletes_a_persons_rule(
                target, e)):
            if len(winner.trial.applied) <= 1:
                break
            rest = [e for e in winner.trial.applied if e is not edit]
            label = (f"{target} round {rnd.number} proposal {winner.trial.proposal + 1}, "
                     f"without: {edit.summary()[:60]}")
            cand = self._try(rnd, winner.trial.proposal, rest, label,
                             bar=winner.trial.candidate,  # kept only at the winner's mean
                             near=winner.val)
            if cand is None:
                continue
            rnd.candidates.append(cand)
            if not cand.trial.accepted or (cand.trial.candidate or 0.0) < (
                winner.trial.candidate or 0.0
            ):
                continue
            if (cand.trial.candidate or 0.0) > (winner.trial.candidate or 0.0):
                why = (f"harmful in its bundle: val {fmt_score(winner.trial.candidate)} with it, "
                       f"{fmt_score(cand.trial.candidate)} without it")
                self.rejected.append(edit)
                rnd.rejected.append(EditOutcome(edit, "rejected", why))
            winner = cand
        return winner

    def _deletes_a_persons_rule(self, target: str, edit: Edit) -> bool:
        """A delete whose anchor names a rule of the document as given (a person's rule,
        not one this epoch added; an anchor naming both counts as the person's)."""
        anchor = edit.anchor or edit.content
        given = docs.learned_rules(self.original.get(target) or "")
        return edit.op == "delete" and docs.anchor_names_a_rule(given, anchor)

    def _prove_deletes(self, rnd: _Round, winner: _Candidate, spare: int) -> _Candidate | None:
        """A delete of a person's rule never rides along in a bundle: the bundle keeps it
        only when the same bundle without it scores strictly lower on val (its own
        evidence; alone, it is gated like any edit). Otherwise it is left out, and the
        rest wins only if it passes the gate itself. Runs even at a perfect val score.
        A bundle already scored (by the pruning, mostly) costs no call; at most `spare`
        new val passes are made, and a delete that cannot get its evidence is left out."""
        target = rnd.target
        for edit in list(winner.trial.applied):
            if len(winner.trial.applied) <= 1 or not self._deletes_a_persons_rule(target, edit):
                continue
            rest = [e for e in winner.trial.applied if e is not edit]
            text = docs.apply_edits(self.current[target] or "", rest,
                                    max_lines=self.settings.block_max_lines,
                                    max_chars=self.settings.block_max_chars)[0]
            without = next((c for c in rnd.candidates if c.documents[target] == text), None)
            if without is None and spare > 0:
                spare -= 1
                label = (f"{target} round {rnd.number} proposal {winner.trial.proposal + 1}, "
                         f"without the delete: {edit.summary()[:60]}")
                without = self._try(rnd, winner.trial.proposal, rest, label,
                                    bar=winner.trial.candidate, near=winner.val)
                if without is not None:
                    rnd.candidates.append(without)
            if without is not None and without.trial.stopped_after is not None:
                continue  # it stopped below the gate or the bundle: lower without the delete
            with_score = winner.trial.candidate or 0.0
            without_score = None if without is None else without.trial.candidate or 0.0
            if without_score is not None and without_score < with_score:
                continue  # the delete earned its place
            why = (f"deletes a rule of the document as given without its own evidence: val "
                   f"{fmt_score(with_score)} with it, {fmt_score(without_score)} without it "
                   "(a person's rule is deleted only when val is strictly lower without the "
                   "delete)")
            self.rejected.append(edit)
            rnd.rejected.append(EditOutcome(edit, "rejected", why))
            winner.trial.accepted = False
            winner.trial.reason += ("; not taken: it deletes a rule of the document as given "
                                    "that val does not show is better gone")
            if without is None or not without.trial.accepted:
                return None
            winner = without
        return winner

    def _try(
        self,
        rnd: _Round,
        index: int,
        edits: list[Edit],
        label: str,
        bar: float | None = None,
        near: PassResult | None = None,
        screen: list[TaskResult] | None = None,
    ) -> _Candidate | None:
        """Apply edits to a copy of the document and gate it on val (None: nothing to try).

        `bar`: the val mean this candidate must reach to matter (the bundle it would
        replace, the candidate it must beat). Only a candidate of several edits stops
        below it: whether a lone edit passes the gate decides whether it is fed back to
        the optimizer as rejected, so a lone edit stops only when it cannot pass."""
        target, round_no, seen = rnd.target, rnd.number, rnd.seen
        if self.redact is not None:  # a secret must never be written into a document
            leaking = [e for e in edits
                       if self.redact(e.content) != e.content or self.redact(e.anchor) != e.anchor]
            rnd.unmatched.extend(
                EditOutcome(e, "unmatched", "content contains a secret; never written")
                for e in leaking)
            edits = [e for e in edits if e not in leaking]
        if not edits:
            return None
        document = self.current[target] or ""
        new_text, outcomes = docs.apply_edits(
            document, edits, max_lines=self.settings.block_max_lines,
            max_chars=self.settings.block_max_chars, where=target,
        )
        unmatched = [o for o in outcomes if o.status != "applied"]
        rnd.unmatched.extend(unmatched)
        applied = [o.edit for o in outcomes if o.status == "applied"]
        if not applied or new_text in seen:
            return None  # nothing changed, or the same document as another candidate
        seen.add(new_text)
        conflict = honesty.contradiction(docs.learned_rules(new_text),
                                         docs.learned_template(new_text))
        if conflict:  # refused before any scoring: a block that contradicts itself
            why = f"refused before scoring: {conflict}"
            rnd.unmatched.extend(EditOutcome(e, "unmatched", why) for e in applied)
            self.progress(f"{self.skill}: {label}: {why}")
            return None
        trial_docs = {**self.current, target: new_text}
        if screen and self._screened_out(rnd, index, label, applied, unmatched, trial_docs,
                                         screen):
            return None
        best_val = rnd.best_val  # thrifty: the val baseline is scored here, once
        val = self.score("val", trial_docs, label, against=best_val,
                         bar=bar if len(applied) > 1 else None, near=near)
        trial = GateTrial(
            target=target, round=round_no, proposal=index, baseline=None, candidate=None,
            accepted=False, reason="", applied=applied, unmatched=unmatched,
            deltas=gate.deltas(best_val, val), stopped_after=val.stopped_after,
        )
        if val.stopped_after is None:
            self._judge(trial, best_val, val)
        else:
            done = {t.task_id for t in val.tasks}
            rest = [t.id for t in self.split["val"] if t.id not in done]
            short = bar is None or gate.cannot_win(best_val, val.tasks, rest, self.settings.gate)
            trial.reason = (f"stopped after {val.stopped_after}/{val.planned} val tasks: "
                            + ("cannot beat the gate" if short else
                               f"cannot reach {bar:.3f}, the val mean it had to match"))
        rnd.trials.append(trial)
        self.trial_passes.append(val)
        self.progress(f"{self.skill}: {label}: {trial.reason}")
        size = abs(len(new_text) - len(document)) + sum(len(e.content) for e in applied)
        return _Candidate(trial, trial_docs, val, size)

    def _screened_out(self, rnd: _Round, index: int, label: str, applied: list[Edit],
                      unmatched: list[EditOutcome], trial_docs: dict[str, str | None],
                      screen: list[TaskResult]) -> bool:
        """`search: thrifty` (GEPA's minibatch): score the candidate on the train tasks in
        `screen` (under the current documents they are already scored) and keep it off val
        unless it beats them there. A screened-out lone edit is reported as rejected and
        fed back to the optimizer, like a lone edit that lost on val."""
        ids = {t.task_id for t in screen}
        tasks = [t for t in self.split["train"] if t.id in ids]
        after = self.score("train", trial_docs, f"{label}: screen on train", only=tasks)
        passed, why = gate.screen(screen, after, keep=screen[-1].task_id
                                  if screen[-1].hard == 1.0 else None)
        if passed:
            return False
        self.screened += 1
        reason = f"screened out on train, not scored on val: {why}"
        trial = GateTrial(target=rnd.target, round=rnd.number, proposal=index, baseline=None,
                          candidate=None, accepted=False, reason=reason, applied=applied,
                          unmatched=unmatched, screened=True)
        rnd.trials.append(trial)
        self.progress(f"{self.skill}: {label}: {reason}")
        if len(applied) == 1:
            self.rejected.append(applied[0])
            rnd.rejected.append(EditOutcome(applied[0], "rejected", reason))
        return True

    def _judge(self, trial: GateTrial, best_val: PassResult, val: PassResult) -> None:
        """Fill in the gate's verdict on a fully scored candidate."""
        accepted, why, before, after = gate.judge_trial(best_val, val, self.settings.gate,
                                                        self.val_groups)
        pairs = gate.paired(best_val, val)
        trial.baseline, trial.candidate, trial.accepted, trial.reason = before, after, accepted, why
        trial.interval = gate.bootstrap_interval([a - b for _, b, a in pairs])

    def _book_losers(self, rnd: _Round, winner: _Candidate | None) -> None:
        """Record why each losing candidate lost; feed back edits rejected on their own."""
        winner_keys = {e.key() for e in winner.trial.applied} if winner else set()
        known = {o.edit.key() for o in [*self.result.rejected, *rnd.rejected]}
        for cand in rnd.candidates:
            if cand is winner:
                continue
            trial = cand.trial
            if trial.accepted:
                trial.accepted = False
                trial.reason += "; another candidate scored higher or was smaller"
                continue  # good but not chosen: it may come back against the new best
            alone = len(trial.applied) == 1
            for edit in trial.applied:
                if edit.key() in winner_keys or edit.key() in known:
                    continue
                if alone:
                    self.rejected.append(edit)
                    known.add(edit.key())
                    rnd.rejected.append(EditOutcome(edit, "rejected", trial.reason))

    def _decide(self, base_train: PassResult, any_candidate: bool, veto: str = "") -> None:
        r = self.result
        val, test = r.val, r.test
        if r.applied and self.current != self.original and veto:
            self._undo(veto)
            r.decision, r.reason = "rejected", veto
        elif r.applied and self.current != self.original:
            r.decision = "accepted"
            if r.decided_by == "test":
                r.pr_eligible = (
                    test.baseline is not None
                    and test.candidate is not None
                    and gate.improves(test.baseline, test.candidate, self.settings.gate.min_delta)
                )
                held = f"held-out {fmt_score(test.baseline)} -> {fmt_score(test.candidate)}"
            else:
                r.pr_eligible = True
                held = "no held-out tasks, val decides"
            r.reason = (f"{len(r.applied)} edit(s) accepted: val {fmt_score(val.baseline)} -> "
                        f"{fmt_score(val.candidate)}, {held}"
                        + ("" if r.pr_eligible else "; held-out did not improve, so no PR"))
        elif any_candidate and self.base_val is None:  # thrifty: no candidate reached val
            r.decision = "rejected"
            r.reason = (f"every proposal was screened out on train ({self.screened} of them: "
                        "none beat the current documents on the train tasks it was meant to "
                        "fix); val was not scored (search: thrifty; see gate trials)")
        elif any_candidate:
            r.decision = "rejected"
            screened = (f", {self.screened} more screened out on train" if self.screened
                        else "")
            r.reason = (f"{len(r.trials) - self.screened} candidate(s) scored on val"
                        f"{screened}; none beat {fmt_score(val.baseline)} (see gate trials)")
        else:
            r.decision = "no_edits"
            failing = sum(1 for t in base_train.tasks if t.hard is not None and t.hard < 1.0)
            if not failing:
                r.reason = "every train task already passes: nothing to learn"
            else:
                errors = sum(1 for p in r.proposals if p.error)
                r.reason = (f"{failing} train task(s) fail, but {len(r.proposals)} proposal(s) "
                            f"gave no applicable edit ({len(r.unmatched)} edit(s) dropped or "
                            f"unmatched, {errors} proposal(s) failed; see diagnostics)")


def _asks_to_fill(edit: Edit) -> honesty.LearnedShape:
    """What one edit asks an answer to fill: its template, or its rule's typed slots."""
    if edit.op == "template":
        return honesty.LearnedShape(templates=(edit.content,))
    return honesty.LearnedShape(slots=tuple(honesty.rule_slots([edit.content])))


def integrity_note(result: PassResult) -> str:
    """`; 3 answer(s) failed integrity ...` for a progress line, '' when none did."""
    count = judges.integrity_failures(s for t in result.tasks for s in t.samples)
    if not count:
        return ""
    return (f"; {count} answer(s) failed integrity (a template placeholder or rule slot "
            "repeated, or a required section left empty)")


def call_ceiling(settings: EpochSettings, tasks: Sequence[Task], with_memory: bool) -> int:
    """The most model calls an epoch can make, before the cache saves any.

    baseline (train + val + test) + per target and round: each proposal's reflect call and
    its one retry, its val pass and the val pass of its bundle without the edits its answers
    copy (`_without_copied`), the merged candidate's val pass, the per-edit val passes of
    the ablation or the pruning (one or the other, at most `edit_budget`), a train
    re-score, and with `rollouts: K` the K - 1 sampled answers per locally judged train
    task; then the final test pass. Rubric tasks add one judge call per answer.
    `search: thrifty` adds each proposal's screen; its train passes score a sample of train
    and the rest only when the sample has no failure (at most train, as counted), and it
    scores val and held-out less often, never more (an upper bound for both searches).
    """
    per_split = {s: 0 for s in ("train", "val", "test")}
    for task in tasks:
        per_split[task.split] += 2 if task.judge.kind == "rubric" else 1
    r = max(1, settings.gate.repeats)
    train, val, test = (per_split[s] * r for s in ("train", "val", "test"))
    proposals = max(1, settings.proposals)
    sampled = rollouts.extra_calls(settings, [t for t in tasks if t.split == "train"])
    per_round = proposals * (2 + 2 * val) + (1 + settings.edit_budget) * val + train + sampled
    if settings.search == "thrifty":  # each proposal's screen on a few train tasks
        per_round += proposals * _screen_calls(settings, [t for t in tasks if t.split == "train"])
    targets = 2 if with_memory else 1
    return train + val + test + targets * settings.rounds * per_round + test


SCREEN_FIXES = 3  # train failures a thrifty screen scores a proposal on (plus one passing task)


def screening_tasks(shown: Sequence[TaskResult], passes: Sequence[TaskResult],
                    index: int) -> list[TaskResult]:
    """A proposal's screen: the first few failures it was shown (what it was meant to
    fix) and, last, one passing train task it must not break (a different one for each
    proposal, so a round covers several)."""
    chosen = list(shown[:SCREEN_FIXES])
    if passes:
        chosen.append(passes[index % len(passes)])
    return chosen


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


def _screen_calls(settings: EpochSettings, train: Sequence[Task]) -> int:
    """The most calls one thrifty screen makes: its costliest train tasks, x repeats."""
    costs = sorted((2 if t.judge.kind == "rubric" else 1 for t in train), reverse=True)
    return sum(costs[:SCREEN_FIXES + 1]) * max(1, settings.gate.repeats)


def budget_note(settings: EpochSettings, tasks: Sequence[Task],
                documents: Mapping[str, str | None], ceiling: int) -> str:
    """The night's cost in the user's units, said before the first call ('' with no cap).

    Money: every call of the ceiling at its token cap, prompts at about 4 characters a
    token (an estimate: a model's own tokenizer decides). Minutes cannot be known before a
    call is timed: the cap is stated, and each call is estimated at the longest of its kind
    so far."""
    parts: list[str] = []
    if settings.max_agent_minutes is not None:
        parts.append(f"agent minutes capped at {settings.max_agent_minutes:g} "
                     "(budget.max_agent_minutes; a call estimated at the longest of its kind "
                     "so far must fit)")
    if settings.max_cost is not None:
        document = sum(len(d or "") for d in documents.values())
        prompts = [document + len(t.prompt) + len(t.system or "") for t in tasks]
        answer_in = (sum(prompts) / len(prompts) if prompts else document) / 4
        out_cap = settings.max_answer_tokens or 0
        reflect_in = (document + sum(len(t.prompt) for t in tasks if t.split == "train")) / 4
        reflect_out = settings.max_reflect_tokens or 0

        targets = 2 if documents.get("memory") is not None else 1
        reflects = min(ceiling, 2 * max(1, settings.proposals) * settings.rounds * targets)
        prices = settings.prices
        most = ((ceiling - reflects) * usd(prices.get(settings.model), answer_in, out_cap)
                + reflects * usd(prices.get(settings.optimizer_model), reflect_in, reflect_out))
        uncapped = "" if out_cap and reflect_out else " (a token cap is off: not a bound)"
        parts.append(f"estimated cost at most ${most:.4f} for {ceiling} calls at their token "
                     f"caps{uncapped}; capped at ${settings.max_cost:g} (budget.max_cost)")
    return "; ".join(parts)


def _leader(candidates: Sequence[_Candidate]) -> _Candidate | None:
    """The highest-scoring candidate that passed the gate (the first such in order)."""
    return max((c for c in candidates if c.trial.accepted),
               key=lambda c: c.trial.candidate or 0.0, default=None)


def _reach(best: PassResult, val: PassResult) -> float:
    """The highest val mean a candidate whose pass stopped early could still have had."""
    done = {t.task_id for t in val.tasks}
    return gate.best_reachable(best, val.tasks,
                               [t.task_id for t in best.tasks if t.task_id not in done])


def _weakest_first(tasks: list[Task], near: PassResult) -> list[Task]:
    """`tasks` by their value in `near`, lowest first (a task it could not score first of
    all; ties keep the split's order): a fixed order, so the saving repeats."""
    values = near.by_id()

    def value(task: Task) -> float:
        known = values.get(task.id)
        return -1.0 if known is None or known.value is None else known.value

    return sorted(tasks, key=value)


def _runs(epoch: Callable[P, Epoch]) -> Callable[P, EpochResult]:
    """`run_epoch` takes exactly Epoch's arguments, spelled once (in `Epoch.__init__`)."""
    def run(*args: P.args, **kwargs: P.kwargs) -> EpochResult:
        return epoch(*args, **kwargs).run()
    return run


# Run one epoch; backend and budget failures come back as an `aborted` result. `redact` (the
# run's secret masker) refuses edits that would write a secret; `steps` (from the CLI) shows
# each pass's answers as they arrive.
run_epoch = _runs(Epoch)
