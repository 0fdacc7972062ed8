"""Untrusted regular expressions: task files hold regexes that gitsleep runs on answers.

Everything that reads or runs such a pattern lives here: the compiled-pattern cache, the
time-bounded search, the size estimate that refuses `x{1000000000}` before any judge runs,
and the stdlib parser (`re._parser`, `sre_parse` before Python 3.11) used to read a
pattern's structure.
"""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import Any

import regex

try:  # Python 3.11+
    from re import _constants as sre_c  # type: ignore[attr-defined,unused-ignore]
    from re import _parser as sre_parse  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # Python 3.10
    import sre_constants as sre_c  # type: ignore[no-redef,unused-ignore]
    import sre_parse  # type: ignore[no-redef,unused-ignore]

REGEX_TIMEOUT = 0.25  # seconds one untrusted pattern may spend on one answer
# The judge's regex engine writes `x{n}` out n times when it compiles: `a{1000000000}`
# asks for gigabytes. Valid for `re`, so it must be refused here, before any judge runs.
MAX_REGEX_SIZE = 100_000
REPEATS = {sre_c.MAX_REPEAT, sre_c.MIN_REPEAT} | (
    {sre_c.POSSESSIVE_REPEAT} if hasattr(sre_c, "POSSESSIVE_REPEAT") else set()
)

__all__ = ["MAX_REGEX_SIZE", "REGEX_TIMEOUT", "REPEATS", "compile_pattern", "regex_size",
           "search", "search_untrusted", "sre_c", "sre_parse"]


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Task regexes are untrusted: the `regex` engine avoids most catastrophic
    backtracking that stalls `re`, and `search_untrusted` bounds the rest in time."""
    return regex.compile(pattern)


def search_untrusted(pattern: str, text: str) -> tuple[bool, str]:
    """Whether `pattern` matches, and a problem note if it is invalid or too slow."""
    try:
        return compile_pattern(pattern).search(text, timeout=REGEX_TIMEOUT) is not None, ""
    except regex.error as exc:
        return False, f"invalid regex ({exc})"
    except TimeoutError:
        return False, f"regex took over {REGEX_TIMEOUT}s (catastrophic backtracking?)"


def search(pattern: str, text: str) -> Any:
    """`pattern` searched in `text` as the judge does it, bounded in time: the match, or
    None on no match, an invalid pattern or a timeout."""
    try:
        return compile_pattern(pattern).search(text, timeout=REGEX_TIMEOUT)
    except (regex.error, TimeoutError):
        return None


def regex_size(pattern: str) -> int:
    """How many items a pattern becomes once every counted repeat is written out
    (the minimum count: open-ended repeats are loops, not copies)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return 0  # compile already reported it, or it is too odd to measure
    try:
        return _items_size(list(parsed))
    except RecursionError:
        return MAX_REGEX_SIZE + 1


def _items_size(items: list[tuple[Any, Any]]) -> int:
    total = 0
    for op, av in items:
        if op in REPEATS:
            low, _high, body = av
            total += max(1, low) * _items_size(list(body))
        elif op is sre_c.SUBPATTERN:
            total += _items_size(list(av[-1]))
        elif op is sre_c.BRANCH:
            total += sum(_items_size(list(branch)) for branch in av[1])
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
            total += _items_size(list(av[1]))
        elif op is sre_c.GROUPREF_EXISTS:  # (?(1)yes|no)
            total += sum(_items_size(list(branch)) for branch in av[1:] if branch)
        elif op is getattr(sre_c, "ATOMIC_GROUP", None):  # (?>...), Python 3.11+
            total += _items_size(list(av))
        else:
            total += 1
        if total > MAX_REGEX_SIZE:
            return total
    return total
