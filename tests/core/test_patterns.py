"""Untrusted task regexes: matched with a time bound, their problems said, their size
estimated before they are compiled."""

from __future__ import annotations

from gitsleep.core.patterns import MAX_REGEX_SIZE, regex_size, search, search_untrusted


def test_a_match_and_a_miss() -> None:
    assert search_untrusted(r"(?m)^Severity:\s*\d", "x\nSeverity: 3") == (True, "")
    assert search_untrusted("absent", "text") == (False, "")
    found = search(r"Severity:\s*(\d)", "Severity: 3")
    assert found is not None and found.group(1) == "3"


def test_an_invalid_pattern_says_why_and_never_raises() -> None:
    matched, problem = search_untrusted("(", "x")
    assert not matched and problem.startswith("invalid regex")
    assert search("(", "x") is None


def test_catastrophic_patterns_end_in_time() -> None:
    assert search_untrusted(r"(a+)+$", "a" * 40 + "b") == (False, "")


def test_the_size_counts_what_a_repeat_expands_to() -> None:
    assert regex_size("abc") == 3
    assert regex_size("a{1000}") == 1000
    assert regex_size("(ab){1000}") >= 2000
    assert regex_size("a{200000}") > MAX_REGEX_SIZE
