from __future__ import annotations

import pytest

from gitsleep import gate
from gitsleep.models import GateSettings, PassResult, TaskResult


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
