"""The search of one epoch: per target (skill, then memory), up to `rounds` rounds of
propose -> apply -> screen (`search: thrifty`) -> gate -> merge -> prune -> prove deletes.

`Search.run` returns where the search ended (`SearchEnd`) and keeps what it tried in
`Search.record` (proposals, trials, applied, rejected and unmatched edits); the epoch
(`gitsleep.core.epoch`) scores the held-out split, decides, and builds the night's result
from both. `Trials` makes and judges one candidate at a time; `Round` is one round.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from gitsleep.base.errors import BackendError
from gitsleep.core import agents, gate, honesty, judges, reflect, rollouts
from gitsleep.core import documents as docs
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import (
    Check,
    Edit,
    EditOutcome,
    EpochSettings,
    GateTrial,
    PassResult,
    Proposal,
    Task,
    TaskResult,
)
from gitsleep.core.ports import ModelCall
from gitsleep.core.scores import fmt_score
from gitsleep.core.scoring import SCREEN_FIXES, Scorer


@dataclass
class Candidate:
    trial: GateTrial
    documents: dict[str, str | None]
    val: PassResult
    size: int  # characters changed, for tie-breaks


@dataclass
class Round:
    """One round of the search on one document, and what it found: the documents it
    starts from, the val pass candidates must beat, the documents already tried (each is
    scored once), the candidates scored, and the round's proposals, trials and refused
    edits. `Search._round` fills it with its winner; `Search.run` records it in one place."""

    target: str
    number: int
    documents: dict[str, str | None]  # the current documents when the round starts
    scored_best: PassResult | None  # the val pass to beat; None: the baseline, not scored yet
    score_best: Callable[[], PassResult]  # scores it (`search: thrifty`'s lazy val baseline)
    seen: set[str] = field(default_factory=set)
    candidates: list[Candidate] = field(default_factory=list)
    proposals: list[Proposal] = field(default_factory=list)
    trials: list[GateTrial] = field(default_factory=list)
    rejected: list[EditOutcome] = field(default_factory=list)  # lost on val or screened out
    unmatched: list[EditOutcome] = field(default_factory=list)  # never scored, with why
    winner: Candidate | None = None

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


@dataclass
class SearchRecord:
    """What the search tried, in order: it becomes part of the night's result."""

    proposals: list[Proposal] = field(default_factory=list)
    trials: list[GateTrial] = field(default_factory=list)
    applied: list[EditOutcome] = field(default_factory=list)
    rejected: list[EditOutcome] = field(default_factory=list)
    unmatched: list[EditOutcome] = field(default_factory=list)

    def add(self, rnd: Round) -> None:
        """A round's proposals, trials and refused edits."""
        self.proposals.extend(rnd.proposals)
        self.unmatched.extend(rnd.unmatched)
        self.trials.extend(rnd.trials)
        self.rejected.extend(rnd.rejected)


@dataclass(frozen=True)
class SearchEnd:
    """Where the search ended: the last train pass (and whether it was scored under the
    final documents), the val pass of the final documents (None: val was never scored),
    and whether any candidate was tried."""

    train: PassResult
    train_current: bool
    best_val: PassResult | None
    any_candidate: bool


class Trials:
    """Makes one candidate from edits and judges it: the secret and contradiction
    refusals, the thrifty screen, the val pass and the gate's verdict. Keeps the edits
    fed back to the optimizer as rejected and every candidate's val pass."""

    def __init__(self, scorer: Scorer, settings: EpochSettings, *, skill: str,
                 progress: Callable[[str], None], redact: Callable[[str], str] | None,
                 val_groups: dict[str, list[str]],
                 val_others: Mapping[str, tuple[tuple[Check, ...], ...]] | None = None) -> None:
        self.scorer = scorer
        self.settings = settings
        self.skill = skill
        self.progress = progress
        self.redact = redact
        self.val_groups = val_groups
        self.val_others = val_others or {}  # val task -> what the other groups want
        self.val_agents = agents.agent_ids(scorer.split["val"])  # several agents: theirs
        self.rejected: list[Edit] = []  # fed back to the optimizer as rejected
        self.screened = 0  # proposals `search: thrifty` kept off val
        self.passes: list[PassResult] = []  # each candidate's val pass, in trial order

    def attempt(
        self,
        rnd: Round,
        index: int,
        edits: list[Edit],
        label: str,
        bar: float | None = None,
        near: PassResult | None = None,
        screen: list[TaskResult] | None = None,
    ) -> Candidate | None:
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
        document = rnd.documents[target] or ""
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
        trial_docs = {**rnd.documents, target: new_text}
        if screen and self._screened_out(rnd, index, label, applied, unmatched, trial_docs,
                                         screen):
            return None
        best_val = rnd.best_val  # thrifty: the val baseline is scored here, once
        val = self.scorer.score("val", trial_docs, label, against=best_val,
                                bar=bar if len(applied) > 1 else None, near=near)
        trial = GateTrial(
            target=target, round=round_no, proposal=index, baseline=None, candidate=None,
            accepted=False, reason="", applied=applied, unmatched=unmatched,
            deltas=gate.deltas(best_val, val), stopped_after=val.stopped_after,
        )
        if val.stopped_after is None:
            self.judge(trial, best_val, val)
        else:
            rest = self._unscored(val)
            short = bar is None or gate.cannot_win(best_val, val.tasks, rest, self.settings.gate)
            trial.reason = (f"stopped after {val.stopped_after}/{val.planned} val tasks: "
                            + ("cannot beat the gate" if short else
                               f"cannot reach {bar:.3f}, the val mean it had to match"))
        rnd.trials.append(trial)
        self.passes.append(val)
        self.progress(f"{self.skill}: {label}: {trial.reason}")
        size = abs(len(new_text) - len(document)) + sum(len(e.content) for e in applied)
        return Candidate(trial, trial_docs, val, size)

    def _screened_out(self, rnd: Round, index: int, label: str, applied: list[Edit],
                      unmatched: list[EditOutcome], trial_docs: dict[str, str | None],
                      screen: list[TaskResult]) -> bool:
        """`search: thrifty` (GEPA's minibatch): score the candidate on the train tasks in
        `screen` (under the current documents they are already scored) and keep it off val
        unless it beats them there. A screened-out lone edit is reported as rejected and
        fed back to the optimizer, like a lone edit that lost on val."""
        ids = {t.task_id for t in screen}
        tasks = [t for t in self.scorer.split["train"] if t.id in ids]
        after = self.scorer.score("train", trial_docs, f"{label}: screen on train", only=tasks)
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

    def judge(self, trial: GateTrial, best_val: PassResult, val: PassResult) -> None:
        """Fill in the gate's verdict on a fully scored candidate."""
        verdict = gate.trial_verdict(best_val, val, self.settings.gate, self.val_groups,
                                     self.val_agents, others=self.val_others)
        pairs = gate.paired(best_val, val)
        trial.baseline, trial.candidate = verdict.before, verdict.after
        trial.accepted, trial.reason, trial.refusal = (verdict.accepted, verdict.reason,
                                                       verdict.refusal)
        trial.interval = gate.bootstrap_interval([a - b for _, b, a in pairs])

    def _unscored(self, val: PassResult) -> list[str]:
        """The ids of the val tasks a stopped pass skipped, in the split's order."""
        done = {t.task_id for t in val.tasks}
        return [t.id for t in self.scorer.split["val"] if t.id not in done]

    def best_loser(self, candidates: list[Candidate], best_val: PassResult) -> Candidate:
        """The highest-scoring candidate, ties to the smaller (the first such in order).

        A candidate whose scoring stopped early has no val mean; it is scored in full
        only when the best mean it could still reach is not below the best known one,
        so the choice is the one a full scoring of every candidate would make."""
        def key(c: Candidate) -> tuple[float, int]:
            return (c.trial.candidate or 0.0, -c.size)

        stopped = sorted((c for c in candidates if c.trial.stopped_after is not None),
                         key=lambda c: -_reach(best_val, c.val))
        known = [c for c in candidates if c.trial.stopped_after is None]
        for cand in stopped:
            best = max(known, key=key, default=None)
            if best is not None and _reach(best_val, cand.val) < key(best)[0] - gate.STOP_MARGIN:
                break  # neither this one nor any after it can be the highest
            self.complete(cand, best_val)
            known.append(cand)
        return max((c for c in candidates if c in known), key=key)

    def complete(self, cand: Candidate, best_val: PassResult,
                 why: str = "finished to choose the bundle whose edits are gated alone",
                 ) -> None:
        """Score the val tasks a stopped candidate skipped and judge it in full."""
        full = self.scorer.rest_of_val(cand.val, cand.documents)
        self.passes = [full if p is cand.val else p for p in self.passes]
        stopped = cand.trial.stopped_after
        cand.val = full
        cand.trial.stopped_after = None
        cand.trial.deltas = gate.deltas(best_val, full)
        self.judge(cand.trial, best_val, full)
        cand.trial.reason += (f" (scoring had stopped after {stopped}/"
                              f"{len(self.scorer.split['val'])} tasks; {why})")

    def finish_for_merge(self, candidates: list[Candidate], best_val: PassResult) -> None:
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
            self.complete(cand, best_val, why="finished: the merge takes the edits of "
                                              "every passing bundle")

    def _cannot_pass(self, cand: Candidate, best_val: PassResult) -> bool:
        """Whether a stopped candidate provably fails the gate on the val it has."""
        return gate.cannot_win(best_val, cand.val.tasks, self._unscored(cand.val),
                               self.settings.gate)


class Search:
    """The rounds of one epoch, per target; `run` returns where they ended."""

    def __init__(self, scorer: Scorer, runner: CallRunner, settings: EpochSettings,
                 tasks: dict[str, Task], *, skill: str, progress: Callable[[str], None],
                 redact: Callable[[str], str] | None, val_groups: dict[str, list[str]],
                 val_others: Mapping[str, tuple[tuple[Check, ...], ...]] | None = None,
                 ) -> None:
        self.scorer = scorer
        self.runner = runner
        self.settings = settings
        self.tasks = tasks
        self.skill = skill
        self.progress = progress
        self.redact = redact
        self.original = dict(scorer.original)
        self.current = dict(scorer.original)  # the documents as the accepted edits left them
        self.trials = Trials(scorer, settings, skill=skill, progress=progress, redact=redact,
                             val_groups=val_groups, val_others=val_others)
        self.record = SearchRecord()
        self._asking = threading.local()  # what each thread's optimizer call is for

    def call_started(self, call: ModelCall) -> None:
        """Say when an optimizer call goes out: it is the slow one, and it costs most."""
        if call.purpose == "propose":
            asking = getattr(self._asking, "text", "")
            self.progress(f"{self.skill}: optimizer call started ({call.model}): {asking}")

    def run(self, base_train: PassResult) -> SearchEnd:
        """Every target's rounds, from the baseline train pass (and the val baseline, when
        it is scored already); a round's winner becomes the current documents."""
        thrifty = self.settings.search == "thrifty"
        best_val, train_now = self.scorer.base_val, base_train
        train_current = True  # train_now was scored under the current documents
        targets = ["skill"] + (["memory"] if self.original.get("memory") is not None else [])
        any_candidate = False
        for target in targets:
            for round_no in range(1, self.settings.rounds + 1):
                failures = [t for t in train_now.tasks if t.hard is not None and t.hard < 1.0]
                if not failures:
                    break
                passes = [t for t in train_now.tasks if t.hard == 1.0]
                contrasts = self.scorer.contrasts_of(train_now, self.current)
                rnd = Round(target, round_no, dict(self.current), best_val,
                            self.scorer.val_baseline)
                try:
                    self._round(rnd, failures, passes, contrasts)
                finally:  # an aborted round's trials are part of the record too
                    self.record.add(rnd)
                winner = rnd.winner
                any_candidate = any_candidate or rnd.tried
                best_val = rnd.scored_best  # the val baseline, if this round scored it
                if winner is None:
                    if not rnd.tried:
                        break  # the optimizer has nothing new for this target
                    continue
                self.current = winner.documents
                best_val = winner.val
                self.record.applied.extend(EditOutcome(e, "applied") for e in winner.trial.applied)
                if thrifty and target == targets[-1] and round_no == self.settings.rounds:
                    # nothing reflects on it after the last round (SkillOpt-Sleep's schedule)
                    train_current = False
                    self.progress(f"{self.skill}: train not re-scored after the last round "
                                  "(search: thrifty)")
                    continue
                train_now = self.scorer.score_train(self.current,
                                                    f"after {target} round {round_no}")
        return SearchEnd(train_now, train_current, best_val, any_candidate)

    def _round(self, rnd: Round, failures: list[TaskResult], passes: list[TaskResult],
               contrasts: list[rollouts.Contrast]) -> None:
        """Propose, apply and gate `proposals` candidates; `rnd.winner` is the winner, if any.

        When no candidate passes and the best one bundled several edits, each of its
        edits is gated alone: a helpful edit must not be lost to a harmful companion.
        """
        candidates = rnd.candidates
        self._gate_proposals(rnd, failures, passes, contrasts)
        for cand in list(candidates):
            rescued = self._without_copied(rnd, cand, candidates)
            if rescued is not None:
                candidates.append(rescued)
        if (not any(c.trial.accepted for c in candidates)
                and any(len(c.trial.applied) > 1 for c in candidates)):
            self._split_best_loser(rnd)
        if candidates:  # (none: every proposal screened out, and thrifty scored no val)
            self.trials.finish_for_merge(candidates, rnd.best_val)
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

    def _gate_proposals(self, rnd: Round, failures: list[TaskResult],
                        passes: list[TaskResult], contrasts: list[rollouts.Contrast]) -> None:
        """The round's proposals, each applied and gated as one candidate (screened on train
        first under `search: thrifty`); an error when every optimizer call failed."""
        target, round_no = rnd.target, rnd.number
        document = rnd.documents[target] or ""
        count = max(1, self.settings.proposals)
        for index, proposal in enumerate(self._propose(target, round_no, document, failures,
                                                       passes, contrasts, count)):
            rnd.proposals.append(proposal)
            rnd.unmatched.extend(proposal.dropped)
            label = f"{target} round {round_no} proposal {index + 1}"
            # a later bundle must reach the best passing one so far to matter (item 2)
            leader = _leader(rnd.candidates)
            screen = None
            if self.settings.search == "thrifty":
                shown, passing = self._cheapest_agent(
                    reflect.slice_failures(failures, index, count), passes)
                screen = screening_tasks(shown, passing, index)
            cand = self.trials.attempt(rnd, index, proposal.edits, label,
                                       bar=None if leader is None else leader.trial.candidate,
                                       near=None if leader is None else leader.val,
                                       screen=screen)
            if cand is not None:
                rnd.candidates.append(cand)
        failed_calls = [p for p in rnd.proposals if p.raw is None and p.error]
        if len(failed_calls) == len(rnd.proposals):
            # every optimizer call failed: a silent "no edits" night would hide it
            raise BackendError(f"the optimizer model failed on all {count} call(s) of {target} "
                               f"round {round_no}; first error: {failed_calls[0].error}")

    def _cheapest_agent(self, failures: list[TaskResult], passes: list[TaskResult],
                        ) -> tuple[list[TaskResult], list[TaskResult]]:
        """Several agents: the failures and passes of the cheapest agent that failed any
        (a thrifty screen answers with it alone; val gates every agent); one agent: all."""
        for name in agents.cheapest_first(self.settings):
            mine = [t for t in failures if self.tasks[t.task_id].agent == name]
            if mine:
                return mine, [t for t in passes if self.tasks[t.task_id].agent == name]
        return failures, passes

    def _split_best_loser(self, rnd: Round) -> None:
        """No candidate passed: each edit of the best bundle is gated alone."""
        bundle = self.trials.best_loser(rnd.candidates, rnd.best_val)
        if len(bundle.trial.applied) <= 1:
            return
        for i, edit in enumerate(bundle.trial.applied):
            label = (f"{rnd.target} round {rnd.number} proposal {bundle.trial.proposal + 1}, "
                     f"edit {i + 1} alone")
            cand = self.trials.attempt(rnd, bundle.trial.proposal, [edit], label)
            if cand is not None:
                rnd.candidates.append(cand)

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
                                        self.trials.rejected, contrasts)
            return reflect.propose(self.runner, self.settings, evidence, round_no=round_no,
                                   index=index, redact=self.redact)

        self.scorer.step = f"the {target} round {round_no} proposals"
        workers = min(max(1, self.settings.workers), count)
        if workers == 1:
            return [one(index) for index in range(count)]
        self.progress(f"{self.skill}: {count} proposals for {target} round {round_no} "
                      f"started, {workers} at a time")
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(one, index) for index in range(count)]
            return [future.result() for future in futures]

    def _without_copied(self, rnd: Round, cand: Candidate,
                        candidates: list[Candidate]) -> Candidate | None:
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
        return self.trials.attempt(rnd, cand.trial.proposal, rest, label,
                                   bar=None if leader is None else leader.trial.candidate,
                                   near=None if leader is None else leader.val)

    def _merge(self, rnd: Round, passing: list[Candidate]) -> Candidate | None:
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
        return self.trials.attempt(rnd, ranked[0].trial.proposal, edits, label,
                                   bar=ranked[0].trial.candidate, near=ranked[0].val)

    def _prune(self, rnd: Round, winner: Candidate) -> Candidate:
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
            cand = self.trials.attempt(rnd, winner.trial.proposal, rest, label,
                                       bar=winner.trial.candidate,  # kept at the winner's mean
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
                self.trials.rejected.append(edit)
                rnd.rejected.append(EditOutcome(edit, "rejected", why))
            winner = cand
        return winner

    def _deletes_a_persons_rule(self, target: str, edit: Edit) -> bool:
        """A delete whose anchor names a rule of the document as given (a person's rule,
        not one this epoch added; an anchor naming both counts as the person's)."""
        anchor = edit.anchor or edit.content
        given = docs.learned_rules(self.original.get(target) or "")
        return edit.op == "delete" and docs.anchor_names_a_rule(given, anchor)

    def _prove_deletes(self, rnd: Round, winner: Candidate, spare: int) -> Candidate | None:
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
            text = docs.apply_edits(rnd.documents[target] or "", rest,
                                    max_lines=self.settings.block_max_lines,
                                    max_chars=self.settings.block_max_chars)[0]
            without = next((c for c in rnd.candidates if c.documents[target] == text), None)
            if without is None and spare > 0:
                spare -= 1
                label = (f"{target} round {rnd.number} proposal {winner.trial.proposal + 1}, "
                         f"without the delete: {edit.summary()[:60]}")
                without = self.trials.attempt(rnd, winner.trial.proposal, rest, label,
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
            self.trials.rejected.append(edit)
            rnd.rejected.append(EditOutcome(edit, "rejected", why))
            winner.trial.accepted = False
            winner.trial.reason += ("; not taken: it deletes a rule of the document as given "
                                    "that val does not show is better gone")
            if without is None or not without.trial.accepted:
                return None
            winner = without
        return winner

    def _book_losers(self, rnd: Round, winner: Candidate | None) -> None:
        """Record why each losing candidate lost; feed back edits rejected on their own."""
        winner_keys = {e.key() for e in winner.trial.applied} if winner else set()
        known = {o.edit.key() for o in [*self.record.rejected, *rnd.rejected]}
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
                    self.trials.rejected.append(edit)
                    known.add(edit.key())
                    rnd.rejected.append(EditOutcome(edit, "rejected", trial.reason))


def screening_tasks(shown: Sequence[TaskResult], passes: Sequence[TaskResult],
                    index: int) -> list[TaskResult]:
    """A proposal's screen: the first few failures it was shown (what it was meant to
    fix) and, last, one passing train task it must not break (a different one for each
    proposal, so a round covers several)."""
    chosen = list(shown[:SCREEN_FIXES])
    if passes:
        chosen.append(passes[index % len(passes)])
    return chosen


def _asks_to_fill(edit: Edit) -> honesty.LearnedShape:
    """What one edit asks an answer to fill: its template, or its rule's typed slots."""
    if edit.op == "template":
        return honesty.LearnedShape(templates=(edit.content,))
    return honesty.LearnedShape(slots=tuple(honesty.rule_slots([edit.content])))


def _leader(candidates: Sequence[Candidate]) -> Candidate | None:
    """The highest-scoring candidate that passed the gate (the first such in order)."""
    return max((c for c in candidates if c.trial.accepted),
               key=lambda c: c.trial.candidate or 0.0, default=None)


def _reach(best: PassResult, val: PassResult) -> float:
    """The highest val mean a candidate whose pass stopped early could still have had."""
    done = {t.task_id for t in val.tasks}
    return gate.best_reachable(best, val.tasks,
                               [t.task_id for t in best.tasks if t.task_id not in done])
