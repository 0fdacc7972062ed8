"""Failing checks in words, and the concrete passing lines derived from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitsleep.core.check_text import describe_check, example_for_check, rule_for_check
from gitsleep.core.models import Check
from gitsleep.core.regex_literal import sample_fill
from tests.support.replies import SEVERITY

# --------------------------------------------------------------------------------------
# example_for_check and describe_check
# --------------------------------------------------------------------------------------

# Where the pattern leaves a choice, the example keeps a typed placeholder:
# one constant would pass only the tasks that happen to want it.
REGEX_EXAMPLES = [
    (SEVERITY, "Severity: <1-4>"),
    # a label the check asks no value for: the value is the agent's to give, not "medium"
    (r"[Cc]onfidence\s*[:=]", "Confidence: <text>"),
    (r"(?i)owner:\s*\w+", "Owner: <text>"),
    (r"Confidence:\s*(high|medium|low)", "Confidence: <high|medium|low>"),
    (r"^## (Key )?Risks", "## Risks"),
    (r"(?i)^summary\b", "Summary"),
    (r"TL;DR", "TL;DR"),
    (r"(high|medium|low) priority", "<high|medium|low> priority"),
    (r"v\d+\.\d+", "v<number>.<number>"),
    (r"[A-Z]{3}-\d+", "AAA-<number>"),
    (r"\bRisk\b", "Risk"),
    (r"[^\s]+@example\.com", "a@example.com"),
    (r"\$\d+(\.\d{2})?", "$<number>"),
    (r"(?i:next steps?):?", "Next step"),
    (r"(?x) ^ \#\# \s+ Owners", "## Owners"),
]


@pytest.mark.parametrize(("pattern", "expected"), REGEX_EXAMPLES)
def test_a_literal_derived_from_a_regex_matches_it(pattern, expected):
    literal = example_for_check(Check("regex", pattern))

    assert literal == expected
    assert re.search(pattern, sample_fill(literal))


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?<=a)b",  # lookbehind
        r"foo(?=bar)",  # lookahead
        r"(?!x)y",  # negative lookahead
        r"(\w+) \1",  # backreference
        r"(a)?(?(1)b|c)",  # conditional
        r"a{1000}",  # too long to be a rule
        r"^$",  # only an empty text matches
        r"line one\nline two",  # cannot be one line of a rule
        r"[",  # not a regex at all
    ],
)
def test_no_literal_for_patterns_that_cannot_give_one(pattern):
    assert example_for_check(Check("regex", pattern)) is None


# What a person would write, not the shortest match: a separator where the pattern allows
# one, a word where it wants a non-space (the shortest match gave `Verdictreject`,
# `Severity<1|2>` and `feat: a`, and real optimizers copied them into rules).
HUMAN_EXAMPLES = [
    (r"(?im)^\W*verdict\W*reject\b", "Verdict: reject"),
    (r"(?im)^\W*severity\W*[12]\b", "Severity: <1|2>"),
    (r"(?m)\A\s*feat(\([^)]*\))?!?: \S", "feat: add"),
    (r"(?m)\A\s*docs(\([^)]*\))?!?: \S", "docs: add"),
    (r"(?i)verdict\W*approve", "Verdict: approve"),  # tests/core/test_learning_judgment.py
    (r"verdict\s*reject", "verdict reject"),  # only a space is allowed there
    (r"(?i)verdict:?\s*reject", "Verdict: reject"),
    (r"(?i)severity\W*[:=]\s*[1-4]", "Severity: <1-4>"),  # no second separator
]


@pytest.mark.parametrize(("pattern", "expected"), HUMAN_EXAMPLES)
def test_an_example_reads_as_a_person_would_write_it_and_passes_its_check(pattern, expected):
    example = example_for_check(Check("regex", pattern))

    assert example == expected
    assert re.search(pattern, sample_fill(example))


EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"


def _example_regexes() -> list[str]:
    """Every regex check of the bundled examples' task files (JSON lines)."""
    found: set[str] = set()
    for path in sorted(EXAMPLES_DIR.rglob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            judge = json.loads(line).get("judge", {}) if line.strip() else {}
            found.update(c["arg"] for c in judge.get("checks", []) if c.get("op") == "regex")
    return sorted(found)


def test_the_examples_task_files_have_regex_checks() -> None:
    assert len(_example_regexes()) >= 4


@pytest.mark.parametrize("pattern", _example_regexes())
def test_every_example_regex_gets_a_spaced_example_that_passes_it(pattern):
    example = example_for_check(Check("regex", pattern))

    assert example is not None and re.search(pattern, sample_fill(example))
    assert ": " in example or not re.search(r"[A-Za-z]:", pattern)


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (Check("contains", "Confidence:"), "Confidence:"),
        (Check("section_present", "Key Risks"), "## Key Risks"),
        (Check("section_contains", "Next Steps"), "## Next Steps"),
        (Check("section_present", "### Owners"), "### Owners"),
        (Check("max_chars", 600), None),
        (Check("min_chars", 50), None),
        (Check("not_contains", "As an AI"), None),
        (Check("no_refusal"), None),
        (Check("equals", "42"), None),
        (Check("contains", ""), None),
    ],
)
def test_examples_for_other_checks(check, expected):
    assert example_for_check(check) == expected


@pytest.mark.parametrize(
    ("check", "words"),
    [
        (Check("contains", "Confidence:"), 'the answer must contain the text "Confidence:"'),
        (Check("not_contains", "As an AI"), 'the answer must not contain the text "As an AI"'),
        (Check("max_chars", 600), "the answer must be at most 600 characters"),
        (Check("min_chars", 80), "the answer must be at least 80 characters"),
        (Check("regex", SEVERITY), f"the answer must match the regular expression `{SEVERITY}`"),
        (
            Check("section_present", "Key Risks"),
            'the answer must have a section headed "Key Risks"',
        ),
        (
            Check("section_contains", "Risks"),
            'the answer must have a Markdown heading containing "Risks"',
        ),
        (Check("no_refusal"), "the answer must not refuse the task"),
        (Check("equals", "42"), 'the answer must be exactly "42" (whitespace aside)'),
        (Check("tool_used", "x"), "the check tool_used 'x' must pass"),  # type: ignore[arg-type]
        (Check("tool_called", "search"),
         'the agent must call the tool "search" before it answers'),
    ],
)
def test_describe_check_says_it_in_plain_words(check, words):
    assert describe_check(check) == words




# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------


_REGEX_PARTS = [
    "[Cc]onfidence", "severity", "Owner", "\\s*", "\\s+", "[:=]", ":", " ", "[1-4]", "\\d+",
    "\\w+", "(high|low)", "\\b", "-", "[A-Z]{2}", ".+", "x?", "^", "$", "(?:## )?", "[^,]",
]


@settings(max_examples=200, deadline=None)
@given(
    st.booleans(),
    st.lists(st.sampled_from(_REGEX_PARTS), min_size=1, max_size=6).map("".join),
)
def test_any_derived_literal_verifies(ignorecase, pattern):
    pattern = ("(?i)" if ignorecase else "") + pattern
    literal = example_for_check(Check("regex", pattern))

    assert literal is None or re.search(pattern, sample_fill(literal))


@pytest.mark.parametrize(("check", "rule"), [
    (Check("tool_called", "search"),
     'Before you answer, call the "search" tool; answer from what it returns, not from memory.'),
    (Check("tool_not_called", "deploy"), 'Never call the "deploy" tool.'),
    (Check("tool_called_before", '["plan", "deploy"]'),
     'Call the "plan" tool before you call the "deploy" tool.'),
    (Check("max_tool_calls", 3), "Make at most 3 tool call(s) before you answer."),
    (Check("tool_called", "search", args_regex="release"),
     'Before you answer, call the "search" tool; answer from what it returns, not from memory.'),
    (Check("tool_called_before", '["plan", "deploy"]', args_regex="prod"),
     'Call the "plan" tool before you call the "deploy" tool.'),
])
def test_a_trajectory_check_offers_the_rule_that_asks_for_the_call(
        check: Check, rule: str | None) -> None:
    """A real optimizer shown a failing `tool_called` check and no rule never named the
    tool (a real night proposed only headings); the rule it is offered names the call. A
    check that also judges the arguments by a regex still gets the call's rule: the call
    is needed whatever the arguments, and the rule quotes nothing the regex leaves open.
    The rule says what the call is for: on a real night Qwen2.5-Coder-1.5B answered from
    memory under `Call the "search" tool before you answer.` and called the tool under
    this one."""
    assert rule_for_check(check) == rule
