"""Rules a small agent obeys: a bare heading or label is turned into an imperative
sentence quoting what a failing check wants, or rejected with a reason the retry reads."""

from __future__ import annotations

from gitsleep.core import check_text, reflect
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.models import Check, Edit

KEY_RISKS = Check("section_present", "Key Risks")
CONFIDENCE = Check("regex", "[Cc]onfidence\\s*[:=]")
IMPACT = Check("section_present", "Impact")
SEVERITY = Check("regex", "Severity:\\s*[1-4]\\b")
INTERNAL = Check("contains", "Internal only")


def hygiene(contents, failing, rules=()):
    return check_hygiene([Edit("add", c) for c in contents], failing_checks=list(failing),
                         task_prompts=[], current_rules=list(rules))


def test_a_check_gives_an_imperative_rule_that_quotes_the_text_it_wants():
    assert check_text.rule_for_check(KEY_RISKS) == \
        'Every answer must have a section headed "## Key Risks".'
    assert check_text.rule_for_check(SEVERITY) == \
        'Every answer must have a line "Severity: <1-4>", with <1-4> chosen for each task.'
    assert check_text.rule_for_check(INTERNAL) == \
        'Every answer must contain the text "Internal only".'
    assert check_text.rule_for_check(Check("max_chars", 300)) is None


def test_bare_headings_and_labels_become_rules_quoting_the_failing_check():
    kept, rejected = hygiene(["## Key Risks", "- ## Confidence:", "Severity: <1-4>"],
                             [KEY_RISKS, CONFIDENCE, SEVERITY])
    assert rejected == []
    assert [e.content for e in kept] == [
        'Every answer must have a section headed "## Key Risks".',
        'Every answer must have a line "Confidence: <text>", with <text> chosen for each task.',
        'Every answer must have a line "Severity: <1-4>", with <1-4> chosen for each task.',
    ]
    assert all("bare" in e.rationale for e in kept)


def test_a_bare_label_that_fixes_a_value_the_check_leaves_open_is_rejected():
    # `Severity: 3` became 'Every answer must have a line "Severity: 3".'
    kept, rejected = hygiene(["Severity: 3"], [SEVERITY])
    assert kept == []
    assert "fixes 'Severity: 3' for every answer" in rejected[0].reason
    assert "Severity: <1-4>" in rejected[0].reason


def test_a_multi_line_fragment_edit_is_rewritten_line_by_line():
    kept, rejected = hygiene(["## Key Risks\n### Internal only"], [KEY_RISKS, INTERNAL])
    assert rejected == []
    assert kept[0].content == ('Every answer must have a section headed "## Key Risks".\n'
                               'Every answer must contain the text "Internal only".')


def test_two_fragments_run_together_on_one_line_become_two_rules():
    # Recorded from the 1.5B optimizer on outage-summary (content "Severity: 1 ## Impact"):
    # read as one label, it became the rule 'a line "Severity: 1 ## Impact"', which the gate
    # took because it names both things the checks want.
    # (Now with the typed placeholder: `Severity: 1 ## Impact` fixes a value, see below.)
    kept, rejected = hygiene(["Severity: <1-4> ## Impact"], [IMPACT, SEVERITY])
    assert rejected == []
    assert kept[0].content == ('Every answer must have a line "Severity: <1-4>", with <1-4> '
                               'chosen for each task.\n'
                               'Every answer must have a section headed "## Impact".')
    kept, rejected = hygiene(["Severity: 1 ## Impact"], [IMPACT, SEVERITY])
    assert kept == [] and "accepts a choice" in rejected[0].reason


def test_a_fragment_no_failing_check_asks_for_is_rejected_with_a_rule_to_write_instead():
    kept, rejected = hygiene(["## Background", "Owner: team"], [IMPACT])
    assert kept == []
    for outcome in rejected:
        assert "bare heading or label" in outcome.reason
        assert 'Every answer must have a section headed "## Impact".' in outcome.reason


def test_real_sentences_are_left_as_written():
    rules = ['Use "Severity: 1" for outages and "Severity: 4" for typos',
             'Use the heading "## Impact"',
             "Keep answers under 300 characters", "Start every note with a one-line summary."]
    kept, rejected = hygiene(rules, [IMPACT, SEVERITY])
    assert rejected == []
    assert [e.content for e in kept] == rules


def test_a_rewritten_fragment_that_is_already_a_rule_is_a_duplicate():
    kept, rejected = hygiene(["## Impact"], [IMPACT],
                             rules=['Every answer must have a section headed "## Impact".'])
    assert kept == []
    assert "duplicates an existing rule" in rejected[0].reason


def test_the_reflection_prompt_teaches_imperative_rules_and_shows_one_per_check():
    assert "imperative sentence" in reflect.SYSTEM
    assert "bare heading" in reflect.SYSTEM
    prompt = reflect.build_prompt(reflect.Evidence("skill", "# Skill\n", [], [], {}, []), 4,
                                  counts=reflect.Counter({IMPACT: 2, SEVERITY: 1}))
    assert 'as a rule: Every answer must have a section headed "## Impact".' in prompt
    assert ('as a rule: Every answer must have a line "Severity: <1-4>", with <1-4> chosen '
            'for each task.') in prompt
