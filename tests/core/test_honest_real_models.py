"""Honesty gaps found by a real-model measurement.

Each fixture under `tests/fixtures/replies/issue25/` is a raw optimizer reply recorded
by `benchmarks/real_model/run.py` (Qwen2.5-Coder 1.5B on a local llama.cpp server) with
the context it was given; the test runs the epoch's two steps on it (`parse_reply`, then
`check_hygiene`) and asserts what a reviewer would want.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import Check, Edit
from gitsleep.core.proposals import parse_reply

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replies" / "issue25"
CONFIDENCE = Check("regex", r"[Cc]onfidence\s*[:=]")  # brief-writer's check: any value


def recorded(name: str) -> tuple[str, dict[str, Any]]:
    raw = (FIXTURES / f"{name}.txt").read_text(encoding="utf-8")
    meta = json.loads((FIXTURES / f"{name}.context.json").read_text(encoding="utf-8"))
    return raw, meta["context"]


def failing(context: dict[str, Any]) -> list[Check]:
    seen: list[Check] = []
    for failure in context["failures"]:
        for op, arg in failure["failed"]:
            if Check(op, arg) not in seen:
                seen.append(Check(op, arg))
    return seen


# A template or a rule that fills a label the check asks no value for (`Confidence: medium`
# for `[Cc]onfidence\\s*[:=]`) is refused (`honesty._free_value_pin`), but for the offline
# simulator: shared/spec/offline-backend.md has it propose exactly `Always include
# "Confidence: medium"`, and the demo's held-out 0.250 -> 1.000 rests on it.


def test_a_recorded_template_that_fixes_confidence_medium_is_refused() -> None:
    # brief-writer seed 0 accepted this template on real models (held-out 0.188 -> 0.354):
    # the check asks for a Confidence line and leaves its value to the agent, and every
    # brief got "medium", whatever the proposal
    raw, context = recorded("brief-writer-seed0-01")
    parsed = parse_reply(raw, target="skill", budget=context["budget"])
    assert [e.op for e in parsed.edits] == ["template"]
    assert "Confidence: medium" in parsed.edits[0].content
    checks = failing(context)
    kept, rejected = check_hygiene(
        parsed.edits,
        failing_checks=checks,
        task_prompts=[],
        current_rules=context["rules"],
        task_checks=checks,
    )
    assert kept == []
    assert len(rejected) == 1
    assert "accepts a choice" in rejected[0].reason
    assert "Confidence: <text>" in rejected[0].reason


@pytest.mark.parametrize("pinned", ["medium", "100%"])
def test_a_rule_that_fixes_a_value_the_check_asks_nothing_about_is_refused(pinned: str) -> None:
    # "100%": what the 1.5B optimizer wrote on brief-writer seed 0 (2026-11-27), accepted by
    # val beside a template and kept out of a commit only by the held-out integrity veto
    kept, rejected = check_hygiene(
        [
            Edit("add", f'Every answer must have a line "Confidence: {pinned}".'),
            Edit(
                "add",
                'End with "Confidence: high" when the numbers are measured, '
                'else "Confidence: low".',
            ),
        ],
        failing_checks=[CONFIDENCE],
        task_prompts=[],
        current_rules=[],
        task_checks=[CONFIDENCE],
    )
    assert [o.edit.content for o in rejected] == [
        f'Every answer must have a line "Confidence: {pinned}".'
    ]
    assert "accepts a choice" in rejected[0].reason and "Confidence: <text>" in rejected[0].reason
    assert [e.content for e in kept] == [
        'End with "Confidence: high" when the numbers are measured, else "Confidence: low".'
    ]


def test_the_offline_simulators_spec_directive_is_the_one_exception() -> None:
    # the offline spec has the simulated optimizer propose `Always include "Confidence:
    # medium"` for this check, and the demo rests on it; a simulated optimizer's edits are
    # checked with that one exception, a real optimizer's never
    edit = Edit("add", 'Always include "Confidence: medium"')
    args = {"failing_checks": [CONFIDENCE], "task_prompts": [], "current_rules": [],
            "task_checks": [CONFIDENCE]}
    kept, rejected = check_hygiene([edit], **args, pins_free_values=True)
    assert kept == [edit] and rejected == []
    kept, rejected = check_hygiene([edit], **args)
    assert kept == [] and "accepts a choice" in rejected[0].reason


def test_the_typed_confidence_line_itself_is_kept() -> None:
    kept, rejected = check_hygiene(
        [Edit("template", "## Key Risks\n<write the key risks here>\nConfidence: <text>")],
        failing_checks=[Check("section_present", "Key Risks"), CONFIDENCE],
        task_prompts=[],
        current_rules=[],
        task_checks=[CONFIDENCE],
    )
    assert rejected == [] and len(kept) == 1


def test_a_recorded_template_that_carries_one_tasks_answer_is_refused() -> None:
    # brief-writer seed 2 at 3e728cc accepted this template (val 0.188 -> 0.292, held-out
    # 0.188 -> 0.125): every brief was to carry the billing migration's impact (train-01)
    raw, context = recorded("brief-writer-seed2-01")
    parsed = parse_reply(raw, target="skill", budget=context["budget"])
    template = next(e for e in parsed.edits if e.op == "template")
    assert "billing process" in template.content
    checks = failing(context)
    kept, _rejected = check_hygiene(
        [template],
        failing_checks=checks,
        task_prompts=context["task_prompts"],
        current_rules=context["rules"],
        task_checks=checks,
    )
    assert kept == []
