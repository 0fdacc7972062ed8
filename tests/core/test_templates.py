"""Format templates: a short answer skeleton kept as one fenced block in the learned block."""

from __future__ import annotations

import pytest

from gitsleep.core import documents as docs
from gitsleep.core import reflect, skeleton
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import EDIT_OPS, Check, Edit
from gitsleep.core.proposals import EDITS_SCHEMA, parse_reply

IMPACT = Check("section_present", "Impact")
SEVERITY = Check("regex", "Severity:\\s*[1-4]\\b")
SHORT = Check("max_chars", 700)
SKELETON = "## Impact\n<who was affected>\nSeverity: <1-4>"
DOC = "---\nname: x\n---\r\n# Notes\r\n\r\nWrite notes.  \r\n"


def block_of(text: str) -> str:
    return docs.learned_block_text(text)


def test_template_is_an_edit_op_the_schema_and_parser_accept():
    assert "template" in EDIT_OPS
    assert "template" in EDITS_SCHEMA["properties"]["edits"]["items"]["properties"]["op"]["enum"]
    raw = '{"edits": [{"op": "template", "content": "## Impact\\n<who>\\nSeverity: 1"}]}'
    parsed = parse_reply(raw, target="skill", budget=4)
    assert [(e.op, e.content) for e in parsed.edits] == [
        ("template", "## Impact\n<who>\nSeverity: 1")]


def test_a_template_is_kept_intact_as_one_fenced_block_and_bytes_outside_survive():
    text, outcomes = docs.apply_edits(DOC, [Edit("add", "Keep it short."),
                                            Edit("template", SKELETON)])
    assert [o.status for o in outcomes] == ["applied", "applied"]
    assert docs.outside_block(text) == DOC + "\r\n"  # the separator line before a new block
    inner = block_of(text)
    assert "```\r\n## Impact\r\n<who was affected>\r\nSeverity: <1-4>\r\n```\r\n" in inner
    assert "- ## Impact" not in inner
    assert docs.learned_rules(text) == ["Keep it short."]
    assert docs.learned_template(text) == SKELETON


def test_a_second_template_replaces_the_first_and_rules_stay_above_it():
    text, _ = docs.apply_edits("# Doc\n", [Edit("template", SKELETON)])
    text, outcomes = docs.apply_edits(text, [Edit("template", "## Impact\n- <who>\nSeverity: 2"),
                                             Edit("add", "Be brief.")])
    assert [o.status for o in outcomes] == ["applied", "applied"]
    assert docs.learned_template(text) == "## Impact\n- <who>\nSeverity: 2"
    assert text.count("```") == 2
    assert docs.learned_rules(text) == ["Be brief."]  # the bullet inside the fence is no rule
    assert text.index("- Be brief.") < text.index("```")
    assert docs.block_problems(text, max_lines=1, max_chars=4000) == []


def test_a_template_over_the_size_cap_or_with_a_fence_is_unmatched():
    _text, outcomes = docs.apply_edits("# Doc\n", [Edit("template", "x" * 300)], max_chars=200)
    assert outcomes[0].status == "unmatched"
    _text, outcomes = docs.apply_edits("# Doc\n", [Edit("template", "```\n## A\n```")])
    assert outcomes[0].status == "unmatched"


def test_template_lines_are_derived_from_the_structural_failing_checks():
    assert skeleton.derive([IMPACT, SEVERITY, SHORT]) == \
        "## Impact\n<write the impact here>\nSeverity: <1-4>"  # never one value
    assert skeleton.derive([Check("regex", "[Cc]onfidence\\s*[:=]")]) == "Confidence: <text>"
    assert skeleton.derive([SHORT, Check("no_refusal")]) is None


def hygiene(edits, failing=(IMPACT, SEVERITY), prompts=(), template=None):
    return check_hygiene(list(edits), failing_checks=list(failing), task_prompts=list(prompts),
                         current_rules=[], current_template=template)


def test_hygiene_keeps_a_template_whole_with_its_typed_placeholder_unfilled():
    kept, rejected = hygiene([Edit("template", "## Impact\n<who was affected>\nSeverity: <1-4>")])
    assert rejected == []
    assert kept[0].op == "template"
    assert kept[0].content == "## Impact\n<who was affected>\nSeverity: <1-4>"


@pytest.mark.parametrize(("content", "why"), [
    ("## Background\n<anything>", "names nothing a failing check needs"),
    ("## Impact\n" + "\n".join(f"line {i}" for i in range(20)), "lines"),
    ("## Impact\n```\nx", "fence"),
    ("## Impact\nSeverity: <1-4>\nAt 2024-03-01 14:00 the API failed", "date or time"),
    ("## Impact\n<who was affected>\nSeverity: 1", "accepts a choice"),
    ("## Impact\nThe checkout API returned HTTP 500 for 25 minutes after a bad deploy",
     "copies a task prompt"),
])
def test_hygiene_rejects_templates_that_are_not_general_skeletons(content, why):
    prompts = ["The checkout API returned HTTP 500 for 25 minutes after a bad deploy",
               "Mail was late", "Search was stale"]
    kept, rejected = hygiene([Edit("template", content)], prompts=prompts)
    assert kept == []
    assert why in rejected[0].reason


def test_one_template_per_proposal_and_none_that_is_already_there():
    second = Edit("template", "## Impact\nSeverity: <1-4>\n<details>")
    kept, rejected = hygiene([Edit("template", SKELETON), second])
    assert [e.content for e in kept] == [SKELETON]
    assert "one template" in rejected[0].reason
    kept, rejected = hygiene([Edit("template", SKELETON)], template=SKELETON)
    assert kept == [] and "already" in rejected[0].reason


def test_the_reflection_prompt_offers_a_derived_template_when_a_check_is_about_structure():
    assert '"op": "template"' in reflect.SYSTEM
    counts = reflect.Counter({IMPACT: 3, SEVERITY: 2})
    prompt = reflect.build_prompt(reflect.Evidence("skill", "# Skill\n", [], [], {}, []), 4,
                                  counts=counts)
    assert "template" in prompt
    assert '"content": "## Impact\\n<write the impact here>\\nSeverity: <1-4>"' in prompt
    plain = reflect.build_prompt(reflect.Evidence("skill", "# Skill\n", [], [], {}, []), 4,
                                 counts=reflect.Counter({SHORT: 3}))
    assert '"op": "template", "content"' not in plain.split("Failing checks")[1]


def test_an_epoch_accepts_a_template_an_agent_copies_and_the_report_shows_it():
    import json

    from gitsleep import report
    from gitsleep.base.redact import Redactor
    from gitsleep.core.epoch import run_epoch
    from gitsleep.core.models import Answer, EpochSettings, Judge, Task
    from gitsleep.core.ports import Backend, ModelCall

    class CopiesSkeletons(Backend):
        """An agent that copies a fenced skeleton but ignores rules in words."""

        name = "scripted"

        def complete(self, call: ModelCall) -> Answer:
            if call.purpose == "propose":
                derived = call.messages[-1][1].split('"op": "template", "content": ')[1]
                content = json.loads(derived.split(', "anchor"')[0])
                edit = {"op": "template", "content": content, "rationale": "copy this"}
                return Answer(json.dumps({"edits": [edit]}), None, 1, 1)
            template = docs.learned_template(call.messages[0][1])
            return Answer(template.replace("<write the impact here>", "All users.")
                          .replace("<1-4>", "2") if template else "It broke.", None, 1, 1)

    judge = Judge("rule", (IMPACT, SEVERITY))
    tasks = ([Task(f"t{i}", f"Summarise outage {i}.", "train", judge) for i in range(3)]
             + [Task(f"v{i}", f"Summarise incident {i}.", "val", judge) for i in range(2)]
             + [Task(f"h{i}", f"Summarise event {i}.", "test", judge) for i in range(2)])
    settings = EpochSettings(model="a", optimizer_model="o", judge_model="o", rounds=1,
                             proposals=1, workers=1)
    result = run_epoch(tasks, {"skill": "# Notes\n", "memory": None}, settings,
                       CopiesSkeletons(), skill="notes")
    assert result.decision == "accepted" and result.test.candidate == 1.0
    after = result.documents["skill"][1]
    assert docs.learned_template(after) == \
        "## Impact\n<write the impact here>\nSeverity: <1-4>"
    assert docs.learned_rules(after) == []
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    assert "**template**" in body


def test_a_template_line_that_instructs_is_a_rule_in_words_even_when_it_quotes_a_line():
    """Real-model night (outage-summary seed 1, Qwen2.5-Coder 1.5B): the
    accepted template was the one line `Every answer must have a line 'Severity: <1-4>'`.
    It quotes a line the check wants, so it passed as a shape, and the agent was shown an
    instruction to copy as its answer. A template line that tells the agent what to do is a
    rule in words: the template becomes the skeleton of the checks it names."""
    kept, rejected = hygiene([Edit("template", "Every answer must have a line 'Severity: <1-4>'")])
    assert rejected == []
    assert kept[0].content == "Severity: <1-4>"
    assert "rebuilt as the skeleton" in kept[0].rationale
    # a skeleton whose placeholder asks something is still a shape, kept as written
    kept, rejected = hygiene([Edit("template", "## Impact\n<say who must act>\nSeverity: <1-4>")])
    assert rejected == [] and kept[0].content == "## Impact\n<say who must act>\nSeverity: <1-4>"


def test_a_template_written_as_a_rule_becomes_the_skeleton_of_the_checks_it_names():
    kept, rejected = hygiene([Edit("template", "Always give the impact and a severity level.")])
    assert rejected == []
    assert kept[0].content == "## Impact\n<write the impact here>\nSeverity: <1-4>"
    assert "rebuilt as the skeleton" in kept[0].rationale
