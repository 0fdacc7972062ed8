"""Task files: three formats, judges, splits, and every validation rule as a problem."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import Problem
from gitsleep.core.models import Check, Judge
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import (
    char_bound,
    check_skill_tasks,
    load_skill_tasks,
    parse_task_file,
    split_for,
)

RULE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Risks"}]}


def task(tid: str, split: str | None = None, prompt: str | None = None, **extra: object) -> dict:
    record: dict = {"id": tid, "prompt": prompt or f"Write a brief about {tid}.", "judge": RULE}
    if split:
        record["split"] = split
    record.update(extra)
    return record


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def skill_for(files: dict[str, str]) -> SkillConfig:
    """A skill over task files given as {path: split}."""
    return SkillConfig.model_validate({
        "name": "brief-writer", "skill": "SKILL.md",
        "tasks": [{"path": p, "split": s} for p, s in files.items()],
    })


def check(tmp_path: Path, files: dict[str, tuple[str, str]]) -> tuple[list, list[Problem]]:
    """Write {path: (split, text)} and check them as one skill."""
    for rel, (_, text) in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return check_skill_tasks(tmp_path, skill_for({p: s for p, (s, _) in files.items()}))


def parse(tmp_path: Path, text: str, name: str = "t.jsonl", split: str = "auto"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return parse_task_file(path, name, split)


def codes(problems: list[Problem]) -> list[str]:
    return [p.code for p in problems]


def only(problems: list[Problem], code: str) -> Problem:
    found = [p for p in problems if p.code == code]
    assert len(found) == 1, problems
    return found[0]


# --- formats ------------------------------------------------------------------------------


def test_own_format_jsonl_with_lines_and_fields(tmp_path: Path) -> None:
    text = jsonl(task("a", "train", system="Be brief.", tags=["x", "y"])) + "\n" + jsonl(
        task("b", "val"))
    tasks, problems = parse(tmp_path, text)
    assert problems == []
    a, b = tasks
    assert (a.id, a.split, a.system, a.tags, a.source, a.line) == (
        "a", "train", "Be brief.", ("x", "y"), "t.jsonl", 1)
    assert a.judge == Judge(kind="rule", checks=(Check("contains", "Risks"),))
    assert (b.id, b.line, b.system, b.tags) == ("b", 3, None, ())


def test_own_format_json_list_has_the_line_of_each_task(tmp_path: Path) -> None:
    text = json.dumps([task("a", "train"), task("b", "val")], indent=2)
    tasks, problems = parse(tmp_path, text, "t.json")
    assert problems == []
    lines = text.split("\n")
    assert [t.id for t in tasks] == ["a", "b"]
    for t in tasks:
        assert lines[t.line - 1].strip() == "{"
        assert f'"{t.id}"' in lines[t.line]
    assert tasks[0].line == 2


def test_own_format_tasks_object_has_lines(tmp_path: Path) -> None:
    text = json.dumps({"format": "mine", "tasks": [task("a", "train"), task("b", "val")]},
                      indent=1)
    tasks, problems = parse(tmp_path, text, "t.json")
    assert problems == []
    lines = text.split("\n")
    assert tasks[0].line == 4
    for t in tasks:
        assert lines[t.line - 1].strip() == "{" and f'"{t.id}"' in lines[t.line]


def test_one_task_object_alone_is_a_file_of_one(tmp_path: Path) -> None:
    tasks, problems = parse(tmp_path, json.dumps(task("solo", "val")), "t.json")
    assert problems == [] and [(t.id, t.line) for t in tasks] == [("solo", 1)]


def test_yaml_tasks_with_lines(tmp_path: Path) -> None:
    text = """\
tasks:
  - id: a
    split: train
    prompt: |
      Write a brief.
    judge:
      kind: rule
      checks:
        - {op: max_chars, arg: "300"}
        - {op: regex, arg: '[Cc]onfidence\\s*:'}
  - id: b
    split: val
    prompt: Another
    judge: {kind: exact, answer: 42}
"""
    tasks, problems = parse(tmp_path, text, "t.yaml")
    assert problems == []
    assert [(t.id, t.line) for t in tasks] == [("a", 2), ("b", 11)]
    assert tasks[0].prompt == "Write a brief.\n"
    assert tasks[0].judge.checks == (Check("max_chars", 300), Check("regex", "[Cc]onfidence\\s*:"))
    assert tasks[1].judge == Judge(kind="exact", answer="42")


def test_yaml_shared_judge_through_an_alias(tmp_path: Path) -> None:
    text = ("- {id: a, prompt: p1, split: train,\n"
            "   judge: &j {kind: rubric, rubric: 'Is it \"ok\"?'}}\n"
            "- {id: b, prompt: p2, split: val, judge: *j}\n")
    tasks, problems = parse(tmp_path, text, "t.yml")
    assert problems == []
    assert tasks[0].judge == tasks[1].judge == Judge(kind="rubric", rubric='Is it "ok"?')


def test_gbrain_evals_lines(tmp_path: Path) -> None:
    text = jsonl({"task_id": "g1", "task": "Summarise X.", "judge": RULE},
                 {"task_id": 7, "task": "Summarise Y.", "judge": RULE, "split": "val"})
    tasks, problems = parse(tmp_path, text)
    assert problems == []
    assert [(t.id, t.prompt, t.line) for t in tasks] == [("g1", "Summarise X.", 1),
                                                         ("7", "Summarise Y.", 2)]
    assert tasks[1].split == "val"


def test_gbrain_evals_tool_called_loads_as_published(tmp_path: Path) -> None:
    """A line of gbrain-evals' skillopt-v1 `seed-no-brain-first` (benchmark.jsonl at
    garrytan/gbrain-evals 565b80754ffa6abb9afb041026f2fab048aa7553), byte for byte."""
    line = ('{"task_id":"bm-001","task":"Answer: should we decide whether a seed-stage '
            'dev-tools startup should ship a free tier.","judge":{"kind":"rule","checks":'
            '[{"op":"tool_called","arg":"search"}]}}\n')
    tasks, problems = parse(tmp_path, line)
    assert problems == []
    assert tasks[0].judge == Judge(kind="rule", checks=(Check("tool_called", "search"),))
    assert tasks[0].judge.reads_trace


def test_trajectory_checks_and_tools_in_gitsleeps_own_format(tmp_path: Path) -> None:
    record = task("a", "val", judge={"kind": "rule", "checks": [
        {"op": "tool_called", "arg": "search", "args_regex": "pricing"},
        {"op": "tool_not_called", "arg": "command"},
        {"op": "tool_called_before", "arg": ["search", "read_file"]},
        {"op": "max_tool_calls", "arg": 3}]})
    record["tools"] = [{"tool": "search", "folder": "./notes/"}, {"tool": "read_file",
                                                                 "folder": "notes"}]
    tasks, problems = parse(tmp_path, jsonl(record))
    assert problems == []
    checks = tasks[0].judge.checks
    assert checks[0] == Check("tool_called", "search", args_regex="pricing")
    assert checks[2].arg == '["search", "read_file"]' and checks[3].arg == 3
    assert [(t.name, t.kind, t.folder) for t in tasks[0].tools] == [
        ("search", "search", "notes"), ("read_file", "read_file", "notes")]


@pytest.mark.parametrize(("tools", "message"), [
    ([{"tool": "search"}], "a search tool needs `folder:`"),
    ([{"tool": "search", "folder": "../up"}], "no '..'"),
    ([{"tool": "grep", "folder": "n"}], "tool 1 tool:"),
    ([{"tool": "command"}], "a command tool needs `argv:`"),
    ([{"tool": "search", "folder": "n"}, {"tool": "search", "folder": "m"}],
     "two tools are named 'search'"),
    ("search", "tools must be a non-empty list"),
])
def test_bad_tools_are_one_clear_line(tmp_path: Path, tools: object, message: str) -> None:
    record = task("a", "val")
    record["tools"] = tools
    _, problems = parse(tmp_path, jsonl(record))
    problem = only(problems, "GS160")
    assert message in problem.message and problem.line == 1


def test_skillopt_tasks_v1_file(tmp_path: Path) -> None:
    doc = {
        "format": "skillopt_sleep.tasks.v1",
        "project": "/somewhere",
        "reviewed": True,
        "tasks": [
            {"id": "s1", "project": "/p", "intent": "arXiv id for BERT?", "reference_kind": "exact",
             "reference": "arXiv:1810.04805", "split": "replay", "system": "", "outcome": "fail",
             "tags": ["rule:arxiv-id"]},
            {"id": "s2", "project": "/p", "intent": "Write a brief.", "reference_kind": "rule",
             "judge": RULE, "split": "holdout"},
            {"id": "s3", "project": "/p", "intent": "Explain it.", "reference_kind": "rubric",
             "reference": "Mentions \"cost\".", "split": "test", "system": "You are terse."},
        ],
    }
    tasks, problems = parse(tmp_path, json.dumps(doc, indent=2), "tasks.json")
    assert problems == []
    s1, s2, s3 = tasks
    assert (s1.split, s1.judge, s1.system, s1.tags) == (
        "train", Judge(kind="exact", answer="arXiv:1810.04805"), None, ("rule:arxiv-id",))
    assert (s2.split, s2.judge) == ("val", Judge(kind="rule", checks=(Check("contains", "Risks"),)))
    assert (s3.split, s3.judge.rubric, s3.system) == ("test", 'Mentions "cost".', "You are terse.")


def test_skillopt_bare_list_and_unusable_reference(tmp_path: Path) -> None:
    records = [
        {"id": "ok", "intent": "Q?", "reference_kind": "exact", "reference": "A"},
        {"id": "none", "intent": "Q?", "reference_kind": "none"},
        {"id": "empty", "intent": "Q?", "reference_kind": "exact", "reference": ""},
        {"id": "odd", "intent": "Q?", "reference_kind": "vibes", "reference": "x"},
    ]
    tasks, problems = parse(tmp_path, json.dumps(records), "t.json")
    assert [t.id for t in tasks] == ["ok"]
    assert codes(problems) == ["GS120", "GS127", "GS121"]
    assert "task 'none': reference_kind 'none' and no judge" in problems[0].message
    assert "task 'empty': reference_kind 'exact' needs a non-empty 'reference'" in (
        problems[1].message)


# --- parse problems ------------------------------------------------------------------------


def test_jsonl_parse_error_names_the_line_and_keeps_the_rest(tmp_path: Path) -> None:
    text = jsonl(task("a", "train")) + jsonl(task("b", "val")) + '{"id": "c", "prompt": \n'
    tasks, problems = parse(tmp_path, text)
    assert [t.id for t in tasks] == ["a", "b"]
    problem = only(problems, "GS101")
    assert (problem.path, problem.line) == ("t.jsonl", 3)
    assert "JSON Lines record does not parse" in problem.message


def test_json_parse_error_has_line_and_column(tmp_path: Path) -> None:
    text = '[\n  {"id": "a",\n   "prompt": "x" "judge": {}}\n]\n'
    tasks, problems = parse(tmp_path, text, "t.json")
    problem = only(problems, "GS101")
    assert tasks == [] and problem.line == 3
    assert "Expecting ',' delimiter (column 18)" in problem.message


DUPLICATE_JUDGE = ('{"id": "dup-1", "prompt": "Write the notes.", "judge": '
                   '{"kind": "rule", "checks": [{"op": "contains", "arg": "Action needed:"}]}, '
                   '"judge": {"kind": "rule", "checks": [{"op": "no_refusal"}]}}')


@pytest.mark.parametrize(
    ("text", "name", "line"),
    [
        (jsonl(task("a", "train")) + DUPLICATE_JUDGE + "\n", "t.jsonl", 2),
        ("[\n" + DUPLICATE_JUDGE + "\n]\n", "t.json", None),
        ('{\n"tasks": [' + DUPLICATE_JUDGE + '],\n"tasks": []\n}\n', "t.json", None),
        (DUPLICATE_JUDGE.replace('"no_refusal"}', '"no_refusal", "op": "max_chars"}'),
         "t.jsonl", 1),
    ],
)
def test_a_key_named_twice_in_json_is_an_error_not_a_silent_overwrite(
    tmp_path: Path, text: str, name: str, line: int | None
) -> None:
    """json keeps the last of two equal keys, so the user's first judge vanished unseen
    (YAML's duplicate keys were already refused)."""
    tasks, problems = parse(tmp_path, text, name)
    problem = only(problems, "GS101")
    assert problem.is_error and problem.line == line
    assert "twice" in problem.message and "keep one" in problem.message
    assert "dup-1" not in [t.id for t in tasks]


def test_yaml_parse_error_has_line(tmp_path: Path) -> None:
    tasks, problems = parse(tmp_path, "- id: a\n  prompt: [unclosed\n- id: b\n", "t.yaml")
    problem = only(problems, "GS101")
    assert tasks == [] and problem.line == 2 and "YAML does not parse" in problem.message


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("[" * 100_000 + "]" * 100_000, "t.json"),
        ('{"id": "a", "prompt": "p", "judge": ' + "[" * 100_000 + "]" * 100_000 + "}\n" * 2,
         "t.jsonl"),
        ("a: " + "[" * 1_000_000 + "]" * 1_000_000, "t.yaml"),  # crashed libyaml once
    ],
)
def test_deep_nesting_is_a_problem_not_a_crash(tmp_path: Path, text: str, name: str) -> None:
    tasks, problems = parse(tmp_path, text, name)
    assert tasks == [] and "GS104" in codes(problems)
    assert "nested too deeply" in only(problems, "GS104").message


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    (tmp_path / "bin.jsonl").write_bytes(b"\x00\x01\x02")
    (tmp_path / "latin.jsonl").write_bytes(jsonl(task("a")).encode() + b'{"id": "caf\xe9"}\n')
    _, problems = parse_task_file(tmp_path / "bin.jsonl", "bin.jsonl")
    assert codes(problems) == ["GS102"] and "looks binary" in problems[0].message
    _, problems = parse_task_file(tmp_path / "latin.jsonl", "latin.jsonl")
    assert codes(problems) == ["GS102"] and problems[0].line == 2
    assert "not valid UTF-8" in problems[0].message


def test_utf8_bom_and_unicode_line_separators_are_fine(tmp_path: Path) -> None:
    record = task("a", "val", prompt="line one\u2028line two")
    (tmp_path / "t.jsonl").write_bytes(b"\xef\xbb\xbf" + json.dumps(record, ensure_ascii=False)
                                       .encode() + b"\n")
    tasks, problems = parse_task_file(tmp_path / "t.jsonl", "t.jsonl")
    assert problems == [] and tasks[0].prompt == "line one\u2028line two"


def test_missing_and_oversized_files(tmp_path: Path) -> None:
    _, problems = parse_task_file(tmp_path / "nope.jsonl", "nope.jsonl")
    assert codes(problems) == ["GS100"] and "task file not found" in problems[0].message
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:
        handle.truncate(20 * 1024 * 1024 + 1)
    _, problems = parse_task_file(big, "big.jsonl")
    assert codes(problems) == ["GS103"] and "20 MB" in problems[0].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"format": "x", "tasks": {"a": 1}}', "'tasks' must be a list"),
        ('"just a string"', "must hold a list of tasks"),
        ("[1, 2]", "task #1 must be an object with id, prompt and judge, not int"),
    ],
)
def test_wrong_shapes(tmp_path: Path, text: str, message: str) -> None:
    _, problems = parse(tmp_path, text, "t.json")
    assert "GS105" in codes(problems)
    assert any(message in p.message for p in problems)


def test_empty_file_is_a_warning(tmp_path: Path) -> None:
    tasks, problems = parse(tmp_path, "\n\n")
    assert tasks == [] and codes(problems) == ["GS107"] and problems[0].severity == "warning"


# --- record problems ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "code", "message"),
    [
        ({"prompt": "p", "judge": RULE}, "GS110", "task #2 has no 'id'"),
        ({"id": "  ", "prompt": "p", "judge": RULE}, "GS110", "unique string id"),
        ({"id": "a", "judge": RULE}, "GS111", "task 'a': 'prompt' is missing or empty"),
        ({"id": "a", "prompt": " \n", "judge": RULE}, "GS111", "write the prompt"),
        ({"id": "a", "prompt": "p"}, "GS120", "task 'a': no judge"),
        ({"id": "a", "prompt": "p", "judge": "be good"}, "GS120", "must be an object"),
        ({"id": "a", "prompt": "p", "judge": {"foo": 1}}, "GS120", "judge needs a 'kind'"),
        ({"id": "a", "prompt": "p", "judge": {"kind": "llm"}}, "GS121",
         "unknown judge kind 'llm': use rule, exact or rubric"),
        ({"id": "a", "prompt": "p", "judge": {"kind": "rule", "checks": []}}, "GS126",
         "rule judge needs a non-empty 'checks' list"),
        ({"id": "a", "prompt": "p", "judge": {"kind": "exact"}}, "GS127",
         "exact judge needs a non-empty 'answer'"),
        ({"id": "a", "prompt": "p", "judge": {"kind": "rubric", "rubric": ""}}, "GS127",
         "rubric judge needs a non-empty 'rubric'"),
        (task("a", split="holdout-ish"), "GS114",
         "task 'a': split must be train, val or test (got 'holdout-ish')"),
        (task("a", system=["x"]), "GS118", "'system' must be a string"),
        (task("a", tags=[1, 2]), "GS118", "'tags' must be a list of strings"),
    ],
)
def test_record_errors(tmp_path: Path, record: dict, code: str, message: str) -> None:
    tasks, problems = parse(tmp_path, jsonl(task("ok", "val"), record))
    assert [t.id for t in tasks] == ["ok"]
    problem = only(problems, code)
    assert problem.severity == "error" and problem.line == 2
    assert message in problem.message


def checks_problem(tmp_path: Path, checks: list) -> tuple[list, list[Problem]]:
    record = task("a", "val", judge={"kind": "rule", "checks": checks})
    return parse(tmp_path, jsonl(record))


@pytest.mark.parametrize(
    ("checks", "code", "message"),
    [
        ([{"op": "contain", "arg": "x"}], "GS122",
         "check 1: unknown op 'contain': did you mean 'contains'? known ops: contains,"),
        ([{"op": "contains", "arg": "x"}, {"op": "tool_used", "arg": "x"}], "GS122",
         "check 2: unknown op 'tool_used': did you mean 'tool_called'?"),
        ([{"op": "tool_called", "arg": "two words"}], "GS125",
         "tool_called needs a tool name"),
        ([{"op": "tool_called", "arg": "search", "args_regex": "[x"}], "GS123",
         "args_regex: invalid regex"),
        ([{"op": "contains", "arg": "x", "args_regex": "y"}], "GS125",
         "contains takes no args_regex"),
        ([{"op": "tool_called_before", "arg": ["search"]}], "GS125",
         "tool_called_before needs two different tool names in order"),
        ([{"op": "max_tool_calls", "arg": -1}], "GS134",
         "max_tool_calls needs a non-negative whole number of tool calls"),
        ([{"op": "regex", "arg": "[unclosed"}], "GS123",
         "invalid regex '[unclosed': unterminated character set at position 0"),
        ([{"op": "regex", "arg": "(?P<x>a)(?P<x>b)"}], "GS123", "invalid regex"),
        ([{"op": "contains"}], "GS125", "contains needs a non-empty text arg"),
        ([{"op": "regex", "arg": ""}], "GS125", "regex needs a non-empty text arg"),
        ([{"op": "no_refusal", "arg": "x"}], "GS125", "no_refusal takes no arg"),
        (["contains"], "GS125", "check 1 must be an object like"),
        ([{"op": "max_chars", "arg": True}], "GS124",
         "max_chars needs a non-negative whole number of characters (got True)"),
        ([{"op": "max_chars", "arg": 2.5}], "GS124", "(got 2.5)"),
        ([{"op": "min_chars", "arg": -1}], "GS124", "(got -1)"),
        ([{"op": "max_chars", "arg": "300 chars"}], "GS124", "(got '300 chars')"),
        ([{"op": "max_chars"}], "GS124", "(got None)"),
    ],
)
def test_check_errors(tmp_path: Path, checks: list, code: str, message: str) -> None:
    tasks, problems = checks_problem(tmp_path, checks)
    assert tasks == [], "a task with a broken judge is never scored"
    problem = only(problems, code)
    assert problem.severity == "error" and problem.line == 1
    assert problem.message.startswith("task 'a': check")
    assert message in problem.message


@pytest.mark.parametrize(
    ("value", "expected"),
    [(300, 300), (0, 0), ("300", 300), (" 42 ", 42), (300.0, 300), (True, None), (False, None),
     (1.5, None), (float("inf"), None), (float("nan"), None), (-3, None), ("-3", None),
     ("1e3", None), ("3.0", None), ("", None), (None, None), ([300], None)],
)
def test_char_bound(value: object, expected: int | None) -> None:
    assert char_bound(value) == expected


def test_every_op_parses(tmp_path: Path) -> None:
    checks = [{"op": "contains", "arg": "A"}, {"op": "not_contains", "arg": "B"},
              {"op": "regex", "arg": "C+"}, {"op": "section_present", "arg": "D"},
              {"op": "section_contains", "arg": "E"}, {"op": "max_chars", "arg": "10"},
              {"op": "min_chars", "arg": 1}, {"op": "no_refusal"}, {"op": "equals", "arg": 7}]
    tasks, problems = checks_problem(tmp_path, checks)
    assert problems == []
    assert tasks[0].judge.checks == (
        Check("contains", "A"), Check("not_contains", "B"), Check("regex", "C+"),
        Check("section_present", "D"), Check("section_contains", "E"), Check("max_chars", 10),
        Check("min_chars", 1), Check("no_refusal"), Check("equals", "7"))


def test_judge_kind_is_inferred_from_its_field(tmp_path: Path) -> None:
    text = jsonl(task("a", "val", judge={"checks": [{"op": "contains", "arg": "x"}]}),
                 task("b", "val", judge={"answer": "Paris"}),
                 task("c", "val", judge={"rubric": "Is it kind?"}))
    tasks, problems = parse(tmp_path, text)
    assert problems == []
    assert [t.judge.kind for t in tasks] == ["rule", "exact", "rubric"]


def test_format_only_judge_and_min_chars_zero_are_warnings(tmp_path: Path) -> None:
    tasks, problems = checks_problem(tmp_path, [{"op": "section_present", "arg": "Risks"},
                                                {"op": "min_chars", "arg": 0}])
    assert len(tasks) == 1, "warnings do not drop the task"
    assert [(p.code, p.severity) for p in problems] == [("GS124", "warning"),
                                                        ("GS128", "warning")]
    assert "only checks the answer's shape (min_chars, section_present)" in problems[1].message


def test_typo_key_is_a_warning_with_the_intended_key(tmp_path: Path) -> None:
    record = {"id": "a", "promt": "p", "prompt": "p", "judge": RULE, "notes": "free text"}
    tasks, problems = parse(tmp_path, jsonl(record))
    assert len(tasks) == 1
    problem = only(problems, "GS106")
    assert problem.severity == "warning"
    assert "unknown key 'promt' is ignored; did you mean 'prompt'?" in problem.message


# --- splits ---------------------------------------------------------------------------------


def test_split_for_is_the_documented_hash() -> None:
    for tid in ("a", "b", "task-42", "ünïcode"):
        bucket = int(hashlib.sha256(f"gitsleep-split-v1:{tid}".encode()).hexdigest(), 16) % 100
        assert split_for(tid) == ("val" if bucket < 34 else "train")
    shares = [split_for(f"t{i}") for i in range(1000)]
    assert 280 < shares.count("val") < 400


def test_auto_keeps_labels_and_hashes_the_rest_stably(tmp_path: Path) -> None:
    records = [task("labelled-test", "test"), task("legacy", "holdout")]
    records += [task(f"t{i}") for i in range(20)]
    tasks, problems = parse(tmp_path, jsonl(*records))
    assert problems == []
    by_id = {t.id: t.split for t in tasks}
    assert by_id["labelled-test"] == "test" and by_id["legacy"] == "val"
    assert all(by_id[f"t{i}"] == split_for(f"t{i}") for i in range(20))
    # adding tasks never moves another
    more, _ = parse(tmp_path, jsonl(task("new-1"), *records, task("new-2")))
    assert {t.id: t.split for t in more if t.id in by_id} == by_id


def test_file_level_split_overrides_task_labels(tmp_path: Path) -> None:
    tasks, problems = parse(tmp_path, jsonl(task("a", "train"), task("b")), split="test")
    assert problems == [] and [t.split for t in tasks] == ["test", "test"]


# --- one skill across files ------------------------------------------------------------------


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    tasks, problems = check(tmp_path, {
        "evals/a.jsonl": ("auto", jsonl(task("x", "train"), task("v", "val"))),
        "evals/b.jsonl": ("auto", jsonl(task("y", "train"), task("x", "train", prompt="other"))),
    })
    assert [t.id for t in tasks] == ["x", "v", "y"]
    problem = only(problems, "GS112")
    assert (problem.path, problem.line) == ("evals/b.jsonl", 2)
    assert "duplicate task id 'x' (first at evals/a.jsonl:1)" in problem.message


def test_same_id_in_train_and_val_is_a_task_in_two_splits(tmp_path: Path) -> None:
    _, problems = check(tmp_path, {
        "a.jsonl": ("auto", jsonl(task("x", "train"), task("x", "val", prompt="q"),
                                  task("v", "val"))),
    })
    problem = only(problems, "GS112")
    assert "task 'x' is in val here and in train at a.jsonl:1" in problem.message
    assert "exactly one split" in problem.message


def test_same_id_in_selection_and_test_is_a_leak(tmp_path: Path) -> None:
    _, problems = check(tmp_path, {
        "train.jsonl": ("auto", jsonl(task("x", "val"), task("t", "train"))),
        "held-out.jsonl": ("test", jsonl(task("x", prompt="different"))),
    })
    problem = only(problems, "GS113")
    assert problem.path == "held-out.jsonl" and problem.line == 1
    assert "task 'x' is in test here and in val at train.jsonl:1" in problem.message
    assert "held-out tasks must never be used for selection" in problem.message


def test_same_prompt_in_selection_and_test_is_a_leak(tmp_path: Path) -> None:
    _, problems = check(tmp_path, {
        "train.jsonl": ("auto", jsonl(task("a", "train", prompt="Write  the BRIEF."),
                                      task("v", "val"))),
        "held-out.jsonl": ("test", jsonl(task("b", prompt="write the brief."))),
    })
    problem = only(problems, "GS113")
    assert "task 'b' (test) has the same prompt as task 'a' (train, train.jsonl:1)" in (
        problem.message)


def test_same_prompt_in_train_and_val_is_a_warning(tmp_path: Path) -> None:
    tasks, problems = check(tmp_path, {
        "t.jsonl": ("auto", jsonl(task("a", "train", prompt="Same"),
                                  task("b", "val", prompt="same"))),
    })
    assert len(tasks) == 2
    problem = only(problems, "GS117")
    assert problem.severity == "warning" and "task 'b' (val)" in problem.message


def test_no_val_tasks_is_an_error_and_no_train_a_warning(tmp_path: Path) -> None:
    _, problems = check(tmp_path, {"t.jsonl": ("train", jsonl(task("a"), task("b")))})
    problem = only(problems, "GS115")
    assert problem.severity == "error" and problem.path == "t.jsonl"
    assert "skill 'brief-writer' has no val tasks" in problem.message
    _, problems = check(tmp_path, {"t.jsonl": ("val", jsonl(task("a")))})
    assert codes(problems) == ["GS116"] and problems[0].severity == "warning"


def test_file_listed_twice(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(jsonl(task("a", "train"), task("b", "val")))
    skill = SkillConfig.model_validate({"name": "s", "skill": "S.md",
                                        "tasks": ["t.jsonl", "t.jsonl"]})
    tasks, problems = check_skill_tasks(tmp_path, skill)
    assert len(tasks) == 2 and codes(problems) == ["GS001"]
    assert "listed twice for skill 's'" in problems[0].message


def test_load_skill_tasks_raises_the_first_error_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(jsonl(
        task("a", "val"),
        task("b", "val", judge={"kind": "rule", "checks": [{"op": "regex", "arg": "("}]}),
        task("c", "val", judge={"kind": "rule", "checks": [{"op": "nope"}]})))
    with pytest.raises(UsageError) as info:
        load_skill_tasks(tmp_path, skill_for({"t.jsonl": "auto"}))
    message = str(info.value)
    assert message.startswith("t.jsonl:2: task 'b': check 1: invalid regex '('")
    assert "(and 1 more: run `gitsleep validate`)" in message and "\n" not in message


def test_load_skill_tasks_returns_tasks_despite_warnings(tmp_path: Path) -> None:
    (tmp_path / "t.jsonl").write_text(jsonl(task("a", "val")))
    tasks = load_skill_tasks(tmp_path, skill_for({"t.jsonl": "auto"}))
    assert [t.id for t in tasks] == ["a"]
