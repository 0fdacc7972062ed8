"""Hygiene: which parsed edits read as real rules, and the reason given for the rest."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitsleep.core import reflect
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import Check, Edit
from gitsleep.core.proposals import (
    EXAMPLE_ANCHOR,
    PROMPT_EXAMPLE_REPLY,
    PROMPT_EXAMPLE_TEXTS,
    parse_reply,
)
from gitsleep.core.regex_literal import sample_fill
from tests.support.hostile_edits import INVISIBLE_CONTENTS, LINK_CONTENTS, SAFE_CONTENTS
from tests.support.replies import SEVERITY, reply


def hygiene(edits, *, failing=(), prompts=(), rules=(), max_chars=500):
    return check_hygiene(
        list(edits),
        failing_checks=list(failing),
        task_prompts=list(prompts),
        current_rules=list(rules),
        max_chars=max_chars,
    )


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


def test_multi_line_content_keeps_a_typed_placeholder_a_check_leaves_open():
    parsed = parse_reply(reply("multi_line_content.txt"), target="skill", budget=4)
    assert parsed.edits[0].content == "## Impact\nSeverity: <1-4>"

    kept, rejected = hygiene(parsed.edits, failing=[Check("section_present", "Impact"),
                                                    Check("regex", SEVERITY)])

    assert rejected == []
    # never filled with one value; each bare line rewritten as a rule
    assert kept[0].content == ('Every answer must have a section headed "## Impact".\n'
                               'Every answer must have a line "Severity: <1-4>", with <1-4> '
                               'chosen for each task.')
    assert re.search(SEVERITY, sample_fill(kept[0].content.splitlines()[1]))
    assert "placeholder filled" not in kept[0].rationale


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
    missing = Edit("delete", anchor="max_chars 700")

    kept, rejected = hygiene([real, echo, missing], rules=["Keep answers under 600 characters"])

    assert kept == [real]
    assert [r.reason for r in rejected] == [
        "anchor is a placeholder (<rule>), not a learned rule",
        "anchor 'max_chars 700' names no rule of the block: nothing to delete",
    ]



# --------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------
# Answers to one task, told in new words
# --------------------------------------------------------------------------------------

INCIDENT_PROMPTS = [
    "Write incident notes: The checkout API returned HTTP 500 for 25 minutes after a bad deploy.",
    "Write incident notes: Password reset emails were delayed by two hours.",
    "Write incident notes: The EU region had 3 seconds of extra latency for an hour.",
    "Write incident notes: The status page was down for 15 minutes during a DNS outage.",
]


def test_an_edit_with_the_facts_of_one_task_is_rejected_and_says_which():
    edit = Edit("add", "Mention that checkout failed with HTTP 500 errors")

    kept, rejected = hygiene([edit], prompts=INCIDENT_PROMPTS)

    assert kept == []
    assert rejected[0].reason == ("content answers one task instead of stating a rule: "
                                  "checkout, http, 500 come from a single task prompt")


def test_words_the_tasks_share_or_a_check_needs_are_not_one_tasks_facts():
    edits = [
        Edit("add", "Start incident notes with the minutes of impact"),  # every/several prompts
        Edit("add", "Name the EU region when latency is involved"),  # the check asks for it
    ]
    failing = [Check("contains", "EU region latency")]

    assert hygiene(edits, prompts=INCIDENT_PROMPTS, failing=failing) == (edits, [])


def test_with_fewer_than_three_prompts_no_word_is_taken_for_one_tasks_fact():
    edit = Edit("add", "Mention that checkout failed with HTTP 500 errors")

    assert hygiene([edit], prompts=INCIDENT_PROMPTS[:2]) == ([edit], [])


@pytest.mark.parametrize(
    "content",
    [
        "The incident affected the engineering team and support staff on the call.",
        "This issue likely involved a network error. The rollback is crucial.",
        "- **Action Taken**: The team implemented a new configuration that was tested.",
        "The team worked to resolve the problem and ensure that it did not reoccur.",
        "The outage only affected every user in one region.",
    ],
)
def test_a_past_tense_account_of_one_case_is_rejected(content):
    kept, rejected = hygiene([Edit("add", content)])

    assert kept == []
    assert "tells what happened in one case" in rejected[0].reason


@pytest.mark.parametrize(
    "content",
    [
        "Implement robust checks against unauthorized access to stored data.",  # imperative
        "The answer must say what failed and when it started.",  # a modal asks something
        "The last line names who owned the fix.",  # present tense: a format, not a story
        "The brief ended early.",  # too short to tell
    ],
)
def test_instructions_and_formats_are_not_accounts_of_one_case(content):
    edit = Edit("add", content)

    assert hygiene([edit]) == ([edit], [])


# --------------------------------------------------------------------------------------
# Contradictions a line-by-line reading misses
# --------------------------------------------------------------------------------------

KEY_RISKS = Check("section_present", "Key Risks")


def test_leaving_this_section_out_after_naming_it_contradicts_the_check():
    edit = Edit("add", "## Key Risks\n**Note:** This section should not be present in the answer.")

    kept, rejected = hygiene([edit], failing=[KEY_RISKS])

    assert kept == []
    assert rejected[0].reason.startswith("content contradicts a failing check")


def test_a_negation_about_something_else_in_the_section_is_kept():
    edit = Edit("add", "## Key Risks\nDo not put the summary text in this section.")

    kept, rejected = hygiene([edit], failing=[KEY_RISKS])

    assert rejected == []
    assert kept[0].content == ('Every answer must have a section headed "## Key Risks".\n'
                               "Do not put the summary text in this section.")


def test_a_replace_that_takes_away_what_a_failing_check_needs_contradicts_it():
    rules = ["Use the heading ## Key Risks"]
    away = Edit("replace", "## Risk Mitigation Strategies", "Use the heading ## Key Risks")
    keeps = Edit("replace", "Use the heading ## Key Risks with two bullets",
                 "Use the heading ## Key Risks")

    kept, rejected = hygiene([away, keeps], failing=[KEY_RISKS], rules=rules)

    assert kept == [keeps]
    assert rejected[0].edit == away and "takes away what it needs" in rejected[0].reason


def test_replacing_a_rule_that_forbids_what_a_check_needs_is_kept():
    rules = ["Never write a Key Risks section"]
    edit = Edit("replace", "Close with a short list of risks", "Never write a Key Risks section")

    assert hygiene([edit], failing=[KEY_RISKS], rules=rules) == ([edit], [])


def test_a_replace_of_a_rule_the_block_lacks_is_kept_as_an_add_and_says_so():
    edits = [Edit("replace", "Severity: <1-4>", "Severity", "the regex wants it"),
             Edit("replace", "Keep answers short", "Be brief", "")]

    kept, rejected = hygiene(edits, rules=["Be brief"], failing=[Check("regex", SEVERITY)])

    assert rejected == []
    assert kept[0].content == \
        'Every answer must have a line "Severity: <1-4>", with <1-4> chosen for each task.'
    assert [(e.op, e.anchor) for e in kept] == [("add", ""), ("replace", "Be brief")]
    assert kept[0].rationale.startswith("the regex wants it")
    assert "(a replace of 'Severity', not a rule of the block, read as add)" in kept[0].rationale


@pytest.mark.parametrize(
    ("content", "when"),
    [
        ("## Timeline\n### Start Time\n2022-01-15T14:00:00Z", "2022-01-15T14:00:00Z"),
        ("Open the timeline at 8:00 AM with the first alert", "8:00 AM"),
        ("Date every note January 1st, 2023", "January 1st, 2023"),
    ],
)
def test_a_specific_date_or_time_no_check_asks_for_is_one_answers_detail(content, when):
    kept, rejected = hygiene([Edit("add", content)])

    assert kept == []
    assert rejected[0].reason.startswith(f"content names a specific date or time ({when})")


def test_a_date_a_failing_check_asks_for_is_kept():
    edit = Edit("add", "Start the timeline with a date such as 2024-05-01")

    assert hygiene([edit], failing=[Check("regex", r"\d{4}-\d{2}-\d{2}")]) == ([edit], [])


# --------------------------------------------------------------------------------------
# hostile text: invisible characters and script links
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", INVISIBLE_CONTENTS, ids=repr)
def test_content_with_an_invisible_character_is_rejected_and_says_which(content):
    kept, rejected = hygiene([Edit("add", content)])
    assert kept == []
    assert re.search(r"(invisible character \(U\+[0-9A-F]{4,5} |control characters)",
                     rejected[0].reason), rejected[0].reason


@pytest.mark.parametrize("content", LINK_CONTENTS, ids=repr)
def test_content_with_a_script_or_data_link_is_rejected(content):
    kept, rejected = hygiene([Edit("add", content), Edit("replace", content, "Keep it short")],
                             rules=["Keep it short"])
    assert kept == []
    assert all(re.search(r"(javascript|vbscript|data): link", o.reason) for o in rejected), [
        o.reason for o in rejected]


@pytest.mark.parametrize("content", SAFE_CONTENTS, ids=repr)
def test_rules_that_only_look_like_hostile_text_are_kept(content):
    kept, rejected = hygiene([Edit("add", content)])
    assert [e.content for e in kept] == [content], rejected


def test_a_rule_that_copies_the_prompts_scaffolding_is_refused() -> None:
    """Real-model night (outage-summary seed 2, Qwen2.5-Coder 1.5B): the
    accepted rule was `Every answer must have a section headed 'Impact' and a line that
    passes: ## Impact`. "a line that passes:" is the reflection prompt's own wording around
    its example, not something the agent can act on; a reviewer would not merge it."""
    impact = Check("section_present", "Impact")
    copied = ["Every answer must have a section headed 'Impact' and a line that passes: ## Impact",
              "Add a line of the shape it wants: Severity: <1-4>",
              'As a rule: Every answer must have a section headed "## Impact".']
    kept, rejected = hygiene([Edit("add", c) for c in copied], failing=[impact, SEVERITY])
    assert kept == []
    assert all("prompt's wording" in o.reason for o in rejected), [o.reason for o in rejected]
    # the same rule in its own words is kept
    kept, _ = hygiene([Edit("add", "Every answer must have a section headed 'Impact'.")],
                      failing=[impact])
    assert [e.content for e in kept] == ["Every answer must have a section headed 'Impact'."]


# -- gitsleep's own rewrites pass every guard an optimizer's edit passes ------------------

COMMIT_TYPES = ("feat", "fix", "docs")


def commit_type_tasks() -> list:
    """A classifier of changes: each train task's one regex wants its own commit type."""
    from gitsleep.core.models import Judge, Task

    return [Task(f"t{i}", f"Write the commit message for change {i}.", "train",
                 Judge("rule", (Check("regex", rf"(?m)\A\s*{kind}(\([^)]*\))?!?: \S"),)))
            for i, kind in enumerate(COMMIT_TYPES * 2)]


def commit_type_hygiene(edits: list[Edit]):
    from gitsleep.core import groups

    tasks = commit_type_tasks()
    checks = [c for t in tasks for c in t.judge.checks]
    return check_hygiene(edits, failing_checks=list(dict.fromkeys(checks)),
                         task_prompts=[t.prompt for t in tasks], current_rules=[],
                         task_checks=checks, varying=groups.varying_keys(tasks),
                         train_tasks=tasks)


def test_a_template_rebuilt_from_words_is_refused_as_the_same_template_written_out() -> None:
    # the real night's reply: a template in words, rebuilt as the failing checks' skeleton
    in_words = Edit("template", "Every answer must start with the commit type: feat, fix "
                                "or docs.")
    written_out = Edit("template", "feat: add\nfix: add\ndocs: add")
    for edit in (in_words, written_out):
        kept, refused = commit_type_hygiene([edit])
        assert kept == [], edit
        # `\A` reads the first line only: the rebuilt lines pin `feat` for every answer
        assert "a pin" in refused[0].reason or "a hedge" in refused[0].reason


def test_a_rebuilt_template_that_chooses_nothing_is_still_kept() -> None:
    summary = Check("section_present", "Summary")
    kept, refused = check_hygiene(
        [Edit("template", "Every answer must have a section headed Summary.")],
        failing_checks=[summary], task_prompts=[], current_rules=[])
    assert refused == [] and kept[0].content.startswith("## Summary")


# -- an edit that echoes gitsleep's prompt or the document it edits ----------------------

WRITER_DOC = ("---\nname: precise-writer\ndescription: Writes precise answers.\n---\n"
              "# Precise writer\n\nAnswer in at most three sentences and name every number "
              "you rely on.\n")


def echo_hygiene(content: str):
    return check_hygiene([Edit("add", content)], failing_checks=[Check("max_chars", "300")],
                         task_prompts=[], current_rules=[], document=WRITER_DOC,
                         own_wording=reflect.OWN_WORDING)


@pytest.mark.parametrize(("content", "why"), [
    # seen on a real night on an IFBench slice, each as a rule
    ("A check program must pass (how it is run is not shown; what it printed is in the "
     "Judge line of each failing task)", "gitsleep's own prompt"),
    ("Find what in the tasks separates the groups and write one rule that names that "
     "condition for each value.", "gitsleep's own prompt"),
    ("Answer in at most three sentences and name every number you rely on.",
     "the document already says"),
    ("precise-writer", "the skill's name"),
    ("Precise writer.", "the skill's name"),
])
def test_an_edit_that_echoes_the_prompt_the_document_or_the_skill_name_is_refused(
        content: str, why: str) -> None:
    kept, refused = echo_hygiene(content)
    assert kept == [] and why in refused[0].reason


@pytest.mark.parametrize("content", [
    "Every answer must have a section headed \"## Summary\".",
    "Keep every answer under 300 characters and name the numbers it relies on first.",
    "Write for a precise reader: one claim per sentence.",
])
def test_a_rule_in_its_own_words_beside_the_prompt_and_document_is_kept(content: str) -> None:
    kept, refused = echo_hygiene(content)
    assert refused == [] and len(kept) == 1
