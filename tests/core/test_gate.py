from __future__ import annotations

import pytest

from gitsleep.core import gate
from gitsleep.core.models import Check, GateSettings, PassResult, SampleResult, Score, TaskResult


def pass_of(values: dict[str, float | None]) -> PassResult:
    return PassResult(
        "p", "val", "v",
        [TaskResult(tid, "val", [], value=v, hard=v, soft=v) for tid, v in values.items()],
    )


def test_accepts_strict_improvement() -> None:
    ok, reason, before, after = gate.judge_trial(
        pass_of({"a": 0.0, "b": 0.5}), pass_of({"a": 1.0, "b": 0.5}), GateSettings()
    )
    assert ok and before == 0.25 and after == 0.75
    assert "improves by +0.500" in reason


def test_tie_is_rejected() -> None:
    ok, reason, *_ = gate.judge_trial(pass_of({"a": 0.5}), pass_of({"a": 0.5}), GateSettings())
    assert not ok and "tie" in reason


def test_worse_is_rejected() -> None:
    ok, reason, *_ = gate.judge_trial(pass_of({"a": 0.5}), pass_of({"a": 0.2}), GateSettings())
    assert not ok and "worse" in reason


def test_min_delta_must_be_exceeded() -> None:
    settings = GateSettings(min_delta=0.25)
    ok, reason, *_ = gate.judge_trial(pass_of({"a": 0.5}), pass_of({"a": 0.75}), settings)
    assert not ok and "min_delta 0.250" in reason
    ok, *_ = gate.judge_trial(pass_of({"a": 0.5}), pass_of({"a": 0.8}), settings)
    assert ok


def test_no_regression_blocks_a_better_mean_with_one_task_down() -> None:
    before = pass_of({"a": 0.8, "b": 0.0})
    after = pass_of({"a": 0.7, "b": 1.0})
    assert gate.judge_trial(before, after, GateSettings())[0]
    ok, reason, *_ = gate.judge_trial(before, after, GateSettings(no_regression=True))
    assert not ok and "task a fell 0.800 -> 0.700" in reason


def test_tasks_that_failed_to_score_drop_out_of_the_comparison() -> None:
    before = pass_of({"a": 0.0, "b": 0.0})
    after = pass_of({"a": 1.0, "b": None})  # b's calls all failed: not a zero
    ok, reason, b, a = gate.judge_trial(before, after, GateSettings())
    assert ok and (b, a) == (0.0, 1.0) and "on 1 task(s)" in reason
    ok, reason, *_ = gate.judge_trial(pass_of({"a": None}), pass_of({"a": 1.0}), GateSettings())
    assert not ok and "no val task" in reason


def test_deltas_mark_status() -> None:
    rows = gate.deltas(pass_of({"a": 0.0, "b": 1.0}), pass_of({"a": 1.0, "b": 0.5, "c": 1.0}))
    assert [(r.task_id, r.status) for r in rows] == [
        ("a", "improved"), ("b", "regressed"), ("c", "missing"),
    ]


def test_bootstrap_interval_is_repeatable_and_brackets_the_mean() -> None:
    diffs = [1.0, 0.0, 0.5, 1.0, 0.0, 1.0]
    low, high = gate.bootstrap_interval(diffs)
    assert (low, high) == gate.bootstrap_interval(diffs)
    assert low <= sum(diffs) / len(diffs) <= high
    assert gate.bootstrap_interval([]) is None
    assert gate.bootstrap_interval([0.5]) == (0.5, 0.5)


def test_summary_reports_means_n_and_interval() -> None:
    summary = gate.summarise(pass_of({"a": 0.0, "b": 0.0}), pass_of({"a": 1.0, "b": 1.0}), 2)
    assert (summary.baseline, summary.candidate, summary.n) == (0.0, 1.0, 2)
    assert summary.ci_low == pytest.approx(1.0) and summary.improved


# -- early stopping: can the rest of the val tasks still make the gate accept? ------------


def scored(values: dict[str, float | None]) -> list[TaskResult]:
    return pass_of(values).tasks


def test_a_candidate_that_cannot_reach_the_best_even_at_full_marks_has_lost() -> None:
    best = pass_of({"a": 1.0, "b": 1.0, "c": 0.5, "d": 0.75})
    # a lost 1.0; c and d can win back at most 0.5 + 0.25
    assert gate.cannot_win(best, scored({"a": 0.0}), ["b", "c", "d"], GateSettings())
    # a lost only 0.5: c and d could still win back 0.75
    assert not gate.cannot_win(best, scored({"a": 0.5}), ["b", "c", "d"], GateSettings())


def test_an_exact_tie_within_rounding_keeps_scoring() -> None:
    best = pass_of({"a": 1.0, "b": 0.0})
    # down 1.0 on a, b can give back exactly 1.0: the mean could tie, never beat; but the
    # float gate decides ties, so the bound stops only when it is clearly below
    assert not gate.cannot_win(best, scored({"a": 0.0}), ["b"], GateSettings())
    assert gate.cannot_win(best, scored({"a": 0.0}), ["b"], GateSettings(min_delta=0.01))


def test_min_delta_lowers_what_each_remaining_task_can_give() -> None:
    best = pass_of({"a": 0.5, "b": 0.9, "c": 0.9})
    settings = GateSettings(min_delta=0.2)
    # a +0.5 - 0.2 = 0.3 so far; b and c cannot give more than 0.1 - 0.2 < 0: they drop out
    assert not gate.cannot_win(best, scored({"a": 1.0}), ["b", "c"], settings)
    assert gate.cannot_win(best, scored({"a": 0.6}), ["b", "c"], settings)


def test_no_regression_stops_at_the_first_task_below_the_best() -> None:
    best = pass_of({"a": 0.8, "b": 0.0, "c": 0.0})
    assert not gate.cannot_win(best, scored({"a": 0.7}), ["b", "c"], GateSettings())
    assert gate.cannot_win(best, scored({"a": 0.7}), ["b", "c"],
                           GateSettings(no_regression=True))


def test_failed_tasks_drop_out_of_the_bound_as_they_do_of_the_gate() -> None:
    best = pass_of({"a": 1.0, "b": None, "c": 0.0})
    # a's candidate calls failed: it cannot count against it; b was never scored by the best
    assert not gate.cannot_win(best, scored({"a": None}), ["b", "c"], GateSettings())
    assert gate.cannot_win(best, scored({"a": 0.0, "c": 0.0}), ["b"], GateSettings())


def test_the_bound_agrees_with_the_gate_on_every_completion() -> None:
    """Exhaustively: whenever the bound says stop, no completion is accepted."""
    import itertools

    levels = (None, 0.0, 0.5, 1.0)
    best = pass_of({"a": 0.5, "b": 1.0, "c": 0.0})
    for settings in (GateSettings(), GateSettings(min_delta=0.25),
                     GateSettings(no_regression=True)):
        for values in itertools.product(levels, repeat=3):
            cand = dict(zip("abc", values, strict=True))
            for m in range(1, 3):
                done = scored({k: cand[k] for k in "abc"[:m]})
                if gate.cannot_win(best, done, list("abc"[m:]), settings):
                    for rest in itertools.product(levels, repeat=3 - m):
                        full = {**{k: cand[k] for k in "abc"[:m]},
                                **dict(zip("abc"[m:], rest, strict=True))}
                        assert not gate.judge_trial(best, pass_of(full), settings)[0]


def test_improves_is_the_one_rule() -> None:
    assert gate.improves(0.5, 0.6, 0.0) and not gate.improves(0.5, 0.5, 0.0)
    assert not gate.improves(0.5, 0.6, 0.1 + 1e-9)


def hollow_pass(values: dict[str, float], hollow: set[str]) -> PassResult:
    """A val pass where the answers of the tasks in `hollow` failed integrity: they repeat
    a placeholder of the learned template."""
    tasks = []
    for tid, v in values.items():
        reason = ("integrity: repeats the template placeholder <write the impact here> "
                  "instead of filling it (scored as failing; the checks said: ok)"
                  if tid in hollow else "ok")
        sample = SampleResult(0, "## Impact\n<write the impact here>", None,
                              Score(v, v, reason, integrity=tid in hollow))
        tasks.append(TaskResult(tid, "val", [sample], value=v, hard=v, soft=v))
    return PassResult("p", "val", "v", tasks)


def test_a_candidate_whose_answers_copy_its_template_is_refused_whatever_its_gain() -> None:
    """The 0.5B agent copied the learned template into its answers, and the gate
    accepted the candidate anyway because the other answers rose enough; those copies then
    showed up in final held-out answers. More integrity failures than the current best on
    the same val tasks is a refusal, not a price."""
    best = hollow_pass({"a": 0.0, "b": 0.0, "c": 0.0}, set())
    copying = hollow_pass({"a": 1.0, "b": 1.0, "c": 0.0}, {"c"})
    ok, reason, before, after = gate.judge_trial(best, copying, GateSettings())
    assert not ok and (before, after) == (0.0, 2 / 3)
    assert "1 of 3 val answers" in reason and "placeholder" in reason
    # as many hollow answers as the current best (its own template): judged on the score
    best_hollow = hollow_pass({"a": 0.0, "b": 0.0, "c": 0.0}, {"c"})
    assert gate.judge_trial(best_hollow, copying, GateSettings())[0]
    # a candidate with no hollow answer is judged on its score as before
    assert gate.judge_trial(best, hollow_pass({"a": 1.0, "b": 0.0, "c": 0.0}, set()),
                            GateSettings())[0]


# -- an answer that carries another group's value is wrong -------------------------------

REJECT_WANT = (Check("regex", r"(?i)verdict\W*reject"),)
APPROVE_WANT = (Check("regex", r"(?i)verdict\W*approve"),)
SQL_GROUPS = {"regex (?i)verdict\\W*reject": ["drop", "delete"],
              "regex (?i)verdict\\W*approve": ["select", "insert"]}
SQL_OTHERS = {"drop": (APPROVE_WANT,), "delete": (APPROVE_WANT,),
              "select": (REJECT_WANT,), "insert": (REJECT_WANT,)}


def answered(answers: dict[str, tuple[str, float]]) -> PassResult:
    return PassResult("p", "val", "v", [
        TaskResult(tid, "val", [SampleResult(0, text, None, Score(v, v, "ok"))],
                   value=v, hard=v, soft=v) for tid, (text, v) in answers.items()])


def test_a_pin_that_lifts_its_group_and_adds_wrong_values_to_the_other_is_refused() -> None:
    """The approve tasks' checks look only for `Verdict: approve`: they stay at 0 under a
    pin of `Verdict: reject`, so their mean does not fall, yet each of their answers now
    carries the wrong value."""
    best = answered({"drop": ("ok", 0.0), "delete": ("ok", 0.0),
                     "select": ("ok", 0.0), "insert": ("ok", 0.0)})
    pinned = answered({"drop": ("Verdict: reject", 1.0), "delete": ("Verdict: reject", 1.0),
                       "select": ("Verdict: reject", 0.0), "insert": ("Verdict: reject", 0.0)})
    ok, reason, _, _ = gate.judge_trial(best, pinned, GateSettings(), SQL_GROUPS,
                                        others=SQL_OTHERS)
    assert not ok
    assert "2 of their answers carry another group's value (0 before)" in reason
    assert gate.wrong_values(pinned, SQL_GROUPS, SQL_OTHERS) == {
        "regex (?i)verdict\\W*reject": 0, "regex (?i)verdict\\W*approve": 2}
    # the same scores without the wrong values: accepted
    honest = answered({"drop": ("Verdict: reject", 1.0), "delete": ("Verdict: reject", 1.0),
                       "select": ("ok", 0.0), "insert": ("ok", 0.0)})
    assert gate.judge_trial(best, honest, GateSettings(), SQL_GROUPS, others=SQL_OTHERS)[0]

@pytest.mark.parametrize("how", ["min", "mean"])
def test_no_aggregate_and_no_acceptance_without_a_score_from_every_agent(how: str) -> None:
    """Before: under `gate.agents: min` the agent with no scored answer was left out of
    the minimum and the night was accepted (`Gitsleep-Val: n/a -> n/a`)."""
    agents = {"small": ["a@small", "b@small"], "dead": ["a@dead", "b@dead"]}
    best = pass_of({"a@small": 0.0, "b@small": 0.5, "a@dead": None, "b@dead": None})
    candidate = pass_of({"a@small": 1.0, "b@small": 1.0, "a@dead": None, "b@dead": None})
    accepted, reason, before, after = gate.judge_trial(
        best, candidate, GateSettings(agents=how), agents=agents)
    assert not accepted and "agent dead" in reason and (before, after) == (None, None)
    summary = gate.summarise(best, candidate, 4, agents, how)
    assert (summary.baseline, summary.candidate) == (None, None)
