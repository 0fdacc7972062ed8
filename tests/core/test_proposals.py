"""Optimizer replies -> edits: the shapes small models really write.

The fixtures in tests/fixtures/replies/ reproduce replies of Qwen2.5-Coder 0.5B/1.5B
that an older engine threw away; each test first shows the failure mode is real (plain
`json.loads` fails) and then what we make of it.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitsleep.core.proposals import (
    EDITS_SCHEMA,
    EDITS_SCHEMA_JSON,
    PROMPT_EXAMPLE_REPLY,
    parse_reply,
)
from tests.support.replies import reply


def fenced_body(text: str) -> str:
    return text.split("```json\n", 1)[1].split("```", 1)[0]


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
        ("add", "", "no anchor given"),  # a replace of nothing: read as add, like hygiene
    ]
    assert parsed.edits[-1].rationale == "(a replace with no anchor, read as add)"
    assert [d.reason for d in parsed.dropped] == ["no op and no content"]


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
    assert item["properties"]["op"]["enum"] == ["add", "replace", "delete", "template"]
    assert item["additionalProperties"] is False and EDITS_SCHEMA["additionalProperties"] is False
    assert json.loads(EDITS_SCHEMA_JSON) == EDITS_SCHEMA
    jsonschema.validate(json.loads(PROMPT_EXAMPLE_REPLY), EDITS_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"edits": [{"op": "add|replace", "content": "x"}]}, EDITS_SCHEMA)



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


def test_a_fence_inside_a_json_string_does_not_cut_the_fenced_reply_short():
    raw = json.dumps({"edits": [{"op": "template", "content": "```\n## Impact\n```",
                                 "anchor": "", "rationale": ""}]})
    parsed = parse_reply(f"Here you go:\n```json\n{raw}\n```", target="skill", budget=4)
    assert parsed.error is None
    assert [e.content for e in parsed.edits] == ["```\n## Impact\n```"]
