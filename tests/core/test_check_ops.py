"""The table of check ops: one row per op, and the ops users may write are exactly its rows."""

from __future__ import annotations

from typing import get_args

import pytest

from gitsleep.backends.offline import directive_for
from gitsleep.core import check_ops, hygiene
from gitsleep.core.check_ops import OPS, RULE_OPS, CheckOp
from gitsleep.core.check_text import describe_check, example_for_check, passes, rule_for_check
from gitsleep.core.judges import check_passes
from gitsleep.core.models import FORMAT_OPS, Check, Judge
from gitsleep.core.regex_literal import sample_fill
from gitsleep.inputs import schemas
from gitsleep.inputs.tasks import parse_judge

ALL_OPS = {"contains", "not_contains", "regex", "section_present", "section_contains",
           "max_chars", "min_chars", "no_refusal", "equals"}
# programmatic and workspace checks: judged by a program or over the workspace,
# tested in tests/test_command_check.py, tests/test_workspace.py, test_workspace_tasks.py
PROGRAM_AND_WORKSPACE_OPS = {"command", "file_exists", "file_contains", "changed_files_max"}
# trajectory checks: judged over the tools the agent called (tests/core/test_trace.py)
TRACE_OPS = {"tool_called", "tool_not_called", "tool_called_before", "max_tool_calls"}

# (op, arg, an answer that passes, an answer that fails): each through the judge
BEHAVIOUR = [
    ("contains", "Internal only", "Note: INTERNAL ONLY, do not share.", "Public note."),
    ("contains", "Risks", "## Key risks\n- none", "Nothing to see."),
    ("not_contains", "as an AI", "Here is the plan.", "As an AI, I think so."),
    ("not_contains", "TODO", "Done.", "todo: finish"),
    ("regex", r"(?i)severity\s*[:=]\s*[1-4]", "severity = 2", "Severity: 7"),
    ("regex", r"^\d+ items$", "12 items", "a dozen items"),
    ("section_present", "Impact", "## Impact\nlow", "The impact is low."),
    ("section_present", "Owner", "**Owner:** Dana", "```\nOwner: Dana\n```"),
    ("section_contains", "Risk", "## Key Risks\n- none", "Risks are low.\n"),
    ("section_contains", "Next", "Next steps\n---\n- ship", "# Summary\nnext steps: ship"),
    ("max_chars", 10, "short", "far too long an answer"),
    ("max_chars", 3, "abc", "abcd"),
    ("min_chars", 5, "long enough", "tiny"),
    ("min_chars", 1, "x", ""),
    ("no_refusal", None, "Here is the brief.", "I cannot help with that."),
    ("no_refusal", None, "I cannot stress enough how important this is. " * 20, "   "),
    ("equals", "42", "  42\n", "42."),
    ("equals", "Paris France", "Paris   France", "paris france"),
]


def test_every_op_has_a_judge_and_words() -> None:
    assert set(OPS) == ALL_OPS | PROGRAM_AND_WORKSPACE_OPS | TRACE_OPS
    for op, spec in OPS.items():
        assert callable(spec.judge) and callable(spec.describe) and callable(spec.example), op
        if op in ALL_OPS:
            assert spec.describe("x").startswith("the answer must"), op
        elif op in TRACE_OPS:
            assert spec.reads == "trace" and spec.judge_trace is not None, op
            assert spec.judge("search", "search") == (
                False, "judged over the tools the agent called, and this answer has no trace")
        else:
            assert spec.reads == "workspace" or spec.runs_program, op


def test_the_ops_users_may_write_are_the_table() -> None:
    """One home: the Literal, task validation, the JSON schema and the harvest prompt's
    list all name exactly the table's ops (in its order)."""
    assert tuple(OPS) == RULE_OPS
    assert set(get_args(CheckOp)) == set(OPS)
    enum = schemas.tasks_schema()["$defs"]["RuleCheck"]["properties"]["op"]["enum"]
    assert enum == list(OPS)
    assert {op for op, spec in OPS.items() if spec.format_only} == FORMAT_OPS


@pytest.mark.parametrize("op", sorted(ALL_OPS))
def test_task_validation_accepts_each_op_in_the_table(op: str) -> None:
    problems: list[tuple[str, str, str]] = []
    arg = {"max_chars": 10, "min_chars": 5, "no_refusal": None}.get(op, "Risks")
    check = {"op": op} if arg is None else {"op": op, "arg": arg}
    judge = parse_judge({"kind": "rule", "checks": [check]}, "task 't'",
                        lambda *problem: problems.append(problem))
    assert judge is not None and judge.checks[0].op == op
    assert not [p for p in problems if p[0] == "error"]


def test_task_validation_refuses_an_op_outside_the_table() -> None:
    problems: list[tuple[str, str, str]] = []
    judge = parse_judge({"kind": "rule", "checks": [{"op": "contain", "arg": "x"}]},
                        "task 't'", lambda *problem: problems.append(problem))
    assert judge is None
    assert problems[0][1] == "GS122"
    assert "did you mean 'contains'?" in problems[0][2]
    assert problems[0][2].endswith("known ops: " + ", ".join(OPS))


@pytest.mark.parametrize(("op", "arg", "good", "bad"), BEHAVIOUR)
def test_each_op_judges_through_the_table(op, arg, good, bad) -> None:
    assert check_passes(Check(op, arg), good) == (True, "")
    assert check_passes(Check(op, arg), bad) == (False, "")


def test_every_op_has_behaviour_checks() -> None:
    assert {row[0] for row in BEHAVIOUR} == ALL_OPS


def test_a_broken_bound_is_a_problem_of_the_check_and_an_unknown_op_fails() -> None:
    assert check_passes(Check("max_chars", "ten"), "x") == (False, "max_chars needs an integer")
    assert check_passes(Check("min_chars", "ten"), "x") == (False, "min_chars needs an integer")
    assert check_passes(Check("bogus", "x"), "x") == (False, "unknown op 'bogus'")  # type: ignore[arg-type]
    assert check_passes(Check("regex", "("), "x")[1].startswith("invalid regex")


def test_words_examples_and_rules_come_from_the_row() -> None:
    assert describe_check(Check("contains", "TL;DR")) == 'the answer must contain the text "TL;DR"'
    assert describe_check(Check("no_refusal")) == "the answer must not refuse the task"
    assert describe_check(Check("bogus", "x")) == "the check bogus 'x' must pass"  # type: ignore[arg-type]
    assert example_for_check(Check("section_present", "Impact")) == "## Impact"
    assert example_for_check(Check("section_contains", "### Risks ")) == "### Risks"
    assert example_for_check(Check("regex", r"[Cc]onfidence\s*[:=]")) == "Confidence: <text>"
    assert example_for_check(Check("equals", "42")) is None  # no rule makes every answer one text
    assert example_for_check(Check("max_chars", 300)) is None
    assert rule_for_check(Check("section_contains", "Impact")) == \
        'Every answer must have a section headed "## Impact".'
    for op, _arg, _good, _bad in BEHAVIOUR:
        example = OPS[op].example(str(_arg))
        if example is not None:  # a derived example (its typed placeholders filled with
            # any one option) passes the check it was made for
            assert check_passes(Check(op, _arg), sample_fill(example))[0], op


def test_only_contains_and_regex_can_be_passed_by_one_line() -> None:
    line_ops = {op for op, spec in OPS.items() if spec.satisfied_by is not None}
    assert line_ops == {"contains", "regex"}
    assert passes(Check("contains", "Owner:"), "Always add an Owner: line")
    assert not passes(Check("contains", "  "), "anything")  # an empty text is no rule
    assert passes(Check("regex", r"v\d"), "ship v2")
    assert not passes(Check("section_present", "Impact"), "## Impact")


def test_hygiene_reads_what_a_rule_must_not_contradict_from_the_row() -> None:
    contradicts = hygiene._contradicts
    assert contradicts('Never include "Internal only".', Check("contains", "Internal only"))
    assert contradicts('Always say "as an AI".', Check("not_contains", "as an AI"))
    assert contradicts("Keep answers under 200 characters.", Check("min_chars", 500))
    assert contradicts("Write at least 900 characters.", Check("max_chars", 300))
    assert not contradicts('Always include "Internal only".', Check("contains", "Internal only"))
    assert not contradicts('Never say "42".', Check("equals", "42"))


def test_the_offline_simulator_proposes_its_own_directives() -> None:
    assert directive_for("contains", "Internal only") == 'Always include "Internal only"'
    assert directive_for("section_contains", "Impact") == 'Use the heading "## Impact"'
    assert directive_for("not_contains", "TODO") == 'Never say "TODO"'
    assert directive_for("max_chars", 300) == "Keep answers under 300 characters"
    assert directive_for("regex", r"[Cc]onfidence\s*[:=]") == 'Always include "Confidence: medium"'
    assert directive_for("regex", r"(?=x)") is None
    for op in ("min_chars", "no_refusal", "equals"):
        assert directive_for(op, "1") is None


def test_the_table_imports_nothing_above_it() -> None:
    """check_ops sits low: judges, hygiene, the epoch and backends build on it."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(check_ops.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    assert {m for m in imported if m.startswith("gitsleep")} <= {
        "gitsleep.core.patterns", "gitsleep.core.regex_literal", "gitsleep.core.sections",
        "gitsleep.core.trace"}


def test_a_judge_of_format_ops_only_is_weak() -> None:
    assert Judge("rule", (Check("section_present", "Impact"), Check("max_chars", 9))).format_only
    assert not Judge("rule", (Check("section_present", "Impact"),
                              Check("contains", "x"))).format_only
