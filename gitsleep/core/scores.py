"""How a score is written for people and read back: `0.250`, `n/a`, `0.250 -> 1.000`."""

from __future__ import annotations

import math


def fmt_score(value: float | None) -> str:
    """A score with 3 decimals; `n/a` when there is none."""
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.3f}"


def rounded(value: float | None) -> float | None:
    """A score rounded to 3 decimals for JSON and Action outputs (0.20000000000000004 -> 0.2)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, 3)


def fmt_change(before: float | None, after: float | None) -> str:
    """`0.250 -> 1.000`: a baseline and a candidate score (the trailer and subject form)."""
    return f"{fmt_score(before)} -> {fmt_score(after)}"


def parse_change(value: str | None) -> tuple[float | None, float | None]:
    """(before, after) from a `0.250 -> 1.000` text; None for `n/a` or garbage."""
    parts = (value or "").split("->")
    if len(parts) != 2:
        return None, None
    out: list[float | None] = []
    for part in parts:
        try:
            out.append(float(part))
        except ValueError:
            out.append(None)
    return out[0], out[1]


SMALL_SPLIT = 5  # below this many val or held-out tasks, one task swings the mean a lot


def small_splits(val_n: int, test_n: int) -> list[str]:
    """The splits whose decision rests on fewer than SMALL_SPLIT tasks, e.g. `val (1 task)`."""
    return [f"{name} ({n} task{'' if n == 1 else 's'})"
            for name, n in (("val", val_n), ("held-out", test_n)) if 0 < n < SMALL_SPLIT]
