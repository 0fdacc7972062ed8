"""The gate: does a candidate beat the current best on val, by more than noise allows?

Means are compared over the tasks scored in both passes (a task whose calls all failed
drops out of the comparison rather than counting as zero). A paired bootstrap interval
of the per-task difference is reported so a reader sees whether a gain is noise.
"""

from __future__ import annotations

import random

from gitsleep.models import GateSettings, PassResult, SplitSummary, TaskDelta

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 20260


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


def summarise(baseline: PassResult, final: PassResult, n: int) -> SplitSummary:
    pairs = paired(baseline, final)
    interval = bootstrap_interval([a - b for _, b, a in pairs])
    return SplitSummary(
        baseline=baseline.mean,
        candidate=final.mean,
        n=n,
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
    )


def judge_trial(
    best: PassResult, candidate: PassResult, gate: GateSettings
) -> tuple[bool, str, float | None, float | None]:
    """(accepted, reason, best mean, candidate mean) on the tasks both passes scored."""
    pairs = paired(best, candidate)
    if not pairs:
        return False, "no val task was scored under both documents", None, None
    before = sum(b for _, b, _ in pairs) / len(pairs)
    after = sum(a for _, _, a in pairs) / len(pairs)
    shown = f"val {before:.3f} -> {after:.3f} on {len(pairs)} task(s)"
    if after <= before + gate.min_delta:
        if after == before:
            why = "a tie is not an improvement"
        elif after < before:
            why = "worse than the current best"
        else:
            why = f"gain {after - before:+.3f} is not more than min_delta {gate.min_delta:.3f}"
        return False, f"{shown}: {why}", before, after
    if gate.no_regression:
        dropped = [(tid, b, a) for tid, b, a in pairs if a < b]
        if dropped:
            tid, b, a = dropped[0]
            return (
                False,
                f"{shown}, but no_regression: task {tid} fell {b:.3f} -> {a:.3f}"
                + (f" (and {len(dropped) - 1} more)" if len(dropped) > 1 else ""),
                before,
                after,
            )
    return True, f"{shown}: improves by {after - before:+.3f}", before, after
