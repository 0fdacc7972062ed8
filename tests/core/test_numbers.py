"""Integers over Python's 4,300-digit int-string limit, wherever text becomes a number.

A reply or a document can hold one; each is read as nonsense (infinity, or no score),
never as a ValueError that takes the run down.
"""

from __future__ import annotations

import math

from gitsleep.backends.offline import read_directives, simulate_answer
from gitsleep.core import hygiene, judges, proposals
from gitsleep.core.models import Check
from gitsleep.core.numbers import loads_json, whole_number

HUGE = "9" * 5000


def test_whole_number_and_loads_json() -> None:
    assert whole_number("42") == 42
    assert whole_number(HUGE) == math.inf
    assert loads_json(f'{{"n": {HUGE}, "m": -{HUGE}, "k": 7}}') == {
        "n": math.inf, "m": -math.inf, "k": 7}


def test_a_rubric_reply_with_a_huge_score_has_no_score() -> None:
    assert judges.parse_rubric_reply(f'{{"score": {HUGE}, "reason": "big"}}') is None
    assert judges.parse_rubric_reply(f"score: {HUGE}") is None
    assert judges.parse_rubric_reply('{"score": 0.8, "reason": "fine"}') is not None


def test_an_optimizer_reply_with_a_huge_number_still_parses() -> None:
    parsed = proposals.parse_reply(f'{{"edits": [], "n": {HUGE}}}', target="skill", budget=4)
    assert parsed.edits == [] and parsed.error is None
    parsed = proposals.parse_reply(
        f'{{"edits": [{{"op": "add", "content": "Keep it short", "n": {HUGE}}}]}}',
        target="skill", budget=4)
    assert [e.content for e in parsed.edits] == ["Keep it short"]


def test_hygiene_reads_a_huge_bound_in_a_rule() -> None:
    rule_under = f"Keep answers under {HUGE} characters"
    rule_over = f"Write at least {HUGE} characters"
    assert not hygiene._contradicts(rule_under, Check("min_chars", 10))
    assert hygiene._contradicts(rule_over, Check("max_chars", 10))


def test_the_offline_simulator_reads_a_huge_limit_as_no_limit() -> None:
    document = f"Keep answers under {HUGE} characters"
    assert read_directives([document]).limit is not None
    assert simulate_answer([document], "Summarise") == simulate_answer([], "Summarise")
