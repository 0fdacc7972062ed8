"""Why a night learned nothing: per failing check, did the agent ignore the rules, or did
the rules not help?

After a 0.000 -> 0.000 night the user's question is which of two things happened. When
every candidate ties with the baseline on val, each check that failed at baseline is
looked at across the candidates' val answers to the tasks it failed on:

- `ignored`: every such answer is byte-identical under every candidate. The agent did not
  act on the learned text at all; a stronger wording, a template or a bigger agent is
  needed, not a different idea.
- `did_not_help`: answers changed, yet the check still fails on every such task. The
  agent read the rule and did something else; the rule's content is the problem.
- `traded`: some candidate made the check pass on some task, yet the score did not rise
  (something else got worse).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitsleep.core.check_text import describe_check
from gitsleep.core.models import Check, GateTrial, PassResult, TaskResult

_EPS = 1e-9


def _first(task: TaskResult | None) -> tuple[str | None, tuple[Check, ...] | None]:
    sample = next((s for s in task.samples if s.score is not None), None) if task else None
    if sample is None or sample.score is None:
        return None, None
    return sample.answer, sample.score.failed


def all_tied(trials: Sequence[GateTrial]) -> bool:
    """Every candidate scored exactly its baseline."""
    return bool(trials) and all(
        t.candidate is not None and t.baseline is not None and abs(t.candidate - t.baseline) < _EPS
        for t in trials)


def per_check(baseline: PassResult, candidates: Sequence[PassResult]) -> list[dict[str, object]]:
    """One verdict per check that failed at baseline, most failing tasks first."""
    failing: dict[Check, list[str]] = {}
    for task in baseline.tasks:
        _answer, failed = _first(task)
        for check in failed or ():
            failing.setdefault(check, []).append(task.task_id)
    verdicts: list[dict[str, object]] = []
    for check, task_ids in sorted(failing.items(), key=lambda kv: -len(kv[1])):
        changed: set[str] = set()
        fixed: set[str] = set()
        changed_by = 0
        for cand in candidates:
            by_id = cand.by_id()
            moved = False
            for task_id in task_ids:
                before, _ = _first(baseline.by_id().get(task_id))
                after, failed = _first(by_id.get(task_id))
                if after is None:
                    continue
                if after != before:
                    changed.add(task_id)
                    moved = True
                if failed is not None and check not in failed:
                    fixed.add(task_id)
            changed_by += moved
        n, k = len(candidates), len(task_ids)
        if not changed:
            verdict = "ignored"
            detail = (f"the agent ignored the rules: its answers to the {k} val task(s) failing "
                      f"this check were unchanged under all {n} candidate(s)")
        elif not fixed:
            verdict = "did_not_help"
            detail = (f"the rules did not help: answers changed on {len(changed)} of {k} val "
                      f"task(s) under {changed_by} of {n} candidate(s), and the check still "
                      "failed on all of them")
        else:
            verdict = "traded"
            detail = (f"a candidate made this check pass on {len(fixed)} of {k} val task(s), "
                      "but other checks or tasks lost as much")
        verdicts.append({"check": check.label(), "describe": describe_check(check),
                         "verdict": verdict, "detail": detail})
    return verdicts


def summary(verdicts: Sequence[dict[str, object]]) -> str:
    """One clause per check, for the epoch's reason."""
    names = {"ignored": "agent ignored the rules", "did_not_help": "rules did not help",
             "traded": "gains traded away"}
    return "; ".join(f"{v['check']}: {names[str(v['verdict'])]}" for v in verdicts)
