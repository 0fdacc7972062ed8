"""The gate: does a candidate beat the current best on val?

Means are compared over the tasks scored in both passes (a task whose calls all failed
drops out of the comparison rather than counting as zero); a candidate must be strictly
better. A paired bootstrap interval of the per-task difference is reported for the reader.
Whether the night's gain is beyond noise, and whether an agent fell beyond it, is the sign
test of `gitsleep.core.noise`, the one meaning of "beyond noise".
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from gitsleep.core import groups, judges, noise
from gitsleep.core.groups import group_means
from gitsleep.core.models import (
    Check,
    GateSettings,
    PassResult,
    SplitSummary,
    TaskDelta,
    TaskResult,
)
from gitsleep.core.scores import fmt_score

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20260
MAX_TASK_VALUE = 1.0  # the most any metric gives one task (hard, soft and mixed are in [0, 1])
# Early stopping stops only when the best reachable gain is below zero by more than float
# rounding could ever move a mean: at an exact tie the scoring goes on, as it did before.
STOP_MARGIN = 1e-9


def improves(before: float, after: float, min_delta: float) -> bool:
    """The gate's one rule: `after` beats `before` by more than `min_delta` (a tie never
    does). The gate, the pruning, the held-out PR rule and the benchmark all ask here."""
    return after > before + min_delta


def paired(before: PassResult, after: PassResult) -> list[tuple[str, float, float]]:
    """(task id, before, after) for tasks scored in both passes, in task order."""
    b = before.by_id()
    out = []
    for task in after.tasks:
        prior = b.get(task.task_id)
        if prior is not None and prior.value is not None and task.value is not None:
            out.append((task.task_id, prior.value, task.value))
    return out


def deltas(before: PassResult, after: PassResult) -> list[TaskDelta]:
    b = before.by_id()
    return [
        TaskDelta(t.task_id, b[t.task_id].value if t.task_id in b else None, t.value)
        for t in after.tasks
    ]


def bootstrap_interval(diffs: list[float]) -> tuple[float, float] | None:
    """95% percentile interval of the mean per-task difference (fixed seed: repeatable)."""
    if not diffs:
        return None
    if len(diffs) == 1:
        return (diffs[0], diffs[0])
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(diffs)
    # Large splits need fewer resamples for the same precision: bound the work at ~2M draws.
    samples = max(200, min(BOOTSTRAP_SAMPLES, 2_000_000 // n))
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(samples))
    return (means[int(0.025 * samples)], means[int(0.975 * samples) - 1])


def unscored_agents(pairs: Sequence[tuple[str, float, float]],
                    agents: Mapping[str, Sequence[str]] | None) -> list[str]:
    """The agents with no task scored under both documents: no aggregate (mean or min)
    stands for them, so none is made without a score from every agent."""
    return [name for name, two in per_agent(pairs, agents or {}) if not two]


def summarise(baseline: PassResult, final: PassResult, n: int,
              agents: Mapping[str, Sequence[str]] | None = None,
              how: str = "mean") -> SplitSummary:
    """Baseline vs final mean of a split. Several agents (`agents`: name -> its task
    ids) with `how: min`: each side is its weakest agent's mean, and no interval (the
    weakest agent may not be the same on both sides). With an agent that has no score
    under both documents there is no aggregate: both sides are None."""
    if agents and unscored_agents(paired(baseline, final), agents):
        return SplitSummary(baseline=None, candidate=None, n=n)
    if agents and how == "min":
        return SplitSummary(baseline=_weakest(baseline, agents), candidate=_weakest(final, agents),
                            n=n)
    pairs = paired(baseline, final)
    interval = bootstrap_interval([a - b for _, b, a in pairs])
    return SplitSummary(
        baseline=baseline.mean,
        candidate=final.mean,
        n=n,
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
    )


def _weakest(result: PassResult, agents: Mapping[str, Sequence[str]]) -> float | None:
    """The lowest of the agents' means in one pass (None when an agent has no score)."""
    values = result.by_id()
    means = []
    for ids in agents.values():
        scored = [v for i in ids if (t := values.get(i)) is not None and (v := t.value) is not None]
        if not scored:
            return None
        means.append(sum(scored) / len(scored))
    return min(means) if means else None


def per_agent(pairs: Sequence[tuple[str, float, float]], agents: Mapping[str, Sequence[str]],
              ) -> list[tuple[str, list[tuple[float, float]]]]:
    """(agent, its (before, after) pairs) in the agents' order, over the paired tasks."""
    by_id = {tid: (b, a) for tid, b, a in pairs}
    return [(name, [by_id[i] for i in ids if i in by_id]) for name, ids in agents.items()]


def aggregate(pairs: Sequence[tuple[str, float, float]],
              agents: Mapping[str, Sequence[str]] | None, how: str) -> tuple[float, float]:
    """(before, after): the means the gate compares. One agent, or several with `mean`:
    the mean over every paired answer (each agent answers the same tasks, so the mean of
    the agents' means); `min`: the lowest agent's paired means, each side."""
    if agents and how == "min":
        sides = [(sum(b for b, _ in two) / len(two), sum(a for _, a in two) / len(two))
                 for _, two in per_agent(pairs, agents) if two]
        return min(b for b, _ in sides), min(a for _, a in sides)
    return (sum(b for _, b, _ in pairs) / len(pairs), sum(a for _, _, a in pairs) / len(pairs))


def agent_fell(pairs: Sequence[tuple[str, float, float]],
               agents: Mapping[str, Sequence[str]] | None) -> str:
    """Why several agents' scores do not all allow the change: an agent whose paired
    change fell beyond noise (`noise.fell`: the sign test on its tasks) and whoever rose
    meanwhile is named beside it; '' when no agent fell beyond noise."""
    fell, rose = [], []
    for name, two in per_agent(pairs, agents or {}):
        if not two:
            continue
        before, after = sum(b for b, _ in two) / len(two), sum(a for _, a in two) / len(two)
        shown = f"{name} {before:.3f} -> {after:.3f}"
        diffs = [a - b for b, a in two]
        if noise.fell(diffs):
            down = sum(1 for d in diffs if d < 0)
            fell.append(f"{shown} on {len(two)} task(s) ({down} fell, "
                        f"{sum(1 for d in diffs if d > 0)} rose: sign test p="
                        f"{noise.sign_p([-d for d in diffs]):.3g} <= {noise.ALPHA:g}, "
                        "beyond noise)")
        elif after > before:
            rose.append(shown)
    if not fell:
        return ""
    helped = f" while it helps {', '.join(rose)}" if rose else ""
    return (f"it hurts agent {'; agent '.join(fell)}{helped}: a change that lifts one agent by "
            "breaking another is not an improvement")


class TrialVerdict(NamedTuple):
    """The gate on one candidate: accepted or not, why (for people), the two means, and,
    when its mean beat the gate but a rule beyond the mean refused it, that rule's words
    (`refusal`: the epoch's reason names it without reading `reason` back)."""

    accepted: bool
    reason: str
    before: float | None
    after: float | None
    refusal: str = ""


def judge_trial(
    best: PassResult, candidate: PassResult, gate: GateSettings,
    named_groups: dict[str, list[str]] | None = None,
    agents: Mapping[str, Sequence[str]] | None = None,
    others: Mapping[str, tuple[tuple[Check, ...], ...]] | None = None,
) -> tuple[bool, str, float | None, float | None]:
    """(accepted, reason, best mean, candidate mean): `trial_verdict` without its refusal."""
    accepted, reason, before, after, _ = trial_verdict(best, candidate, gate, named_groups,
                                                       agents, others)
    return accepted, reason, before, after


def trial_verdict(
    best: PassResult, candidate: PassResult, gate: GateSettings,
    named_groups: dict[str, list[str]] | None = None,
    agents: Mapping[str, Sequence[str]] | None = None,
    others: Mapping[str, tuple[tuple[Check, ...], ...]] | None = None,
) -> TrialVerdict:
    """The verdict on the tasks both passes scored (see `TrialVerdict`).

    `named_groups` (group -> val task ids, from `groups.named_groups`): the val tasks whose
    checks want different values of one line, per value. A candidate whose mean rises
    while one group's falls lifted one group by breaking another: refused.
    `agents` (agent -> its val task ids; several agents): the means compared are
    the `gate.agents` aggregate, and an agent that falls beyond noise refuses the
    candidate (`agent_fell`). `others` (val task id -> what the other groups of its keys
    want, from `groups.other_wants`): a candidate whose answers carry another group's
    value more often than the best's in some group is refused (`added_wrong_values`)."""
    pairs = paired(best, candidate)
    if not pairs:
        return TrialVerdict(False, "no val task was scored under both documents", None, None)
    silent = unscored_agents(pairs, agents)
    if silent:
        return TrialVerdict(False, f"agent {', agent '.join(silent)} has no val task scored "
                            "under both documents: no aggregate and no acceptance without a "
                            "score from every agent", None, None)
    before, after = aggregate(pairs, agents, gate.agents)
    shown = f"val {before:.3f} -> {after:.3f} on {len(pairs)} task(s)"
    if agents:
        shown = (f"val {before:.3f} -> {after:.3f} ({gate.agents} of {len(agents)} "
                 f"agent{'' if len(agents) == 1 else 's'}) on {len(pairs)} answer(s)")
    if not improves(before, after, gate.min_delta):
        if after == before:
            why = "a tie is not an improvement"
        elif after < before:
            why = "worse than the current best"
        else:
            why = f"gain {after - before:+.3f} is not more than min_delta {gate.min_delta:.3f}"
        return TrialVerdict(False, f"{shown}: {why}", before, after)
    if gate.no_regression:
        dropped = [(tid, b, a) for tid, b, a in pairs if a < b]
        if dropped:
            tid, b, a = dropped[0]
            return _refused(shown, f"no_regression: task {tid} fell {b:.3f} -> {a:.3f}"
                            + (f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""),
                            before, after)
    fell_agent = agent_fell(pairs, agents)
    if fell_agent:
        return _refused(shown, fell_agent, before, after)
    values = {tid: (b, a) for tid, b, a in pairs}
    fell = [g for g in group_means(named_groups or {}, values) if g[3] < g[2]]
    if fell:
        name, n, b, a = fell[0]
        return _refused(shown, f"the val tasks that want {name} fell {b:.3f} -> {a:.3f} "
                        f"on {n} task(s): a candidate that lifts one group by breaking another "
                        "is not an improvement", before, after)
    wrong = added_wrong_values(best, candidate, named_groups or {}, others or {})
    if wrong:
        return _refused(shown, wrong, before, after)
    hollow = _more_hollow(best, candidate, pairs)
    if hollow:
        return _refused(shown, f"{hollow} val answers repeat a placeholder of the learned "
                        "template or rule, or leave a part it requires empty (integrity): a "
                        "block the agent copies is not one to merge", before, after)
    return TrialVerdict(True, f"{shown}: improves by {after - before:+.3f}", before, after)


def _refused(shown: str, refusal: str, before: float, after: float) -> TrialVerdict:
    """A mean that beat the gate, refused by `refusal` (a rule beyond the mean)."""
    return TrialVerdict(False, f"{shown}, but {refusal}", before, after, refusal)


def wrong_values(result: PassResult, named: Mapping[str, list[str]],
                 others: Mapping[str, tuple[tuple[Check, ...], ...]]) -> dict[str, int]:
    """Per group, the answers of its tasks in `result` that carry another group's value."""
    answers = {t.task_id: [s.answer for s in t.samples if s.answer is not None]
               for t in result.tasks}
    return groups.wrong_counts(dict(named), dict(others), answers)


def added_wrong_values(best: PassResult, candidate: PassResult, named: Mapping[str, list[str]],
                       others: Mapping[str, tuple[tuple[Check, ...], ...]],
                       split: str = "val") -> str:
    """Why the candidate adds wrong values (in the first group whose count rises, over the
    tasks both passes scored), or ''. Behaviour, not wording: a pin however phrased shows
    here, in the answers of the tasks it does not fit. `split` names the tasks counted."""
    if not others:
        return ""
    both = {t.task_id for t in best.tasks} & {t.task_id for t in candidate.tasks}
    scored = {name: [i for i in ids if i in both] for name, ids in named.items()}
    before, after = wrong_values(best, scored, others), wrong_values(candidate, scored, others)
    for name, count in after.items():
        if count > before.get(name, 0):
            return (f"the {split} tasks that want {name}: {count} of their answers carry "
                    f"another group's value ({before.get(name, 0)} before): an answer that "
                    "carries another group's value is wrong, whatever its own checks look for")
    return ""


def held_out_wrong_values(baseline: PassResult, final: PassResult,
                          named: Mapping[str, list[str]],
                          others: Mapping[str, tuple[tuple[Check, ...], ...]]) -> str:
    """Why the final documents' held-out answers may not claim an improvement: they carry
    another group's value more often than the baseline's in some group (counted as the val
    gate counts them), or ''. The val gate saw only val's answers; a pin can still show
    only on tasks it never saw. It can only take a pull request away, never choose an edit."""
    return added_wrong_values(baseline, final, named, others, split="held-out")


def held_out_integrity(baseline: PassResult, final: PassResult) -> str:
    """Why the final documents must not ship although val accepted them: their held-out
    answers fail integrity (repeat a placeholder of the learned template or a slot of a
    learned rule, or leave a part the template requires empty) more often than the
    baseline's on the same tasks; '' when they do not.

    The val gate already refuses a template its val answers copy; a small agent can still
    copy it only on tasks val does not have, and such a block is not one a reviewer merges
   . This is a veto on one kind of failure, not a second selection on held-out:
    it can only turn an accepted night into a rejected one."""
    hollow = more_hollow(baseline, final)
    if not hollow:
        return ""
    return (f"val accepted the edits, but {hollow} held-out answers repeat a "
            "placeholder of the learned template or rule, or leave a part it requires empty "
            f"(integrity; held-out {fmt_score(baseline.mean)} -> {fmt_score(final.mean)}): the "
            "agent copies the template on tasks the gate never saw, so the edits are not kept")


def more_hollow(before: PassResult, after: PassResult) -> str:
    """'k of n' when `after`'s answers fail integrity more often than `before`'s on the
    tasks both scored, '' when they do not."""
    return _more_hollow(before, after, paired(before, after))


def _ids(pairs: list[tuple[str, float, float]]) -> set[str]:
    return {tid for tid, _, _ in pairs}


def _more_hollow(before: PassResult, after: PassResult,
                 pairs: list[tuple[str, float, float]]) -> str:
    """'k of n' when `after`'s answers on the paired tasks fail integrity more often than
    `before`'s (k of its n answers there), '' when they do not."""
    hollow = _hollow_answers(after, pairs)
    if hollow <= _hollow_answers(before, pairs):
        return ""
    answers = sum(len(t.samples) for t in after.tasks if t.task_id in _ids(pairs))
    return f"{hollow} of {answers}"


def _hollow_answers(result: PassResult, pairs: list[tuple[str, float, float]]) -> int:
    """Answers on the compared tasks that failed integrity: a candidate with more
    of them than the current best is refused, however much the other answers rose, because
    an agent that copies the template would copy it on held-out tasks and in use too."""
    ids = _ids(pairs)
    return judges.integrity_failures(s for t in result.tasks if t.task_id in ids
                                     for s in t.samples)


def cannot_win(
    best: PassResult, scored: Iterable[TaskResult], remaining: Sequence[str],
    gate: GateSettings,
) -> bool:
    """True when no scores of the `remaining` val tasks could make `judge_trial` accept.

    Over the tasks finally paired, the gate accepts when the sum of (candidate - best -
    min_delta) is above zero. A finished task adds its term (or drops out when either
    side failed); a remaining task adds at most `MAX_TASK_VALUE - best - min_delta`, or
    nothing when that is negative (its calls may fail and drop it out). When even that
    best case is below zero the candidate has provably lost. With `no_regression`, one
    finished task below the best's decides it too. Tasks are taken as they come: the
    caller passes only tasks whose every call is finished."""
    prior = best.by_id()
    gain = 0.0
    for task in scored:
        before = prior.get(task.task_id)
        if before is None or before.value is None or task.value is None:
            continue
        if gate.no_regression and task.value < before.value:
            return True
        gain += task.value - before.value - gate.min_delta
    for task_id in remaining:
        before = prior.get(task_id)
        if before is not None and before.value is not None:
            gain += max(0.0, MAX_TASK_VALUE - before.value - gate.min_delta)
    return gain < -STOP_MARGIN


def best_reachable(
    best: PassResult, scored: Iterable[TaskResult], remaining: Sequence[str]
) -> float:
    """The highest candidate mean `judge_trial` could still report (over the tasks paired
    with `best`): every remaining task at the top score; 0.0 when nothing can pair."""
    prior = best.by_id()
    values = [t.value for t in scored if t.value is not None
              and (before := prior.get(t.task_id)) is not None and before.value is not None]
    open_ = sum(1 for task_id in remaining
                if (before := prior.get(task_id)) is not None and before.value is not None)
    count = len(values) + open_
    return (sum(v for v in values if v is not None) + open_ * MAX_TASK_VALUE) / count \
        if count else 0.0


def screen(before: Sequence[TaskResult], after: PassResult,
           keep: str | None = None) -> tuple[bool, str]:
    """`search: thrifty`'s screen (GEPA's minibatch): does a candidate beat the current
    documents on the few train tasks it was scored on? Strictly higher mean over the tasks
    scored under both, and the task `keep` (one that passed) no lower. Nothing paired
    (failed calls) passes: an error is never a score, so val decides."""
    prior = {t.task_id: t.value for t in before}
    pairs = [(t.task_id, prior[t.task_id], t.value) for t in after.tasks
             if prior.get(t.task_id) is not None and t.value is not None]
    if not pairs:
        return True, "no train task scored under both documents"
    old = sum(b for _, b, _ in pairs if b is not None) / len(pairs)
    new = sum(a for _, _, a in pairs if a is not None) / len(pairs)
    shown = f"train {old:.3f} -> {new:.3f} on {len(pairs)} task(s) it was meant to fix"
    broken = [(tid, b, a) for tid, b, a in pairs if tid == keep and b is not None
              and a is not None and a < b]
    if broken:
        tid, b, a = broken[0]
        return False, f"{shown}, but it breaks {tid} ({b:.3f} -> {a:.3f})"
    if not improves(old, new, 0.0):
        return False, f"{shown}: no better"
    return True, f"{shown}: better"
