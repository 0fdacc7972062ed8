"""Groups of train tasks by what their checks want, and pins and hedges judged by them."""

from __future__ import annotations

from gitsleep.core import groups
from gitsleep.core.models import Check, Judge, Task

IMPACT = Check("section_present", "Impact")


def task(task_id: str, *checks: Check, split: str = "train", prompt: str = "p") -> Task:
    return Task(task_id, prompt, split, Judge("rule", checks=(IMPACT, *checks)))  # type: ignore[arg-type]


def triage() -> list[Task]:
    high, low = Check("regex", r"Severity:\s*[12]\b"), Check("regex", r"Severity:\s*[34]\b")
    return [task("t1", high), task("t2", low), task("t3", high), task("t4", low)]


def test_tasks_whose_regex_wants_another_class_form_two_groups_of_one_label() -> None:
    keys = groups.varying_keys(triage())
    assert [k.key for k in keys] == ["label:severity"]  # op:regex splits them alike: once
    assert [g.task_ids for g in keys[0].groups] == [("t1", "t3"), ("t2", "t4")]


def test_a_check_every_task_shares_or_one_only_some_tasks_have_is_no_choice() -> None:
    tasks = [task("t1", Check("contains", "Internal only")), task("t2"), task("t3")]
    assert groups.varying_keys(tasks) == []


def test_a_classifier_whose_labels_differ_is_grouped_by_its_op() -> None:
    tasks = [task("t1", Check("regex", "^fix: ")), task("t2", Check("regex", "^docs: ")),
             task("t3", Check("regex", "^fix: "))]
    (key,) = groups.varying_keys(tasks)
    assert key.key == "op:regex"
    assert [g.task_ids for g in key.groups] == [("t1", "t3"), ("t2",)]


def test_unrelated_texts_some_tasks_want_are_not_a_choice() -> None:
    tasks = [task("t1", Check("contains", "Owner:"), Check("contains", "Cost:")),
             task("t2", Check("contains", "Owner:")), task("t3", Check("contains", "Cost:"))]
    assert groups.varying_keys(tasks) == []


def test_a_val_task_falls_in_the_group_its_checks_name() -> None:
    (key,) = groups.varying_keys(triage())
    val = task("v1", Check("regex", r"Severity:\s*[34]\b"), split="val")
    assert groups.group_of(key, val) == key.groups[1]


VERDICT = [task("t1", Check("regex", r"(?i)verdict\W*reject")),
           task("t2", Check("regex", r"(?i)verdict\W*approve")),
           task("t3", Check("regex", r"(?i)verdict\W*reject"))]


def test_a_pin_is_decided_by_the_checks_whatever_its_spelling() -> None:
    keys = groups.varying_keys(VERDICT)
    for rule in ("Every answer must contain the text 'Verdictreject'.",
                 'Always end with "VERDICT - reject".', "Verdict: reject"):
        assert "a pin" in groups.value_problem(rule, keys), rule


def test_a_line_per_value_is_a_hedge() -> None:
    keys = groups.varying_keys([task("t1", Check("regex", "(?m)^fix: ")),
                                task("t2", Check("regex", "(?m)^docs: "))])
    assert "a hedge" in groups.value_problem("fix: a\ndocs: a", keys, template=True)
    assert "a hedge" in groups.value_problem('Always include "fix: a" and "docs: a".', keys)


def test_a_rule_that_says_when_each_value_fits_is_kept() -> None:
    keys = groups.varying_keys(VERDICT)
    for rule in ('When the changelog mentions a removal, write "Verdict: reject"; '
                 'otherwise write "Verdict: approve".',
                 'If the update drops an API, end with "Verdict: reject".'):
        assert groups.value_problem(rule, keys) == "", rule


def test_a_condition_on_one_value_does_not_cover_another_named_without_one() -> None:
    keys = groups.varying_keys(VERDICT)
    rule = 'When unsure, think twice. Always write "Verdict: reject".'
    assert "a pin" in groups.value_problem(rule, keys)


def test_a_typed_slot_names_no_value_and_a_template_value_is_never_conditional() -> None:
    keys = groups.varying_keys(VERDICT)
    assert groups.value_problem("Verdict: <approve|reject>", keys, template=True) == ""
    assert "a pin" in groups.value_problem("Verdict: reject if unsure", keys, template=True)


# -- an answer that carries another group's value is wrong -------------------------------

REJECT, APPROVE = Check("regex", r"(?i)verdict\W*reject"), Check("regex", r"(?i)verdict\W*approve")


def sql_tasks(split: str = "val") -> list[Task]:
    return [task("drop", REJECT, split=split), task("select", APPROVE, split=split),
            task("delete", REJECT, split=split), task("insert", APPROVE, split=split)]


def test_an_answer_carrying_another_groups_value_is_counted_under_its_own_group() -> None:
    keys = groups.varying_keys(sql_tasks("train"))
    val = sql_tasks()
    others = groups.other_wants(keys, val)
    answers = {"drop": ["## Impact\nVerdict: reject"],
               "select": ["## Impact\nVerdict: approve\nVerdict: reject"],  # its own and more
               "delete": ["## Impact\nVerdict: reject"],
               "insert": ["## Impact\nVerdict: reject"]}
    named = groups.named_groups(keys, val)
    assert groups.wrong_counts(named, others, answers) == {
        "regex (?i)verdict\\W*reject": 0, "regex (?i)verdict\\W*approve": 2}


def test_an_answer_that_lists_a_scale_carries_no_wrong_value() -> None:
    high, low = Check("regex", r"(?i)severity\W*[12]\b"), Check("regex", r"(?i)severity\W*[34]\b")
    train = [task("t1", high), task("t2", low), task("t3", high)]
    val = [task("v1", low, split="val"), task("v2", high, split="val")]
    keys = groups.varying_keys(train)
    others = groups.other_wants(keys, val)
    named = groups.named_groups(keys, val)
    scale = {"v1": ["Severity: 1 = outage, 4 = cosmetic\nSeverity: 4"],
             "v2": ["Severity scale: 1 - outage, 2 - degraded, 3 - minor, 4 - cosmetic\n"
                    "Severity: 2"]}
    assert groups.wrong_counts(named, others, scale) == {"regex " + high.text: 0,
                                                        "regex " + low.text: 0}
    pinned = {"v1": ["Severity: 1"], "v2": ["Severity: 2"]}
    assert groups.wrong_counts(named, others, pinned)["regex " + low.text] == 1


def test_a_commit_type_answer_of_another_type_is_wrong() -> None:
    kinds = ("feat", "fix", "docs")
    checks = {k: Check("regex", rf"(?m)\A\s*{k}(\([^)]*\))?!?: \S") for k in kinds}
    train = [Task(f"t{i}", "p", "train", Judge("rule", (checks[k],)))
             for i, k in enumerate(kinds * 2)]
    val = [Task(f"v-{k}", "p", "val", Judge("rule", (checks[k],))) for k in kinds]
    keys = groups.varying_keys(train)
    counts = groups.wrong_counts(groups.named_groups(keys, val), groups.other_wants(keys, val),
                                 {f"v-{k}": ["feat: add a flag"] for k in kinds})
    assert sorted(counts.values()) == [0, 1, 1]


def test_a_quoted_line_is_read_as_the_start_of_the_answer_a_check_anchors_on() -> None:
    kinds = ("feat", "fix", "docs")
    checks = {k: Check("regex", rf"(?m)\A\s*{k}(\([^)]*\))?!?: \S") for k in kinds}
    train = [Task(f"t{i}", "p", "train", Judge("rule", (checks[k],)))
             for i, k in enumerate(kinds * 2)]
    keys = groups.varying_keys(train)
    assert "a pin" in groups.value_problem('Always start with "feat: add a flag".', keys)
