"""The data types: a pass's mean over scored tasks, a split's improvement, and every record
as JSON-ready data (non-finite floats as null, properties included)."""

from __future__ import annotations

import json
import math

from gitsleep.core.models import (
    SPLITS,
    GateTrial,
    PassResult,
    SampleResult,
    Score,
    SplitSummary,
    TaskResult,
    is_split,
    to_dict,
)


def _task(tid: str, value: float | None, error: str | None = None) -> TaskResult:
    sample = SampleResult(0, None if error else "a", error,
                          None if error else Score(value or 0.0, value or 0.0, "r"))
    return TaskResult(tid, "val", [sample], value, value, value)


def test_a_failed_task_drops_out_of_the_mean_and_counts_as_an_error() -> None:
    scored = PassResult("p", "val", "v", [_task("a", 1.0), _task("b", 0.0),
                                         _task("c", None, error="timeout")])
    assert scored.mean == 0.5 and scored.errors == 1
    assert PassResult("p", "val", "v", [_task("c", None, error="x")]).mean is None
    assert set(scored.by_id()) == {"a", "b", "c"}


def test_improvement_needs_both_scores() -> None:
    assert SplitSummary(0.25, 1.0, 6).improved
    assert not SplitSummary(None, 1.0, 6).improved and not SplitSummary(0.5, 0.5, 6).improved


def test_records_become_json_with_their_properties_and_no_nan() -> None:
    data = to_dict(PassResult("p", "val", "v", [_task("a", math.nan)]))
    assert data["mean"] is None and data["tasks"][0]["value"] is None
    assert data["errors"] == 0
    trial = to_dict(GateTrial("skill", 1, 0, 0.5, 0.75, False, "why", refusal="rule"))
    assert trial["refusal"] == "rule" and trial["deltas"] == []
    json.dumps(data)  # serialisable as is
    summary = to_dict(SplitSummary(0.25, math.inf, 3))
    assert summary["candidate"] is None and summary["baseline"] == 0.25


def test_the_splits_are_named_once() -> None:
    assert SPLITS == ("train", "val", "test")
    assert all(is_split(name) for name in SPLITS) and not is_split("rollouts")
