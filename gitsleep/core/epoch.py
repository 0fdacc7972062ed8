"""One consolidation epoch for one skill: the pure core, with no git and no network.

    baseline: score train, val and test under the current documents
    for each target (skill, then memory when configured), up to `rounds` rounds:
        reflect on train failures -> `proposals` candidate edit sets
        apply each to its own copy of the document, score it on val
        the best candidate that beats the gate wins (ties go to the smaller change);
        the others' edits are remembered as rejected and shown to the next round
    held-out: score test under the final documents (never shown to the optimizer,
    never used to choose an edit)

The rounds are the search (`gitsleep.core.search`); every pass goes through one `Scorer`
(`gitsleep.core.scoring`). Here: the baseline, the held-out split, the decision (`decide`
returns a `Verdict`) and the night's `EpochResult`, built once, in `Epoch._result`.

Run it from a REPL with two strings and a list of tasks:

    run_epoch(tasks, {"skill": text, "memory": None}, settings, OfflineBackend(), skill="x")
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ParamSpec

from gitsleep.base.errors import (
    EXIT_BACKEND,
    EXIT_BUDGET,
    BackendError,
    BudgetExhausted,
    UsageError,
)
from gitsleep.core import agents, diagnose, gate, groups, honesty, noise, rollouts, tools
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner, StepHook
from gitsleep.core.models import (
    SPLITS,
    AgentSummary,
    Decision,
    EditOutcome,
    EpochResult,
    EpochSettings,
    Noise,
    PassResult,
    ProgressLines,
    Split,
    SplitSummary,
    Task,
    usd,
)
from gitsleep.core.ports import Backend
from gitsleep.core.scores import fmt_score
from gitsleep.core.scoring import SCREEN_FIXES, TRAIN_MINIBATCH, Scorer, train_minibatch
from gitsleep.core.search import Search, SearchEnd, SearchRecord

__all__ = ["TRAIN_MINIBATCH", "Epoch", "Verdict", "budget_note", "call_ceiling", "decide",
           "noise_estimate", "run_epoch", "train_minibatch"]


@dataclass(frozen=True)
class Summaries:
    """Baseline vs final scores of the three splits (unscored: both sides None), and each
    agent's in a night of several."""

    train: SplitSummary
    val: SplitSummary
    test: SplitSummary
    agents: tuple[AgentSummary, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """What a night decided and why. `undo`: the applied edits go back (to rejected, with
    this reason) and the documents to the original (a held-out veto, an abort)."""

    decision: Decision
    reason: str
    pr_eligible: bool = False
    no_pr: str = ""  # accepted without a pull request: why, in a few words
    undo: str = ""
    abort_code: int = 0
    warnings: tuple[str, ...] = ()  # accepted: what the scores cannot show (honesty)
    diagnosis: tuple[dict[str, object], ...] = ()  # rejected, every candidate tied


def _quiet(_: str) -> None:
    pass


P = ParamSpec("P")


class Epoch:
    """One epoch while it runs; `run()` returns the EpochResult."""

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
        self.skill = skill
        self.backend = backend
        self.progress = progress or _quiet
        # several agents: one copy of each task per agent, so every pass scores each agent
        # (and the cache, the budget and the ceiling count every agent's answers)
        tasks = agents.expand(tasks, settings.agents)
        self.tasks = {t.id: t for t in tasks}
        self.split = {s: [t for t in tasks if t.split == s] for s in SPLITS}
        self.agent_ids = {s: agents.agent_ids(self.split[s]) for s in SPLITS}
        self.counts = {s: len(agents.unique_tasks(self.split[s])) for s in SPLITS}
        if not self.split["val"]:
            raise UsageError(f"skill {skill}: no task is in the val split; the gate needs val "
                             "tasks (label some tasks `split: val` or use `split: auto`)")
        # the judgment train asks for (from each task once, whoever answers it)
        keys = groups.varying_keys(agents.unique_tasks(self.split["train"]))
        self.groups = groups.named_groups(keys, [*self.split["val"], *self.split["test"]])
        self.other_wants = groups.other_wants(keys, [*self.split["val"], *self.split["test"]])
        self.original = dict(documents)
        self.runner = CallRunner.for_settings(backend, settings, cache=cache,
                                              on_start=lambda call: self.search.call_started(call))
        self.ceiling = call_ceiling(settings, tasks, documents.get("memory") is not None)
        self.scorer = Scorer(tasks, documents, settings, self.runner, skill=skill,
                             progress=self.progress, steps=steps)
        self.search = Search(self.scorer, self.runner, settings, self.tasks, skill=skill,
                             progress=self.progress, redact=redact,
                             val_groups=groups.named_groups(keys, self.split["val"]),
                             val_others=self.other_wants)
        self.noise: Noise | None = None  # measured when the search changed the documents

    def run(self) -> EpochResult:
        started = time.perf_counter()
        summaries = self._unscored()
        try:
            summaries, verdict = self._night()
        except BackendError as exc:
            verdict = Verdict("aborted", str(exc), undo="epoch aborted", abort_code=EXIT_BACKEND)
        except BudgetExhausted as exc:
            left = max(0, self.ceiling - self.runner.cost.calls)
            verdict = Verdict("aborted", f"{exc}; stopped before a decision; skipped: "
                              f"{self.scorer.step} and the rest of the epoch (at most {left} "
                              "more calls)", undo="epoch aborted", abort_code=EXIT_BUDGET)
        finally:
            self.runner.cost.seconds = round(time.perf_counter() - started, 3)
            self.runner.cost.latency = self.runner.latency()
            self.backend.close()
        return self._result(summaries, verdict)

    def _result(self, summaries: Summaries, verdict: Verdict) -> EpochResult:
        """The night's record, built once: the search's record, the scores, the verdict."""
        record = self.search.record
        applied, rejected, current = record.applied, record.rejected, self.search.current
        if verdict.undo:  # back to the original documents, and no PR opens
            rejected = [*rejected, *(EditOutcome(o.edit, "rejected", verdict.undo)
                                     for o in applied)]
            applied, current = [], self.original
        return EpochResult(
            skill=self.skill,
            decision=verdict.decision,
            reason=verdict.reason,
            metric=self.settings.gate.metric,
            backend=self.backend.name,
            agent_model=(", ".join(a.model for a in self.settings.agents)
                         or self.settings.model),
            optimizer_model=self.settings.optimizer_model,
            judge_model=self.settings.judge_model,
            train=summaries.train,
            val=summaries.val,
            test=summaries.test,
            documents={name: (self.original[name] or "", current[name] or "")
                       for name in ("skill", "memory") if self.original.get(name) is not None},
            applied=list(applied),
            rejected=list(rejected),
            unmatched=record.unmatched,
            passes=self.scorer.passes,
            proposals=record.proposals,
            trials=record.trials,
            errors=list(self.runner.errors),
            cost=self.runner.cost,
            pr_eligible=verdict.pr_eligible,
            no_pr="" if verdict.pr_eligible else verdict.no_pr,
            decided_by="test" if self.split["test"] else "val",
            abort_code=verdict.abort_code,
            diagnosis=list(verdict.diagnosis),
            warnings=list(verdict.warnings),
            groups=self.groups,
            other_wants=self.other_wants,
            agents=list(summaries.agents),
            agent_gate=self.settings.gate.agents,
            noise=self.noise,
        )

    def _unscored(self) -> Summaries:
        train, val, test = (SplitSummary(None, None, self.counts[s]) for s in SPLITS)
        return Summaries(train, val, test)

    def _night(self) -> tuple[Summaries, Verdict]:
        """Baseline, search, held-out, decision."""
        thrifty = self.settings.search == "thrifty"
        base_train = self.scorer.score_train(self.original, "baseline")
        if not thrifty:  # thrifty scores val once a candidate passed its screen and needs it
            self.scorer.val_baseline()
        # thrifty scores held-out only once something is accepted: no PR can open otherwise
        base_test = (self.scorer.score("test", self.original, "baseline")
                     if self.split["test"] and not thrifty else None)
        end = self.search.run(base_train)
        self.noise = self._noise()
        kept = (self.noise is None or not self.noise.noisy
                or (self.noise.val is not None and self.noise.val.beyond))
        base_test, final_test = self._held_out(base_test, kept=kept)
        if self.noise is not None and base_test is not None and final_test is not None:
            self._held_out_noise(self.noise, base_test, final_test)
        for final in (end.train if end.train_current else None, end.best_val, final_test):
            if final is not None and final.label != "baseline":
                final.final = True
        summaries = self._summaries(base_train, end, base_test, final_test)
        veto = held_fall = held_wrong = ""
        if base_test is not None and final_test is not None and final_test is not base_test:
            veto = gate.held_out_integrity(base_test, final_test)
            held_fall = gate.agent_fell(gate.paired(base_test, final_test),
                                        self.agent_ids["test"])
            held_wrong = gate.held_out_wrong_values(base_test, final_test, self.groups,
                                                    self.other_wants)
        verdict = decide(self.search.record, summaries, base_train, self.settings,
                         held_out=bool(self.split["test"]),
                         changed=self.search.current != self.original, veto=veto,
                         any_candidate=end.any_candidate,
                         val_scored=self.scorer.base_val is not None,
                         screened=self.search.trials.screened, held_fall=held_fall,
                         held_wrong=held_wrong, noise=self.noise)
        return summaries, self._explained(verdict)

    def _score(self, split: Split, documents: Mapping[str, str | None],
               label: str) -> PassResult:
        return self.scorer.score(split, documents, label)

    def _noise(self) -> Noise | None:
        """On a night whose search changed the documents (the only night it decides
        anything for): how far val moves under a placebo and, when it moves, the night's val
        gain seen afresh."""
        base_val = self.scorer.base_val
        if base_val is None or self.search.current == self.original:
            return None
        measured, placebo_val = noise.measure(self._score, self.original, base_val)
        self.progress(f"{self.skill}: noise: {measured.summary()}")
        if not measured.noisy:
            return measured
        if noise.too_small(measured.tasks):
            measured.note = noise.small_split_line("val", measured.tasks)
            return measured
        measured.val = noise.confirm_val(self._score, measured, self.original,
                                         self.search.current, placebo_val,
                                         self.settings.gate.min_delta)
        self.progress(f"{self.skill}: the night's gain seen afresh: {measured.val.line()}")
        return measured

    def _held_out_noise(self, measured: Noise, base_test: PassResult,
                        final_test: PassResult) -> None:
        """The held-out sign test for the pull request, on a noisy night that kept its
        documents (held-out too small for any gain to show: said, and no test)."""
        if not measured.noisy or final_test is base_test:
            return
        if noise.too_small(len(base_test.tasks)):
            measured.note = noise.small_split_line("held-out", len(base_test.tasks))
            return
        measured.test = noise.confirm_test(self._score, measured, self.original,
                                           self.search.current, base_test, final_test,
                                           self.settings.gate.min_delta)
        self.progress(f"{self.skill}: held-out against noise: {measured.test.line()}")

    def _held_out(self, base_test: PassResult | None, kept: bool = True,
                  ) -> tuple[PassResult | None, PassResult | None]:
        """The held-out baseline (thrifty: only now, and only when something was accepted)
        and the held-out pass of the final documents (none when the night's gain was not
        beyond noise: its edits go back)."""
        changed = self.search.current != self.original and kept
        if self.settings.search == "thrifty" and self.split["test"]:
            if changed:
                base_test = self.scorer.score("test", self.original, "baseline")
            else:
                self.progress(f"{self.skill}: held-out not scored: nothing was accepted "
                              "(search: thrifty)")
        final_test = base_test
        if base_test is not None and changed:
            final_test = self.scorer.score("test", self.search.current, "final")
        return base_test, final_test

    def _summaries(self, base_train: PassResult, end: SearchEnd, base_test: PassResult | None,
                   final_test: PassResult | None) -> Summaries:
        """Baseline vs final per split (several agents: the `gate.agents` aggregate, and
        each agent's own); a split the night did not score stays unscored."""
        base_val = self.scorer.base_val
        if base_val is None or end.best_val is None:
            why = ("every proposal was screened out on train" if self.search.trials.screened
                   else "no candidate to gate")
            self.progress(f"{self.skill}: val not scored: {why} (search: thrifty)")
        train_now = end.train
        same_tasks = [t.task_id for t in train_now.tasks] == [t.task_id for t in base_train.tasks]
        passes = {"train": (base_train, train_now if end.train_current and same_tasks else None),
                  "val": (base_val, end.best_val), "test": (base_test, final_test)}
        whole = self._summary(passes, None)
        per_agent = tuple(
            AgentSummary(ref.name, ref.model, ref.backend, *self._summary(passes, ref.name)[:3])
            for ref in self.settings.agents)
        return Summaries(*whole[:3], agents=per_agent)

    def _summary(self, passes: Mapping[str, tuple[PassResult | None, PassResult | None]],
                 agent: str | None) -> tuple[SplitSummary, SplitSummary, SplitSummary]:
        """(train, val, test) of every answer (`agent` None: the aggregate) or one agent's.
        Train's baseline stands alone when the final train pass scored other tasks
        (thrifty: another sample) or none."""
        out = []
        for split in SPLITS:
            before, after = passes[split]
            ids = self.agent_ids[split]
            if agent is not None:
                mine = ids.get(agent, [])
                ids = {agent: mine}
                before = None if before is None else agents.only_agent(before, mine)
                after = None if after is None else agents.only_agent(after, mine)
            n = len(ids[agent]) if agent is not None else self.counts[split]
            if before is not None and after is not None:
                out.append(gate.summarise(before, after, n, ids, self.settings.gate.agents))
            elif split == "train" and before is not None:
                alone = gate.summarise(before, before, n, ids, self.settings.gate.agents)
                out.append(SplitSummary(alone.baseline, None, n))
            else:
                out.append(SplitSummary(None, None, n))
        return out[0], out[1], out[2]

    def _explained(self, verdict: Verdict) -> Verdict:
        """An accepted night's over-reach warnings; a rejected night whose every candidate
        tied, why, per failing val check."""
        record, base_val = self.search.record, self.scorer.base_val
        if verdict.decision == "accepted":
            learned = [line for o in record.applied if o.edit.op in ("add", "replace")
                       for line in o.edit.content.split("\n") if line.strip()]
            warnings = honesty.over_reach(learned, agents.unique_tasks(list(self.tasks.values())))
            return dataclasses.replace(verdict, warnings=tuple(warnings))
        if (verdict.decision == "rejected" and base_val is not None
                and diagnose.all_tied(record.trials)):
            diagnosis = diagnose.per_check(base_val, self.search.trials.passes)
            reason = verdict.reason
            if diagnosis:
                reason += f"; every candidate tied, per check: {diagnose.summary(diagnosis)}"
            return dataclasses.replace(verdict, reason=reason, diagnosis=tuple(diagnosis))
        return verdict


def decide(record: SearchRecord, summaries: Summaries, base_train: PassResult,
           settings: EpochSettings, *, held_out: bool, changed: bool, veto: str,
           any_candidate: bool, val_scored: bool, screened: int, held_fall: str = "",
           held_wrong: str = "", noise: Noise | None = None) -> Verdict:
    """What the night decided, from what the search tried and the scores. `held_out`:
    test tasks decide the PR (else val does); `changed`: the accepted edits changed the
    documents; `veto`: the held-out integrity check refused them; `val_scored`: the val
    baseline was scored (thrifty may never score it); `held_fall`: several agents, one
    fell beyond noise on held-out (the gate's rule on val, applied to the PR);
    `held_wrong`: the final held-out answers carry another group's value more often (the
    gate's wrong-value rule on val, applied to the PR); `noise`: how far val moved under a
    placebo, and when it moved, the sign tests of the gain."""
    val, test = summaries.val, summaries.test
    if record.applied and changed:
        shaky = _not_beyond_noise(val, noise)
        if shaky:
            return Verdict("rejected", shaky, undo=shaky)
    if record.applied and changed and veto:
        return Verdict("rejected", veto, undo=veto)
    if record.applied and changed:
        noisy = noise is not None and noise.noisy
        if held_out:
            pr_eligible = (test.baseline is not None and test.candidate is not None
                           and gate.improves(test.baseline, test.candidate,
                                             settings.gate.min_delta)
                           and not held_fall and not held_wrong)
            held = f"held-out {fmt_score(test.baseline)} -> {fmt_score(test.candidate)}"
            if noisy and noise is not None:  # held-out improves only beyond the noise
                pr_eligible = pr_eligible and noise.test is not None and noise.test.beyond
                held += (f" ({noise.test.line()})" if noise.test is not None
                         else f" ({noise.note})" if noise.note else "")
            if held_fall:
                held += f" (held-out: {held_fall})"
            if held_wrong:
                held += f" ({held_wrong})"
        else:
            pr_eligible = not noisy or noise is None or noise.val is not None
            held = "no held-out tasks, val decides"
        why_not = ("val did not improve beyond noise" if not held_out
                   else "an agent fell beyond noise on held-out" if held_fall
                   else "held-out answers carry another group's value" if held_wrong
                   else "held-out did not improve beyond noise" if noisy
                   else "held-out did not improve")
        reason = (f"{len(record.applied)} edit(s) accepted: val {fmt_score(val.baseline)} -> "
                  f"{fmt_score(val.candidate)}, {held}"
                  + ("" if pr_eligible else f"; {why_not}, so no PR"))
        return Verdict("accepted", reason, pr_eligible=pr_eligible,
                       no_pr="" if pr_eligible else why_not)
    if any_candidate and not val_scored:  # thrifty: no candidate reached val
        return Verdict("rejected", f"every proposal was screened out on train ({screened} of "
                       "them: none beat the current documents on the train tasks it was meant "
                       "to fix); val was not scored (search: thrifty; see gate trials)")
    if any_candidate:
        more = f", {screened} more screened out on train" if screened else ""
        scored = f"{len(record.trials) - screened} candidate(s) scored on val{more}"
        rose = max((t for t in record.trials if t.candidate is not None
                    and t.baseline is not None and t.candidate > t.baseline),
                   key=lambda t: t.candidate or 0.0, default=None)
        if rose is not None and rose.refusal:  # refused by a rule beyond the mean
            return Verdict("rejected", f"{scored}; none was accepted: the best rose val "
                           f"{fmt_score(rose.baseline)} -> {fmt_score(rose.candidate)}, but "
                           f"{rose.refusal} (see gate trials)")
        if (rose is not None and rose.baseline is not None and rose.candidate is not None
                and not gate.improves(rose.baseline, rose.candidate, settings.gate.min_delta)):
            # it rose, yet not by more than the margin the gate asks for
            return Verdict("rejected", f"{scored}; none was accepted: the best rose val "
                           f"{fmt_score(rose.baseline)} -> {fmt_score(rose.candidate)}, but "
                           f"its gain {rose.candidate - rose.baseline:+.3f} is not more than "
                           f"gate.min_delta {settings.gate.min_delta:.3f} (see gate trials)")
        return Verdict("rejected", f"{scored}; none beat {fmt_score(val.baseline)} "
                       "(see gate trials)")
    failing = sum(1 for t in base_train.tasks if t.hard is not None and t.hard < 1.0)
    if not failing:
        return Verdict("no_edits", "every train task already passes: nothing to learn")
    errors = sum(1 for p in record.proposals if p.error)
    return Verdict("no_edits", f"{failing} train task(s) fail, but {len(record.proposals)} "
                   f"proposal(s) gave no applicable edit ({len(record.unmatched)} edit(s) "
                   f"dropped or unmatched, {errors} proposal(s) failed; see diagnostics)")


def _not_beyond_noise(val: SplitSummary, measured: Noise | None) -> str:
    """Why a night that changed the documents keeps none of it: val moved under a
    placebo and the gain, seen afresh, is not beyond that noise, or val is too small for
    any gain to be; '' when it is beyond (or the night shows no noise)."""
    if measured is None or not measured.noisy:
        return ""
    rose = f"val {fmt_score(val.baseline)} -> {fmt_score(val.candidate)}"
    if measured.val is None and measured.note.startswith("val "):
        return f"{rose}, but {measured.summary()}; {measured.note}"
    if measured.val is not None and not measured.val.beyond:
        return (f"{rose}, but {measured.summary()}; seen afresh under two re-wordings, "
                f"{measured.val.line()}: the edits are not kept")
    return ""


def call_ceiling(settings: EpochSettings, tasks: Sequence[Task], with_memory: bool) -> int:
    """The most model calls an epoch can make, before the cache saves any.

    baseline (train + val + test) + per target and round: each proposal's reflect call and
    its one retry, its val pass and the val pass of its bundle without the edits its answers
    copy (`_without_copied`), the merged candidate's val pass, the per-edit val passes of
    the ablation or the pruning (one or the other, at most `edit_budget`), a train
    re-score, and with `rollouts: K` the K - 1 sampled answers per locally judged train
    task; then the final test pass. The noise (`gitsleep.core.noise`): a placebo val pass,
    and on a night that moved under it and changed the documents three more val passes
    (the gain seen afresh) and two held-out ones (the PR's test): `noise_calls`. Rubric
    tasks add one judge call per answer; an answer through the tool loop may take every
    turn it allows. Train tasks whose checks want different values of one line add, per
    reflect call, one condition-judge call per edit (`reflect.judge_conditions`).
    `search: thrifty` adds each proposal's screen; its train passes score a sample of train
    and the rest only when the sample has no failure (at most train, as counted), and it
    scores val and held-out less often, never more (an upper bound for both searches).
    """
    if not any(t.agent for t in tasks):  # several agents: every agent answers every task
        tasks = agents.expand(tasks, settings.agents)
    train, val, test = _pass_calls(settings, tasks)
    proposals = max(1, settings.proposals)
    sampled = rollouts.extra_calls(settings, [t for t in tasks if t.split == "train"])
    per_round = proposals * (2 + 2 * val) + (1 + settings.edit_budget) * val + train + sampled
    if groups.varying_keys(agents.unique_tasks([t for t in tasks if t.split == "train"])):
        # a rule that gives a value under a condition: one condition-judge call per rule
        per_round += proposals * 2 * max(1, settings.edit_budget)
    if settings.search == "thrifty":  # each proposal's screen on a few train tasks
        per_round += proposals * _screen_calls(settings, [t for t in tasks if t.split == "train"])
    targets = 2 if with_memory else 1
    return (train + val + test + targets * settings.rounds * per_round + test
            + noise_calls(val, test))


def _pass_calls(settings: EpochSettings, tasks: Sequence[Task]) -> tuple[int, int, int]:
    """The calls of one pass over train, val and test (repeats and rubric judges counted)."""
    per_split = {s: 0 for s in SPLITS}
    for task in tasks:  # an answer through the tool loop may take every turn it allows
        per_split[task.split] += ((tools.ANSWER_TURNS if task.tools else 1)
                                  + (1 if task.judge.kind == "rubric" else 0))
    r = max(1, settings.gate.repeats)
    return per_split["train"] * r, per_split["val"] * r, per_split["test"] * r


def noise_estimate(settings: EpochSettings, tasks: Sequence[Task]) -> str:
    """What the noise adds to a night, said before the first call: the most calls it
    makes, and a split too small for any gain to be told from noise (by its size alone)."""
    if not any(t.agent for t in tasks):
        tasks = agents.expand(tasks, settings.agents)
    _, val, test = _pass_calls(settings, tasks)
    sizes: dict[str, int] = {s: len(agents.unique_tasks([t for t in tasks if t.split == s]))
                             for s in ("val", "test")}
    said = [f"up to {noise_calls(val, test)} of those calls measure the noise (val under a "
            "placebo; when val moves under it and the documents changed, the gain seen afresh "
            "and held-out's sign test)"]
    tiny = noise.too_small_note({"val": sizes["val"], "held-out": sizes["test"]})
    return "; ".join([*said, *([tiny] if tiny else [])])


def noise_calls(val: int, test: int) -> int:
    """The most calls measuring and judging the noise adds, from one val pass's and one
    held-out pass's calls: the placebo on val; when val moves under it and the documents
    changed, the original re-worded once more and the final documents re-worded twice (val),
    and the original and the final re-worded once each (held-out)."""
    return 4 * val + 2 * test


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
        train = [t for t in agents.unique_tasks(tasks) if t.split == "train"]  # each once
        reflect_in = (document + sum(len(t.prompt) for t in train)) / 4
        reflect_out = settings.max_reflect_tokens or 0

        targets = 2 if documents.get("memory") is not None else 1
        reflects = min(ceiling, 2 * max(1, settings.proposals) * settings.rounds * targets)
        prices = settings.prices
        answer_usd = max(usd(prices.get(m), answer_in, out_cap)  # the costliest agent's
                         for m in [settings.model, *(a.model for a in settings.agents)])
        most = ((ceiling - reflects) * answer_usd
                + reflects * usd(prices.get(settings.optimizer_model), reflect_in, reflect_out))
        uncapped = "" if out_cap and reflect_out else " (a token cap is off: not a bound)"
        parts.append(f"estimated cost at most ${most:.4f} for {ceiling} calls at their token "
                     f"caps{uncapped}; capped at ${settings.max_cost:g} (budget.max_cost)")
    return "; ".join(parts)


def _runs(epoch: Callable[P, Epoch]) -> Callable[P, EpochResult]:
    """`run_epoch` takes exactly Epoch's arguments, spelled once (in `Epoch.__init__`)."""
    def run(*args: P.args, **kwargs: P.kwargs) -> EpochResult:
        return epoch(*args, **kwargs).run()
    return run


# Run one epoch; backend and budget failures come back as an `aborted` result. `redact` (the
# run's secret masker) refuses edits that would write a secret; `steps` (from the CLI) shows
# each pass's answers as they arrive.
run_epoch = _runs(Epoch)
