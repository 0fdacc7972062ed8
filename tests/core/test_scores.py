"""How scores are written for people and read back, and which splits are too small."""

from __future__ import annotations

import math

from gitsleep.core.scores import (
    SMALL_SPLIT,
    fmt_change,
    fmt_score,
    parse_change,
    rounded,
    small_splits,
)


def test_a_score_has_three_decimals_and_none_reads_n_a() -> None:
    assert fmt_score(0.25) == "0.250"
    assert fmt_score(None) == fmt_score(math.nan) == fmt_score(math.inf) == "n/a"
    assert rounded(0.1 + 0.1 + 0.1 - 0.1) == 0.2
    assert rounded(math.nan) is None and rounded(None) is None


def test_a_change_is_written_and_read_back() -> None:
    text = fmt_change(0.25, 1.0)
    assert text == "0.250 -> 1.000"
    assert parse_change(text) == (0.25, 1.0)
    assert parse_change(fmt_change(None, 0.5)) == (None, 0.5)
    assert parse_change("garbage") == (None, None)
    assert parse_change(None) == (None, None)


def test_splits_under_the_small_size_are_named_with_their_count() -> None:
    assert small_splits(1, 0) == ["val (1 task)"]  # no held-out split is not a small one
    assert small_splits(5, 4) == ["held-out (4 tasks)"]
    assert small_splits(SMALL_SPLIT, SMALL_SPLIT) == []
    assert small_splits(2, 3) == ["val (2 tasks)", "held-out (3 tasks)"]
