"""Early stopping stops sooner when the likely losers and weak tasks come first, and the
epoch decides and writes exactly what it would with every candidate scored in full."""

from __future__ import annotations

from gitsleep.core import documents as d
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import EpochResult, Task
from tests.core.test_epoch import SKILL, ScriptedEdits, rule, settings

WORDS = ("Alpha", "Beta", "Gamma")
ADD = {w: {"op": "add", "content": f'Always include "{w}"'} for w in WORDS}


def both_ways(tasks: list[Task], spy_factory, **overrides: object
              ) -> tuple[EpochResult, int, EpochResult, int]:
    """The epoch with and without early stopping, and the answer calls each made."""
    out: list[object] = []
    for early in (True, False):
        spy = spy_factory()
        result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                           settings(**{"rounds": 1, "workers": 1, "early_stop": early,
                                       **overrides}), spy, skill="s")
        out += [result, sum(1 for c in spy.calls if c.purpose == "answer")]
    return tuple(out)  # type: ignore[return-value]


def test_a_leave_one_out_scores_first_the_tasks_the_bundle_is_weakest_on() -> None:
    # v4 fails under every document and comes last in the split: scored first, it and one
    # lost task already show that a leave-one-out cannot reach the bundle's 0.75
    tasks = [Task("t1", "p", "train", rule(*(("contains", w) for w in WORDS))),
             *[Task(f"v{i}", f"p{i}", "val", rule(("contains", w)))
               for i, w in enumerate(WORDS, start=1)],
             Task("v4", "p4", "val", rule(("contains", "Never")))]
    stopped, stopped_calls, full, full_calls = both_ways(
        tasks, lambda: ScriptedEdits(*ADD.values()), proposals=1)
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    assert len(d.learned_rules(stopped.documents["skill"][1])) == 3
    assert [t.stopped_after for t in stopped.trials] == [None, 2, 3, None]
    assert stopped_calls == full_calls - 2 - 1
    # the passes list their tasks in the split's order, whatever order they were scored in
    stopped_passes = [p for p in stopped.passes if p.stopped_after is not None]
    assert [t.task_id for t in stopped_passes[-1].tasks] == ["v1", "v2", "v4"]
    assert [o.edit for o in stopped.rejected] == [o.edit for o in full.rejected]


def bundles_tasks() -> list[Task]:
    words = ("Alpha", "Alpha", "Beta", "Beta", "Gamma", "Never")
    return [Task("t1", "p", "train", rule(*(("contains", w) for w in WORDS))),
            *[Task(f"v{i}", f"p{i}", "val", rule(("contains", w)))
              for i, w in enumerate(words, start=1)]]


def two_bundles() -> ScriptedEdits:
    zeta = {"op": "add", "content": 'Always include "Zeta"'}
    return ScriptedEdits(per_proposal=[[ADD["Alpha"], ADD["Beta"]], [ADD["Gamma"], zeta]])


def test_a_later_bundle_stops_once_it_cannot_reach_the_best_passing_one() -> None:
    # proposal 1 scores 4/6; proposal 2 passes the gate (1/6 > 0) but after v5, v6, v1 and
    # v2 it has lost 3 > 2 points: it cannot reach 4/6. The merge could not use its edits:
    # proposal 1 alone fills the edit budget of 2.
    stopped, stopped_calls, full, full_calls = both_ways(
        bundles_tasks(), two_bundles, proposals=2, edit_budget=2)
    assert [t.stopped_after for t in full.trials[:2]] == [None, None]
    assert full.trials[1].candidate == 1 / 6 and full.trials[1].reason.startswith(
        "val 0.000 -> 0.167 on 6 task(s): improves")
    assert stopped.trials[1].stopped_after == 4
    assert stopped.trials[1].reason == ("stopped after 4/6 val tasks: cannot reach 0.667, the "
                                        "val mean it had to match")
    assert stopped_calls < full_calls
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    assert [o.edit for o in stopped.rejected] == [o.edit for o in full.rejected]


def test_a_stopped_bundle_the_merge_could_use_is_finished_first() -> None:
    # with an edit budget of 3 the merge takes Gamma from proposal 2: it must know that
    # proposal 2 passes, so its stopped scoring is finished
    stopped, _, full, _ = both_ways(bundles_tasks(), two_bundles, proposals=2, edit_budget=3)
    assert "finished: the merge takes the edits of every passing bundle" in (
        stopped.trials[1].reason)
    # the two proposals and their merge, as a full scoring has them (the pruning stops)
    assert [(t.candidate, t.stopped_after) for t in stopped.trials[:3]] == [
        (t.candidate, t.stopped_after) for t in full.trials[:3]] == [
        (4 / 6, None), (1 / 6, None), (5 / 6, None)]
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    assert 'Always include "Gamma"' in d.learned_rules(stopped.documents["skill"][1])
