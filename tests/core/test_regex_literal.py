"""A text a task's regex matches (the regex op's example), and the typed form of a line
whose value the regex leaves open."""

from __future__ import annotations

import re

from gitsleep.core.regex_literal import (
    fills,
    has_choice,
    literal_for_regex,
    merge_typed,
    sample_fill,
    typed_form,
)


def test_a_fixed_pattern_gives_a_literal_that_it_matches() -> None:
    for pattern in ("## Key Risks", "(?i)^verdict: approve", "a+b"):
        literal = literal_for_regex(pattern)
        assert literal is not None and re.search(pattern, literal), pattern
    assert literal_for_regex("(?i)^verdict: approve") == "Verdict: approve"


def test_a_choice_has_no_single_literal_but_a_typed_slot() -> None:
    pattern = r"(?m)^Severity:\s*[1-4]"
    assert literal_for_regex(pattern) is None and has_choice(pattern)
    assert typed_form(pattern) == "Severity: <1-4>"
    assert not has_choice("Risks")
    assert literal_for_regex("(unclosed") is None


def test_slots_are_filled_and_merged() -> None:
    assert sample_fill("Severity: <1-4>") == "Severity: 1"
    assert fills("Verdict: <approve|block>") == ["Verdict: approve", "Verdict: block"]
    assert merge_typed("Severity: <1-2>", "Severity: <3-4>") == "Severity: <1-4>"
