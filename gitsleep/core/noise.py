"""Telling a gain from noise: the placebo that measures it and the one test that judges it.

A sampled agent's answers move when its prompt moves, even when nothing that matters
changed; a temperature-0 agent moves with the wording too. So a night scores val once more
under a *placebo*: the original documents with one content-free sentence in the learned
block. Tasks whose score moves between the baseline and the placebo are the night's noise.

"Beyond noise" has one meaning everywhere (the night's gain on val and on held-out, an
agent's fall in a night of several, review's verdict): the one-sided exact sign test on the
per-task differences,

    p = sum_{i=k}^{m} C(m, i) / 2^m

where m is the number of tasks whose score differs and k the number that moved the way
claimed; beyond noise when the mean moved that way by more than `min_delta` and p <= ALPHA.
Where the night shows no noise (the placebo's answers score exactly as the baseline's on
every task: a deterministic agent, the offline simulator) a gain is what it always was,
strictly better. With n tasks the smallest p the test can give is 2^-n (every task moved
the claimed way), so a split of fewer than `min_tasks()` tasks can never show a gain beyond
noise, whatever the documents say.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from gitsleep.core import documents as docs
from gitsleep.core.models import Edit, Noise, NoiseTest, PassResult, Split

ALPHA = 0.1  # the sign test's threshold: p at or below it is beyond noise
# Content-free sentences, one per re-worded copy: they ask for nothing, so an agent that
# moves under them shows how far its scores move when nothing that matters changes.
PLACEBOS = ("This line asks for nothing; it changes no answer.",
            "Nothing in this line changes how a task is answered.")


def placebo(documents: Mapping[str, str | None], wording: int = 0) -> dict[str, str | None]:
    """The documents with the content-free sentence `PLACEBOS[wording]` added to the skill
    document's learned block (appended to the document when the block cannot take it).
    Only ever scored, never written."""
    text = documents.get("skill") or ""
    sentence = PLACEBOS[wording % len(PLACEBOS)]
    changed, outcomes = docs.apply_edits(text, [Edit("add", sentence)],
                                         max_lines=10_000, max_chars=1_000_000)
    if not outcomes or outcomes[0].status != "applied":
        changed = text.rstrip("\n") + f"\n\n{sentence}\n"
    return {**documents, "skill": changed}


def sign_p(diffs: Sequence[float]) -> float:
    """One-sided exact sign test: the chance, were every differing task's direction a fair
    coin, that at least as many of them rose as did (ties drop out; none differing: 1)."""
    up = sum(1 for d in diffs if d > 0)
    moved = up + sum(1 for d in diffs if d < 0)
    if not moved:
        return 1.0
    return sum(math.comb(moved, i) for i in range(up, moved + 1)) / (1 << moved)


def best_p(n: int) -> float:
    """The smallest p the sign test can give on n tasks: 2^-n (1 with none)."""
    return float(0.5 ** max(0, n))


def min_tasks() -> int:
    """The fewest tasks on which a gain can be beyond noise: best_p(n) <= ALPHA."""
    return math.ceil(math.log2(1 / ALPHA))


def too_small(n: int) -> bool:
    return best_p(n) > ALPHA


def small_split_line(split: str, n: int) -> str:
    """One line saying a split is too small for any gain to be told from noise ('' when
    it is not), by its size alone."""
    if not too_small(n):
        return ""
    return (f"{split} has {n} task(s): the best the sign test can give is 2^-{n} = "
            f"{best_p(n):.3g}, above {ALPHA:g}, so with a noisy agent no gain on {split} can be "
            f"told from noise (at least {min_tasks()} tasks are needed; a deterministic agent "
            "keeps its gains)")


def too_small_note(sizes: Mapping[str, int]) -> str:
    """One sentence naming the splits (name -> tasks) too small for any gain to be told
    from noise, by their size alone; '' when none is."""
    small = [f"{name} ({n} task{'' if n == 1 else 's'})" for name, n in sizes.items()
             if n and too_small(n)]
    if not small:
        return ""
    return (f"{' and '.join(small)} too small for any gain to be told from noise: with n tasks "
            f"the sign test's best p is 2^-n, above {ALPHA:g} below {min_tasks()} tasks (a "
            "noisy agent's gain there is never kept; a deterministic agent's is)")


def judge(split: str, diffs: Sequence[float], min_delta: float, noisy: bool,
          observations: int = 1) -> NoiseTest:
    """Whether the per-task `diffs` (after - before) are a gain beyond noise. `noisy`:
    the night measured noise; without it a gain is strictly better, as before."""
    n = len(diffs)
    gain = sum(diffs) / n if n else 0.0
    p = sign_p(diffs)
    rose = n > 0 and gain > min_delta
    return NoiseTest(split=split, n=n, up=sum(1 for d in diffs if d > 0),
                     down=sum(1 for d in diffs if d < 0), gain=gain, p=p, alpha=ALPHA,
                     noisy=noisy, observations=observations,
                     beyond=rose and (not noisy or p <= ALPHA))


def fell(diffs: Sequence[float]) -> bool:
    """The fall side of the same test: the mean fell and the sign test on the reversed
    differences gives p <= ALPHA (with every task falling, at least `min_tasks()`)."""
    return bool(diffs) and sum(diffs) < 0 and sign_p([-d for d in diffs]) <= ALPHA


Score = Callable[[Split, Mapping[str, str | None], str], PassResult]  # split, documents, label


def task_means(passes: Sequence[PassResult]) -> dict[str, float]:
    """Each task's value averaged over `passes`, for the tasks every pass scored."""
    values: dict[str, list[float]] = {}
    for result in passes:
        for task in result.tasks:
            if task.value is not None:
                values.setdefault(task.task_id, []).append(task.value)
    return {tid: sum(v) / len(v) for tid, v in values.items() if len(v) == len(passes)}


def differences(before: Sequence[PassResult], after: Sequence[PassResult]) -> list[float]:
    """Per task (scored on every pass of both sides, in the first after-pass's order): the
    mean of `after` minus the mean of `before`."""
    old, new = task_means(before), task_means(after)
    order = [t.task_id for t in after[0].tasks] if after else []
    return [new[tid] - old[tid] for tid in order if tid in old and tid in new]


def measure(score: Score, original: Mapping[str, str | None], base_val: PassResult,
            ) -> tuple[Noise, PassResult]:
    """Score val under the placebo and compare it with the baseline, task by task."""
    placebo_val = score("val", placebo(original, 0), "placebo: the original, re-worded")
    moves = differences([base_val], [placebo_val])
    moved = [d for d in moves if d != 0]
    spread = sum(abs(d) for d in moves) / len(moves) if moves else 0.0
    return Noise(tasks=len(moves), moved=len(moved), spread=spread, alpha=ALPHA), placebo_val


def confirm_val(score: Score, noise: Noise, original: Mapping[str, str | None],
                final: Mapping[str, str | None], placebo_val: PassResult,
                min_delta: float) -> NoiseTest:
    """The night's val gain seen afresh: the final documents and the original, each under
    both re-wordings (`PLACEBOS`), compared per task on the mean of the two. The search
    chose the final documents on their own val pass, so that pass is left out: under noise
    these answers are new coins, and a gain the search found by chance fails here."""
    other = score("val", placebo(original, 1), "placebo: the original, re-worded again")
    final_once = score("val", placebo(final, 0), "final, re-worded")
    final_twice = score("val", placebo(final, 1), "final, re-worded again")
    diffs = differences([placebo_val, other], [final_once, final_twice])
    return judge("val", diffs, min_delta, noise.noisy, observations=2)


def confirm_test(score: Score, noise: Noise, original: Mapping[str, str | None],
                 final: Mapping[str, str | None], base_test: PassResult,
                 final_test: PassResult, min_delta: float) -> NoiseTest:
    """Held-out's gain, for the pull request: no edit was chosen on it, so its own passes
    count, each side with one re-worded copy beside it (two answers a side per task)."""
    if not noise.noisy:
        return judge("held-out", differences([base_test], [final_test]), min_delta, False)
    base_again = score("test", placebo(original, 0), "placebo: the original, re-worded")
    final_again = score("test", placebo(final, 0), "final, re-worded")
    diffs = differences([base_test, base_again], [final_test, final_again])
    return judge("held-out", diffs, min_delta, True, observations=2)
