from __future__ import annotations

import json

from gitsleep.backends.offline import OfflineBackend, simulate_answer, simulate_proposal
from gitsleep.core.models import Answer
from gitsleep.core.ports import ModelCall


def answer(doc: str, prompt: str = "Write a brief on caching.") -> str:
    return simulate_answer([doc], prompt)


def test_without_directives_a_generic_answer_restates_the_prompt() -> None:
    text = answer("# Skill\nWrite plainly.")
    assert "Write a brief on caching." in text
    assert len(text) > 200  # long enough to fail a tight max_chars
    assert text == answer("# Skill\nWrite plainly.")  # deterministic


def test_directives_shape_the_answer() -> None:
    doc = "\n".join(
        [
            '- Always include "Confidence: medium"',
            "- Start with 'TL;DR'",
            '- End with "-- the team"',
            '- Use the heading "## Key Risks"',
            "Some prose that is ignored.",
        ]
    )
    lines = answer(doc).split("\n")
    assert lines[0] == "TL;DR"
    assert lines[-1] == "-- the team"
    assert "Confidence: medium" in lines
    assert "## Key Risks" in lines


def test_begin_with_is_an_alias_and_case_does_not_matter() -> None:
    assert answer('BEGIN WITH "Hello"').split("\n")[0] == "Hello"


def test_never_say_removes_every_occurrence() -> None:
    text = answer('Never say "request"', prompt="A request about requests")
    assert "request" not in text.lower()


def test_later_directives_win_on_conflict() -> None:
    first = answer('Never say "Internal"\nAlways include "Internal only"')
    assert "Internal only" in first
    second = answer('Always include "Internal only"\nNever say "Internal"')
    assert "Internal" not in second
    assert answer('Start with "A"\nStart with "B"').split("\n")[0] == "B"


def test_length_limit_keeps_directive_lines_first() -> None:
    doc = 'Always include "Confidence: high"\nUse the heading "## Key Risks"\n'
    doc += "Keep answers under 120 characters"
    text = answer(doc)
    assert len(text) <= 120
    assert "Confidence: high" in text and "## Key Risks" in text


def test_length_limit_cuts_even_directive_lines_when_needed() -> None:
    text = answer('Always include "' + "x" * 50 + '"\nKeep answers under 20 characters')
    assert len(text) == 20


def test_memory_document_directives_apply_after_the_skill() -> None:
    text = simulate_answer(['Start with "skill"', 'Start with "memory"'], "p")
    assert text.split("\n")[0] == "memory"


def _failures(*checks: list) -> list[dict]:
    return [{"task_id": f"t{i}", "failed": c} for i, c in enumerate(checks)]


def test_optimizer_proposes_one_directive_per_failure_most_frequent_first() -> None:
    context = {
        "budget": 3,
        "failures": _failures(
            [["contains", "Confidence:"], ["max_chars", 300]],
            [["contains", "Confidence:"], ["section_present", "Key Risks"]],
            [["contains", "Confidence:"], ["not_contains", "maybe"], ["min_chars", 10]],
            [["section_present", "Key Risks"], ["equals", "x"]],
        ),
    }
    edits = json.loads(simulate_proposal(context))["edits"]
    assert [e["content"] for e in edits] == [
        'Always include "Confidence:"',
        'Use the heading "## Key Risks"',
        "Keep answers under 300 characters",
    ]
    assert all(e["op"] == "add" and e["rationale"] for e in edits)


def test_optimizer_skips_rejected_and_existing_rules_and_unfixable_checks() -> None:
    context = {
        "budget": 4,
        "failures": _failures([["contains", "A"], ["contains", "B"], ["min_chars", 5]]),
        "rejected": ['always include "a"'],
        "rules": ['Always include "B"'],
    }
    assert json.loads(simulate_proposal(context))["edits"] == []


def test_optimizer_derives_literal_from_regex() -> None:
    context = {"budget": 4, "failures": _failures([["regex", r"[Cc]onfidence\s*[:=]"]])}
    edits = json.loads(simulate_proposal(context))["edits"]
    assert edits[0]["content"] == 'Always include "Confidence: medium"'


def test_backend_complete_for_each_purpose_reports_tokens() -> None:
    backend = OfflineBackend()
    reply = backend.complete(
        ModelCall("answer", "offline", (("system", 'Start with "Hi"'), ("user", "task")))
    )
    assert reply.ok and reply.text.startswith("Hi")
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    judged = backend.complete(
        ModelCall("judge", "offline", (), context={"rubric": "mentions 'cache' and 'ttl'",
                                                    "answer": "the cache"})
    )
    assert json.loads(judged.text)["score"] == 0.5
    no_quotes = backend.complete(
        ModelCall("judge", "offline", (), context={"rubric": "be good", "answer": "x"})
    )
    assert json.loads(no_quotes.text)["score"] == 0.5
    assert backend.simulated and backend.name == "offline"


def test_the_simulated_condition_judge_answers_by_words() -> None:
    from gitsleep.backends.offline import condition_holds, simulate_conditions

    drop = "Review this SQL statement: DROP TABLE users; it destroys data."
    select = "Review this SQL statement: SELECT 1;"
    assert condition_holds('the task mentions "destroys"', drop)
    assert not condition_holds('the task mentions "destroys"', select)
    assert condition_holds('the task mentions "DELETE" or "DROP"', drop)  # one of them
    assert not condition_holds('the task mentions "DELETE" and "DROP"', drop)
    assert condition_holds("When you answer", select)  # names nothing about a task
    assert condition_holds("When reviewing a statement", select)  # `review`, `statement`
    assert not condition_holds("If in doubt", drop)
    reply = simulate_conditions({"conditions": ['mentions "DROP"', "If in doubt"],
                                 "tasks": [["a", drop], ["b", select]]})
    assert json.loads(reply) == {"1": ["a"], "2": []}
    backend = OfflineBackend()
    answer = backend.complete(ModelCall("judge", "j", (("user", "?"),), context={
        "kind": "conditions", "conditions": ["When you answer"], "tasks": [["a", drop]]}))
    assert json.loads(answer.text or "") == {"1": ["a"]}


def test_the_offline_optimizer_says_its_spec_writes_free_values_and_a_model_does_not() -> None:
    """What hygiene lets through for the simulator is the backend's own declaration; the
    core never asks whether a backend is the simulator."""
    from gitsleep.backends.select import RoutedBackend
    from gitsleep.core.ports import Backend

    offline = OfflineBackend()
    assert offline.writes_free_values("propose")
    assert not offline.writes_free_values("answer")

    class Model(Backend):
        def complete(self, call: ModelCall) -> Answer:
            return Answer(text="")

    assert not Model().writes_free_values("propose")
    routed = RoutedBackend({"answer": offline, "propose": Model()})
    assert not routed.writes_free_values("propose")
    assert RoutedBackend({"propose": offline}).writes_free_values("propose")
