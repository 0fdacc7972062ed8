"""Optimizer replies -> edits: the shapes small models really write, hygiene, examples.

The fixtures in tests/fixtures/replies/ reproduce replies of Qwen2.5-Coder 0.5B/1.5B
that an older engine threw away; each test first shows the failure mode is real (plain
`json.loads` fails, or the content is junk) and then what we make of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitsleep import reflect
from gitsleep.models import Check, Edit
from gitsleep.proposals import (
    EDITS_SCHEMA,
    EDITS_SCHEMA_JSON,
    EXAMPLE_ANCHOR,
    PROMPT_EXAMPLE_REPLY,
    PROMPT_EXAMPLE_TEXTS,
    check_hygiene,
    describe_check,
    example_for_check,
    parse_reply,
)

REPLIES = Path(__file__).parent / "fixtures" / "replies"
SEVERITY = r"(?i)severity\s*[:=]\s*[1-4]"


def reply(name: str) -> str:
    return (REPLIES / name).read_text(encoding="utf-8")


def fenced_body(text: str) -> str:
    return text.split("```json\n", 1)[1].split("```", 1)[0]


def hygiene(edits, *, failing=(), prompts=(), rules=(), max_chars=500):
    return check_hygiene(
        list(edits),
        failing_checks=list(failing),
        task_prompts=list(prompts),
        current_rules=list(rules),
        max_chars=max_chars,
    )


# --------------------------------------------------------------------------------------
# parse_reply: the malformed shapes
# --------------------------------------------------------------------------------------


def test_regex_backslashes_inside_a_json_string_are_kept_as_written():
    raw = reply("invalid_escape_regex.txt")
    with pytest.raises(json.JSONDecodeError, match=r"Invalid \\escape"):
        json.loads(fenced_body(raw))

    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.error is None
    assert [e.op for e in parsed.edits] == ["add"]
    content = parsed.edits[0].content
    assert r"(?i)severity\s*[:=]\s*[1-4]" in content
    assert 'for example "Severity: 2"' in content
    assert r"severity\s*" in parsed.edits[0].rationale
    assert "escaped backslashes" in parsed.repairs


def test_unquoted_keys_are_quoted():
    raw = reply("unquoted_key.txt")
    with pytest.raises(json.JSONDecodeError, match="property name"):
        json.loads(raw)

    parsed = parse_reply(raw, target="memory", budget=4)

    assert parsed.error is None
    assert [(e.op, e.content, e.target) for e in parsed.edits] == [
        ("add", 'Always include "Confidence: medium" as the last line', "memory")
    ]
    assert parsed.edits[0].rationale == "answers missed the Confidence: line"
    assert "unquoted keys" in parsed.repairs


def test_several_fenced_arrays_are_merged_in_order():
    parsed = parse_reply(reply("two_fenced_arrays.txt"), target="skill", budget=4)

    assert parsed.error is None
    assert [e.content for e in parsed.edits] == [
        'Use the heading "## Key Risks"',
        'Always include "Confidence:"',
    ]


def test_a_single_edit_object_is_read_as_one_edit():
    parsed = parse_reply(reply("single_object.txt"), target="skill", budget=4)

    assert parsed.error is None
    assert [(e.op, e.content) for e in parsed.edits] == [
        ("add", "Keep answers under 600 characters")
    ]
    assert parsed.edits[0].rationale == "two answers were longer than 600 characters"


def test_prose_around_the_json_and_brackets_in_the_prose_are_skipped():
    raw = reply("prose_around.txt")
    assert raw.index('[contains "Confidence:"]') < raw.index('[{"op"')

    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.error is None
    assert [e.content for e in parsed.edits] == [
        'Always include "Confidence:" followed by low, medium or high'
    ]


def test_trailing_commas_and_single_quotes_are_repaired():
    raw = reply("trailing_commas_single_quotes.txt")
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)

    parsed = parse_reply(raw, target="skill", budget=4)

    assert [e.content for e in parsed.edits] == [
        "Keep answers under 600 characters",
        'Use the heading "## Next Steps"',
    ]
    assert {"single quotes", "trailing commas"} <= set(parsed.repairs)


def test_quotes_left_unescaped_inside_a_string_need_json_repair():
    raw = reply("unescaped_quotes.txt")
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)

    parsed = parse_reply(raw, target="skill", budget=4)

    assert [e.content for e in parsed.edits] == ['Always include "Confidence:" on its own line']
    assert parsed.edits[0].rationale == 'the check contains "Confidence:" failed'
    assert "json-repair" in parsed.repairs


def test_an_unknown_op_such_as_the_schema_echo_add_or_replace_is_dropped():
    parsed = parse_reply(reply("op_union.txt"), target="skill", budget=4)

    assert parsed.error is None
    assert parsed.edits == []
    assert [(d.status, d.edit.op) for d in parsed.dropped] == [("unmatched", "add|replace")]
    assert parsed.dropped[0].reason.startswith("unknown op 'add|replace'")
    assert parsed.dropped[0].edit.content == 'Always include "Confidence:"'


def test_items_beyond_the_budget_are_dropped_in_order():
    parsed = parse_reply(reply("over_budget.txt"), target="skill", budget=4)

    assert [e.rationale for e in parsed.edits] == ["r1", "r2", "r3", "r4"]
    assert [d.edit.rationale for d in parsed.dropped] == ["r5", "r6"]
    assert {d.reason for d in parsed.dropped} == {"over the edit budget (4)"}


def test_a_wrapper_of_plain_strings_becomes_add_edits():
    parsed = parse_reply(reply("rules_of_strings.txt"), target="skill", budget=4)

    assert [(e.op, e.content) for e in parsed.edits] == [
        ("add", 'Always include "Confidence:"'),
        ("add", 'Use the heading "## Key Risks"'),
    ]


def test_changes_is_accepted_as_the_wrapper_key():
    raw = json.dumps({"changes": [{"op": "delete", "anchor": "Keep answers short"}]})

    parsed = parse_reply(raw, target="skill", budget=4)

    assert [(e.op, e.anchor, e.content) for e in parsed.edits] == [
        ("delete", "Keep answers short", "")
    ]


def test_edit_objects_one_per_line_are_read_as_a_list():
    parsed = parse_reply(reply("json_lines.txt"), target="skill", budget=4)

    assert [(e.op, e.anchor) for e in parsed.edits] == [
        ("add", ""),
        ("replace", "Keep answers under 600 characters"),
    ]


def test_a_cut_off_reply_keeps_complete_edits_and_drops_the_half_written_one():
    raw = reply("truncated.txt")

    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.error is None
    assert [e.content for e in parsed.edits] == ['Always include "Confidence:"']
    assert [d.reason for d in parsed.dropped] == ["the reply was cut off inside this edit"]
    assert parsed.dropped[0].edit.content.startswith("Use the heading")


def test_a_reply_cut_off_inside_its_first_edit_is_an_error_for_the_retry():
    parsed = parse_reply('{"op": "add", "content": "Always inc', target="skill", budget=4)

    assert parsed.edits == []
    assert parsed.error is not None and "cut off" in parsed.error


def test_missing_op_with_content_means_add_and_aliases_are_read():
    raw = json.dumps(
        [
            {"content": "Always include \"Owner:\""},
            {"action": "remove", "content": "Keep answers short"},
            {"op": "Update", "anchor": "Start with \"Hi\"", "content": "Start with \"Hello\""},
            {"anchor": "only an anchor"},
            {"op": "replace", "content": "no anchor given"},
        ]
    )

    parsed = parse_reply(raw, target="skill", budget=10)

    assert [(e.op, e.anchor, e.content) for e in parsed.edits] == [
        ("add", "", 'Always include "Owner:"'),
        ("delete", "Keep answers short", ""),
        ("replace", 'Start with "Hi"', 'Start with "Hello"'),
    ]
    assert [d.reason for d in parsed.dropped] == [
        "no op and no content",
        "replace without an anchor (the learned rule to change)",
    ]


def test_repeated_items_are_dropped_once_and_non_objects_are_reported():
    raw = json.dumps(
        [
            {"op": "add", "content": "Always include \"Owner:\""},
            {"op": "add", "content": "always include  \"owner:\""},
            {"op": "add", "content": {"nested": True}},
        ]
    )

    parsed = parse_reply(raw, target="skill", budget=4)

    assert len(parsed.edits) == 1
    assert [d.reason for d in parsed.dropped] == [
        "repeats an earlier edit in this reply",
        "content is not text",
    ]


def test_an_empty_edit_list_is_a_valid_answer_not_an_error():
    parsed = parse_reply('```json\n{"edits": []}\n```', target="skill", budget=4)

    assert (parsed.edits, parsed.dropped, parsed.error) == ([], [], None)


def test_a_regex_word_boundary_written_as_a_json_escape_is_kept_as_regex():
    raw = '[{"op": "add", "content": "Mention \\bRisk\\b exactly once"}]'
    assert "\x08" in json.loads(raw)[0]["content"]  # \b decodes to a backspace

    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.edits[0].content == r"Mention \bRisk\b exactly once"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", "the reply was empty"),
        ("   \n", "the reply was empty"),
        (reply("prose_only.txt"), "no JSON found"),
        ('{"score": 0.5, "reason": "ok"}', 'found an object with keys "score", "reason"'),
    ],
)
def test_unreadable_replies_get_an_error_for_the_retry(raw, expected):
    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.edits == [] and parsed.error is not None
    assert expected in parsed.error
    assert '{"edits": [' in parsed.error or "empty" in parsed.error


def test_the_error_names_the_decode_problem_and_where_it_is():
    raw = reply("wrong_shape_bad_escape.txt")
    line_no, line = next((i + 1, t) for i, t in enumerate(raw.splitlines()) if "\\d" in t)
    column = line.index("\\d") + 1

    parsed = parse_reply(raw, target="skill", budget=4)

    assert parsed.edits == []
    assert f"Invalid \\escape at line {line_no} column {column}" in parsed.error
    assert 'keys "suggestion"' in parsed.error


def test_the_schema_is_strict_mode_shaped_and_its_json_is_canonical():
    item = EDITS_SCHEMA["properties"]["edits"]["items"]
    assert set(item["required"]) == set(item["properties"]) == {
        "op",
        "content",
        "anchor",
        "rationale",
    }
    assert item["properties"]["op"]["enum"] == ["add", "replace", "delete"]
    assert item["additionalProperties"] is False and EDITS_SCHEMA["additionalProperties"] is False
    assert json.loads(EDITS_SCHEMA_JSON) == EDITS_SCHEMA
    jsonschema.validate(json.loads(PROMPT_EXAMPLE_REPLY), EDITS_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"edits": [{"op": "add|replace", "content": "x"}]}, EDITS_SCHEMA)


# --------------------------------------------------------------------------------------
# check_hygiene
# --------------------------------------------------------------------------------------


def test_a_placeholder_echo_from_a_small_model_is_rejected():
    parsed = parse_reply(reply("placeholder_echo.txt"), target="skill", budget=4)
    assert [e.content for e in parsed.edits] == ["<rule>"]

    kept, rejected = hygiene(parsed.edits, failing=[Check("contains", "Confidence:")])

    assert kept == []
    assert [(r.status, r.reason) for r in rejected] == [
        ("rejected", "content echoes a placeholder (<rule>) instead of a concrete rule")
    ]


@pytest.mark.parametrize(
    "content",
    [
        "<text>",
        "Always include <value>",
        "Use the heading <your heading here>",
        "Always include ...",
        "List risks, owners, …",
        "TODO: write the rule",
        "Always include {rule}",
        "Answer with <yes|no>",  # an option list fills only when a failing check confirms it
    ],
)
def test_placeholders_are_rejected(content):
    kept, rejected = hygiene([Edit("add", content)])

    assert kept == []
    assert "placeholder" in rejected[0].reason


def test_the_prompts_example_strings_are_rejected_with_or_without_brackets():
    parsed = parse_reply(PROMPT_EXAMPLE_REPLY, target="skill", budget=4)
    assert [e.op for e in parsed.edits] == ["add", "replace", "delete"]
    unbracketed = [
        Edit("add", "One rule"),
        Edit("delete", anchor="An existing rule, quoted exactly"),
    ]

    kept, rejected = hygiene([*parsed.edits, *unbracketed])

    assert kept == []
    assert [r.reason for r in rejected] == [
        "content copies the prompt's example text",
        f"anchor is a placeholder ({EXAMPLE_ANCHOR}), not a learned rule",
        f"anchor is a placeholder ({EXAMPLE_ANCHOR}), not a learned rule",
        "content copies the prompt's example text",
        "anchor is a placeholder (An existing rule, quoted exactly), not a learned rule",
    ]


def test_every_placeholder_in_the_reflection_prompt_is_shared_and_rejected():
    shown = set(re.findall(r'"(<[^"]+>)"', reflect.SYSTEM))
    assert shown and shown <= set(PROMPT_EXAMPLE_TEXTS)

    kept, rejected = hygiene([Edit("add", text) for text in sorted(shown)])

    assert kept == [] and len(rejected) == len(shown)


def test_rules_that_merely_share_a_word_with_the_examples_are_kept():
    edits = [Edit("add", "Keep one rule per line"), Edit("add", "Say why a risk matters")]

    assert hygiene(edits) == (edits, [])


def test_a_copied_task_prompt_is_rejected():
    prompt = (
        "Write a short brief for the on-call team about the failed database migration "
        "last night, with risks and next steps."
    )
    parsed = parse_reply(reply("prompt_copy.txt"), target="skill", budget=4)

    kept, rejected = hygiene(parsed.edits, prompts=["Summarise the outage", prompt])

    assert kept == []
    assert rejected[0].reason == "content copies a task prompt instead of stating a rule"


@pytest.mark.parametrize(
    "content",
    [
        "When asked, write a short brief for the on-call team about the failed database "
        "migration last night, with risks and next steps.",  # contains the whole prompt
        "Write a brief for the on-call team about the database migration last night with "
        "risks and next steps",  # 15 of its 18 words, in order
    ],
)
def test_content_containing_or_closely_following_a_prompt_is_rejected(content):
    prompt = (
        "Write a short brief for the on-call team about the failed database migration "
        "last night, with risks and next steps."
    )

    kept, rejected = hygiene([Edit("add", content)], prompts=[prompt])

    assert kept == [] and "copies a task prompt" in rejected[0].reason


def test_a_rule_sharing_a_few_words_with_a_prompt_is_kept():
    prompt = "Write a short brief for the on-call team about the failed database migration."
    edit = Edit("add", "Always end a brief with a line naming the on-call owner")

    kept, rejected = hygiene([edit], prompts=[prompt, "Brief"])

    assert (kept, rejected) == ([edit], [])


def test_a_rule_that_contradicts_the_failing_check_is_rejected():
    parsed = parse_reply(reply("contradiction.txt"), target="skill", budget=4)

    kept, rejected = hygiene(parsed.edits, failing=[Check("contains", "Confidence:")])

    assert kept == []
    assert rejected[0].reason == (
        'content contradicts a failing check: the answer must contain the text "Confidence:"'
    )


@pytest.mark.parametrize(
    ("content", "check"),
    [
        ("Do not add a Key Risks section", Check("section_present", "Key Risks")),
        ("Avoid the heading Key Risks", Check("section_contains", "Key Risks")),
        ("Don't write confidence: lines", Check("regex", r"(?i)confidence\s*:")),
        ('Always say "As an AI" when unsure', Check("not_contains", "As an AI")),
        ("Write at least 900 characters", Check("max_chars", 600)),
        ("Keep answers under 100 characters", Check("min_chars", 200)),
    ],
)
def test_contradictions_of_each_kind_are_rejected(content, check):
    kept, rejected = hygiene([Edit("add", content)], failing=[check])

    assert kept == [] and "contradicts a failing check" in rejected[0].reason


@pytest.mark.parametrize(
    ("content", "check"),
    [
        ("Never skip the Key Risks section", Check("section_present", "Key Risks")),
        ("Don't forget to include Confidence: at the end", Check("contains", "Confidence:")),
        ("Never say \"As an AI\"; always include Confidence:", Check("contains", "Confidence:")),
        ('Never say "As an AI"', Check("not_contains", "As an AI")),
        ("Keep answers under 600 characters", Check("max_chars", 600)),
    ],
)
def test_rules_that_agree_with_the_failing_check_are_kept(content, check):
    edit = Edit("add", content)

    assert hygiene([edit], failing=[check]) == ([edit], [])


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "content is empty"),
        (" \n\t ", "content is empty"),
        ("Always include \x07Owner", "content contains control characters"),
        ("Keep it short\r", "content contains control characters"),
        ("<!-- gitsleep:learned:end -->", "learned-block marker"),
        ("<!--GITSLEEP : Learned:start-->", "learned-block marker"),
        ("see gitsleep:learned for rules", "learned-block marker"),
        ("Keep it short\n---\nname: other", "frontmatter fence"),
        ("<!-- hidden -->", "HTML comment"),
    ],
)
def test_unsafe_content_is_rejected(content, reason):
    kept, rejected = hygiene([Edit("add", content)])

    assert kept == [] and reason in rejected[0].reason


def test_content_over_max_chars_is_rejected_and_at_the_limit_is_kept():
    at_limit = Edit("add", "Always include " + "x" * 85)
    over = Edit("add", "Always include " + "y" * 86)

    kept, rejected = hygiene([at_limit, over], max_chars=100)

    assert kept == [at_limit]
    assert rejected[0].reason == "content is 101 characters, over the limit of 100"


def test_duplicates_of_existing_rules_and_of_earlier_edits_are_rejected():
    rules = ['- Always include "Owner:"', "Keep answers under 600 characters"]
    fresh = Edit("add", 'Start with "Summary:"')
    edits = [
        Edit("add", '  always include   "OWNER:" '),
        Edit("add", "Keep answers under 600 characters."),
        fresh,
        Edit("add", '- start with "summary:"'),
        Edit("replace", 'Always include "Owner:"', anchor='Always include "Owner:"'),
        Edit("replace", "Keep answers under 600 characters", anchor='Always include "Owner:"'),
        Edit("add", "Use the heading \"## Risks\"\nUse the heading \"## risks\""),
    ]

    kept, rejected = hygiene(edits, rules=rules)

    assert kept == [fresh]
    assert [r.reason for r in rejected] == [
        "duplicates an existing rule: '- Always include \"Owner:\"'",
        "duplicates an existing rule: 'Keep answers under 600 characters'",
        "repeats an earlier edit in this proposal",
        "replacement is identical to the rule it replaces",
        "duplicates an existing rule: 'Keep answers under 600 characters'",
        "content repeats a line",
    ]


def test_multi_line_content_with_a_derivable_placeholder_is_filled_from_the_check():
    parsed = parse_reply(reply("multi_line_content.txt"), target="skill", budget=4)
    assert parsed.edits[0].content == "## Impact\nSeverity: <1-4>"

    kept, rejected = hygiene(parsed.edits, failing=[Check("regex", SEVERITY)])

    assert rejected == []
    assert kept[0].content == "## Impact\nSeverity: 1"
    assert re.search(SEVERITY, kept[0].content.splitlines()[1])
    assert kept[0].rationale.endswith("(placeholder filled from a failing check)")


def test_multi_line_content_is_all_or_nothing():
    parsed = parse_reply(reply("multi_line_content.txt"), target="skill", budget=4)

    kept, rejected = hygiene(parsed.edits, failing=[Check("contains", "Confidence:")])

    assert kept == []
    assert rejected[0].reason == "content echoes a placeholder (<1-4>) instead of a concrete rule"
    mixed = Edit("add", 'Use the heading "## Impact"\nNever include "Confidence:"')
    kept, rejected = hygiene([mixed], failing=[Check("contains", "Confidence:")])
    assert kept == [] and "contradicts" in rejected[0].reason


def test_placeholder_looking_text_that_a_failing_check_requires_is_kept():
    edit = Edit("add", 'Always include "Reply to <owner>"')

    kept, _ = hygiene([edit], failing=[Check("contains", "Reply to <owner>")])

    assert kept == [edit]


def test_angle_brackets_that_are_not_placeholders_are_kept():
    edits = [
        Edit("add", "Show thresholds as x < 5 and y > 3"),
        Edit("add", "Wrap the final answer in <answer> tags"),
        Edit("add", "Link sources as <https://example.com/doc>"),
    ]

    kept, rejected = hygiene(edits)

    assert (kept, rejected) == (edits, [])


def test_delete_edits_only_need_a_real_anchor():
    real = Edit("delete", anchor="Keep answers under 600 characters")
    echo = Edit("delete", anchor="<rule>")

    kept, rejected = hygiene([real, echo])

    assert kept == [real]
    assert rejected[0].reason == "anchor is a placeholder (<rule>), not a learned rule"


# --------------------------------------------------------------------------------------
# example_for_check and describe_check
# --------------------------------------------------------------------------------------

REGEX_EXAMPLES = [
    (SEVERITY, "Severity: 1"),
    (r"[Cc]onfidence\s*[:=]", "Confidence: medium"),
    (r"(?i)owner:\s*\w+", "Owner: medium"),
    (r"Confidence:\s*(high|medium|low)", "Confidence: high"),
    (r"^## (Key )?Risks", "## Risks"),
    (r"(?i)^summary\b", "Summary"),
    (r"TL;DR", "TL;DR"),
    (r"(high|medium|low) priority", "high priority"),
    (r"v\d+\.\d+", "v0.0"),
    (r"[A-Z]{3}-\d{4}", "AAA-0000"),
    (r"\bRisk\b", "Risk"),
    (r"[^\s]+@example\.com", "a@example.com"),
    (r"\$\d+(\.\d{2})?", "$0"),
    (r"(?i:next steps?):?", "Next step"),
    (r"(?x) ^ \#\# \s+ Owners", "## Owners"),
]


@pytest.mark.parametrize(("pattern", "expected"), REGEX_EXAMPLES)
def test_a_literal_derived_from_a_regex_matches_it(pattern, expected):
    literal = example_for_check(Check("regex", pattern))

    assert literal == expected
    assert re.search(pattern, literal)


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
        (Check("tool_called", "x"), "the check tool_called 'x' must pass"),
    ],
)
def test_describe_check_says_it_in_plain_words(check, words):
    assert describe_check(check) == words


# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------

_JSONISH = st.text(alphabet='[]{}"\',:\\ \n`abcjsonp0123456789-|<>', max_size=200)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), _JSONISH), st.integers(min_value=0, max_value=5))
def test_parse_reply_never_raises(raw, budget):
    parsed = parse_reply(raw, target="skill", budget=budget)

    assert len(parsed.edits) <= budget
    assert all(e.op in ("add", "replace", "delete") for e in parsed.edits)
    assert all(d.status == "unmatched" and d.reason for d in parsed.dropped)
    assert parsed.error is None or parsed.error.strip()


_RULE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=60
).filter(lambda s: s.strip() == s and s)


def _edit_identity(content: str) -> str:
    return " ".join(content.lower().split())  # as Edit.key() compares content


@settings(max_examples=100, deadline=None)
@given(st.lists(_RULE_TEXT, min_size=1, max_size=4, unique_by=_edit_identity))
def test_well_formed_replies_round_trip(contents):
    raw = json.dumps(
        {"edits": [{"op": "add", "content": c, "anchor": "", "rationale": ""} for c in contents]}
    )

    parsed = parse_reply(f"Here you go:\n```json\n{raw}\n```", target="skill", budget=4)

    assert [e.content for e in parsed.edits] == contents
    assert parsed.dropped == [] and parsed.error is None and parsed.repairs == []


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

    assert literal is None or re.search(pattern, literal)


def test_bracketed_prose_is_not_taken_for_edits():
    raw = 'Keep [{} and {}] apart, options ["a" or "b"]. Edits: [{"op": "add", "content": "X"}]'

    parsed = parse_reply(raw, target="skill", budget=4)

    assert [e.content for e in parsed.edits] == ["X"]


def test_a_list_without_edit_objects_is_an_error():
    parsed = parse_reply('[{"id": 1}, {"id": 2}]', target="skill", budget=4)

    assert parsed.edits == []
    assert "none of them an edit object" in parsed.error


def test_a_reply_over_the_read_limit_says_so():
    parsed = parse_reply("word " * 20_000, target="skill", budget=4)

    assert parsed.edits == [] and "longer than" in parsed.error


def test_a_backtracking_task_regex_cannot_stall_hygiene():
    # `re` needs minutes on this pair; hygiene searches as the judge does, bounded in time.
    edit = Edit("add", "Never write " + "a" * 40 + "b")
    failing = [Check("regex", r"(a|aa)+$"), Check("regex", "[")]

    assert hygiene([edit], failing=failing) == ([edit], [])


_CHECKS = st.sampled_from(
    [
        Check("contains", "Confidence:"),
        Check("not_contains", "As an AI"),
        Check("regex", SEVERITY),
        Check("regex", "(unclosed"),
        Check("section_present", "Key Risks"),
        Check("max_chars", 600),
        Check("min_chars", "many"),
        Check("contains", None),
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.builds(Edit, st.sampled_from(["add", "replace", "delete"]), st.text(), st.text()),
        max_size=4,
    ),
    st.lists(_CHECKS, max_size=4),
    st.lists(st.text(max_size=80), max_size=3),
)
def test_check_hygiene_never_raises_and_accounts_for_every_edit(edits, failing, texts):
    kept, rejected = hygiene(edits, failing=failing, prompts=texts, rules=texts)

    assert len(kept) + len(rejected) == len(edits)
    assert all(r.status == "rejected" and r.reason for r in rejected)
