"""Real optimizer replies, recorded from Qwen2.5-Coder 1.5B on a local llama.cpp server.

Each `tests/fixtures/replies/recorded/<name>.txt` is one raw reply, byte for byte, from
`benchmarks/real_model/run.py`; `<name>.json` beside it holds the context the optimizer
was given (failing checks, task prompts, current rules, budget) and, written by hand
after reading the reply, what a person would take from it: the edits, which of them are
real rules, and why the others are not. The test runs the same two steps an epoch runs
(`parse_reply`, then `check_hygiene`) and compares.

Where gitsleep does not yet do what a person would, the fixture says so in
`expect.known_gap` (`{"step": "parse" | "hygiene", "gap": "..."}`) and that step is an
xfail: the expectation stays the human one, and once the gap is fixed the test fails
until `known_gap` is removed (a strict xfail).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import Check
from gitsleep.core.proposals import parse_reply

RECORDED = Path(__file__).parents[1] / "fixtures" / "replies" / "recorded"
NAMES = sorted(p.stem for p in RECORDED.glob("*.txt"))


def load(name: str) -> tuple[str, dict[str, Any]]:
    raw = (RECORDED / f"{name}.txt").read_text(encoding="utf-8")
    spec = json.loads((RECORDED / f"{name}.json").read_text(encoding="utf-8"))
    return raw, spec


def failing_checks(context: dict[str, Any]) -> list[Check]:
    """The distinct failed checks of the failures shown, as reflect computes them."""
    seen: list[Check] = []
    for failure in context["failures"]:
        for op, arg in failure["failed"]:
            check = Check(op, arg)
            if check not in seen:
                seen.append(check)
    return seen


def edit_fields(edit: Any) -> dict[str, str]:
    return {"op": edit.op, "content": edit.content, "anchor": edit.anchor}


def edit_fields_of(expected: dict[str, str]) -> dict[str, str]:
    return {"op": expected["op"], "content": expected.get("content", ""),
            "anchor": expected.get("anchor", "")}


def check_known_gap(name: str, step: str, *, as_expected: bool) -> None:
    """xfail a step that misses the human expectation for a recorded reason; fail when a
    recorded gap is gone, so the fixture is updated (a strict xfail, by hand)."""
    gap = load(name)[1]["expect"].get("known_gap")
    if not gap or gap["step"] != step:
        return
    if as_expected:
        pytest.fail(f"{name}: the known {step} gap is fixed; remove expect.known_gap")
    pytest.xfail(f"known gap: {gap['gap']}")


def test_there_are_enough_recorded_replies_and_each_has_its_expectations():
    assert len(NAMES) >= 8
    for name in NAMES:
        _raw, spec = load(name)
        assert {"source", "context", "expect"} <= spec.keys(), name
        assert spec["expect"].get("why"), f"{name}: say what a reader sees in the reply"


@pytest.mark.parametrize("name", NAMES)
def test_parse_reply_reads_what_a_person_reads(name: str) -> None:
    raw, spec = load(name)
    context, expect = spec["context"], spec["expect"]
    parsed = parse_reply(raw, target=context["target"], budget=context["budget"])
    ok = (bool(parsed.error) == expect["parse_error"]
          and [edit_fields(e) for e in parsed.edits] == [edit_fields_of(e) for e in expect["edits"]]
          and len(parsed.dropped) == expect.get("dropped_by_parser", 0))
    check_known_gap(name, "parse", as_expected=ok)
    if expect["parse_error"]:
        assert parsed.error, f"{name}: expected no readable edits"
        assert parsed.edits == []
    else:
        assert parsed.error is None, f"{name}: {parsed.error}"
    assert [edit_fields(e) for e in parsed.edits] == [edit_fields_of(e) for e in expect["edits"]]
    assert len(parsed.dropped) == expect.get("dropped_by_parser", 0), name


@pytest.mark.parametrize("name", NAMES)
def test_hygiene_keeps_the_real_rules_and_names_what_is_wrong_with_the_rest(name: str) -> None:
    raw, spec = load(name)
    context, expect = spec["context"], spec["expect"]
    parsed = parse_reply(raw, target=context["target"], budget=context["budget"])
    kept, rejected = check_hygiene(
        parsed.edits,
        failing_checks=failing_checks(context),
        task_prompts=context["task_prompts"],
        current_rules=context["rules"],
        max_chars=500,
    )
    reasons = {o.edit.content: o.reason for o in rejected}
    expected_kept = [edit_fields_of(e) for e in expect["kept"]]
    ok = ([edit_fields(e) for e in kept] == expected_kept
          and set(reasons) == set(expect["rejected"])
          and all(words in reasons[c] for c, words in expect["rejected"].items()))
    check_known_gap(name, "hygiene", as_expected=ok)
    assert [edit_fields(e) for e in kept] == expected_kept, name
    assert set(reasons) == set(expect["rejected"]), name
    for content, words in expect["rejected"].items():
        assert words in reasons[content], f"{name}: {content!r} rejected for {reasons[content]!r}"
