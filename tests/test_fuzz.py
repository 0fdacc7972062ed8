"""Fuzzing the parsers that read what people and models write.

Each property says: on any input, this function returns, or raises only the error type it
documents. Task files and configs come from a repository anyone can send a pull request
to; optimizer and grader replies come from a model. A traceback on any of them is a bug.

The default example counts keep this file under about 20 seconds. For a long session:

    GITSLEEP_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/test_fuzz.py -q --timeout 0

(`--timeout 0`: the suite's 300 s per-test limit would cut a long property short.)

Findings of earlier long sessions are kept as explicit regression tests at the end.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import CODES, Problem
from gitsleep.base.redact import Redactor
from gitsleep.core import documents as d
from gitsleep.core.check_ops import OPS, RULE_OPS
from gitsleep.core.hygiene import check_hygiene
from gitsleep.core.judges import check_passes, parse_rubric_reply, score_exact
from gitsleep.core.models import SPLITS, Check, Edit, Score, Task
from gitsleep.core.patterns import regex_size
from gitsleep.core.proposals import parse_reply
from gitsleep.core.regex_literal import literal_for_regex
from gitsleep.inputs.config import Config, load_config
from gitsleep.inputs.tasks import parse_task_file

pytestmark = pytest.mark.slow  # hypothesis over every input format

LONG_RUN = int(os.environ.get("GITSLEEP_FUZZ_EXAMPLES", "0") or 0)


def fuzz(examples: int):  # noqa: ANN201 - a hypothesis settings decorator
    """`examples` per property in the suite; GITSLEEP_FUZZ_EXAMPLES for a long session."""
    return settings(
        max_examples=LONG_RUN or examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                               HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=200)
ANY_TEXT = st.text(max_size=200)  # lone surrogates included: models and JSON can send them
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT,
                    st.sampled_from(["", " ", "train", "val", "test", "replay", "holdout",
                                     "rule", "exact", "rubric", *RULE_OPS, "\ud800"]))
JSONISH = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)


def _maybe(draw: st.DrawFn, value: object) -> object:
    """The value, or some other JSON-ish thing in its place."""
    return value if draw(st.integers(0, 4)) else draw(JSONISH)


@st.composite
def task_records(draw: st.DrawFn) -> object:
    """Records close enough to each format to reach deep into the parser."""
    check = {"op": _maybe(draw, draw(st.sampled_from(RULE_OPS))),
             "arg": _maybe(draw, draw(st.one_of(TEXT, st.integers(-5, 10**6))))}
    judge = draw(st.sampled_from([
        {"kind": "rule", "checks": [check] * draw(st.integers(0, 3))},
        {"kind": "exact", "answer": draw(TEXT)},
        {"kind": "rubric", "rubric": draw(TEXT)},
        {"checks": [check]}, {"answer": draw(SCALARS)}, draw(JSONISH),
    ]))
    shape = draw(st.sampled_from(["own", "gbrain", "skillopt", "junk"]))
    if shape == "own":
        record = {"id": draw(SCALARS), "prompt": draw(SCALARS), "split": draw(SCALARS),
                  "judge": judge, "system": draw(SCALARS), "tags": draw(JSONISH)}
    elif shape == "gbrain":
        record = {"task_id": draw(SCALARS), "task": draw(SCALARS), "judge": judge}
    elif shape == "skillopt":
        record = {"id": draw(SCALARS), "intent": draw(SCALARS), "judge": judge,
                  "reference_kind": draw(st.sampled_from(["exact", "rubric", "rule", "none",
                                                          "answer", "weird", None])),
                  "reference": draw(SCALARS), "split": draw(SCALARS)}
    else:
        return draw(JSONISH)
    keys = draw(st.lists(st.sampled_from(sorted(record)), unique=True))
    return {k: v for k, v in record.items() if k not in keys[:1]}


@st.composite
def task_file_text(draw: st.DrawFn) -> str:
    records = draw(st.lists(task_records(), max_size=4))
    form = draw(st.sampled_from(["list", "tasks", "jsonl", "yaml", "one", "cut"]))
    if form == "list":
        return json.dumps(records, indent=draw(st.sampled_from([None, 2])))
    if form == "tasks":
        return json.dumps({"tasks": records})
    if form == "jsonl":
        return "\n".join(json.dumps(r) for r in records) + draw(st.sampled_from(["", "\n"]))
    if form == "one":
        return json.dumps(records[0] if records else {})
    text = json.dumps(records) if form == "cut" else yaml.safe_dump(records, allow_unicode=True)
    if form == "cut":
        return text[: draw(st.integers(0, len(text)))]
    return text


YAML_ALPHABET = st.sampled_from(list("-:?[]{},&*!|>'\"%@`#\n\t ") + [
    "a", "1", "id", "prompt", "judge", "tasks", "split", "&a", "*a", "<<", "!!str", "!!int",
    "!!float", "!!bool", "!!null", "!!timestamp", "!!binary", "!!set", "!!omap", "!!pairs",
    "!!seq", "!!map", "!<tag:yaml.org,2002:int>", "!local", "%YAML 1.1\n", "%TAG ! !!\n",
    "---", "...", "2001-02-30", "2001-12-14t21:59:43.10-05:00", "1e999", "0x1f", "0b1",
    "0o7", "1:20", "1_000", ".nan", ".inf", "~", "\\ud800", "\ufeff", "\x85", "=", "\\"])
YAMLISH = st.lists(YAML_ALPHABET, max_size=60).map("".join)


def _assert_sound(tasks: list[Task], problems: list[Problem]) -> None:
    for problem in problems:
        assert problem.code in CODES and problem.severity in ("error", "warning")
        assert "\n" not in problem.render() or "\n" in problem.path
    for task in tasks:
        assert task.split in SPLITS and task.id and task.id == task.id.strip()
        assert isinstance(task.prompt, str) and task.prompt.strip()
        for text in (task.id, task.prompt, task.system or "", *task.tags):
            text.encode("utf-8")  # no lone surrogate ever reaches a Task
        for check in task.judge.checks:
            assert check.op in RULE_OPS


@fuzz(300)
@given(data=st.one_of(st.binary(max_size=400), task_file_text().map(str.encode),
                      YAMLISH.map(str.encode)),
       suffix=st.sampled_from([".jsonl", ".json", ".yaml", ".txt"]),
       file_split=st.sampled_from(["auto", "train", "val", "test"]))
def test_parse_task_file_never_raises(tmp_path: Path, data: bytes, suffix: str,
                                      file_split: str) -> None:
    path = tmp_path / f"tasks{suffix}"
    path.write_bytes(data)
    tasks, problems = parse_task_file(path, path.name, file_split)
    _assert_sound(tasks, problems)
    if file_split != "auto":
        assert all(t.split == file_split for t in tasks)


CONFIG_KEYS = sorted(Config.model_fields)


@st.composite
def config_text(draw: st.DrawFn) -> str:
    data = {key: draw(JSONISH) for key in draw(st.lists(st.sampled_from(CONFIG_KEYS),
                                                        unique=True, max_size=6))}
    if draw(st.booleans()):
        data["skills"] = [{"name": draw(st.sampled_from(["a", "-x", "a..b", "ok-1", "A"])),
                           "skill": draw(st.sampled_from(["s.md", "../s.md", "/s", "a\x00"])),
                           "tasks": draw(st.sampled_from([["t.jsonl"], [], [{"path": 1}],
                                                          "t.jsonl", ["s.md"]]))}]
    return yaml.safe_dump(data, allow_unicode=True)


@fuzz(200)
@given(text=st.one_of(config_text(), YAMLISH, TEXT))
def test_load_config_raises_only_usage_errors(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(text, encoding="utf-8")
    try:
        config = load_config(path)
    except UsageError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message.replace(str(path), "")
        return
    assert config.skills and config.version == 1


@fuzz(200)
@given(front=st.one_of(YAMLISH, config_text()), rest=TEXT)
def test_frontmatter_checks_never_raise(front: str, rest: str) -> None:
    from gitsleep.inputs.validation import frontmatter_problems

    for problem in frontmatter_problems(f"---\n{front}\n---\n{rest}", "SKILL.md"):
        assert problem.code in CODES and "\n" not in problem.message


DOC_ALPHABET = st.sampled_from([d.START, d.END, "<!-- gitsleep:learned:start-->", "<!--",
                                "-->", "- ", "* ", "#", "## Learned rules", "---", "\n",
                                "\r\n", "\r", " ", "\t", "rule", "é", "\u2028", "\x00"])
DOCS = st.one_of(st.lists(DOC_ALPHABET, max_size=30).map("".join), ANY_TEXT)


@fuzz(400)
@given(text=DOCS, edits=st.lists(st.builds(Edit, op=st.sampled_from(["add", "replace",
                                                                     "delete", "x"]),
                                           content=DOCS, anchor=DOCS), max_size=4),
       max_lines=st.integers(1, 5), max_chars=st.integers(1, 300))
def test_document_functions_raise_only_usage_errors(
    text: str, edits: list[Edit], max_lines: int, max_chars: int
) -> None:
    assert "".join(d.split_lines(text)) == text
    problems = d.structure_problems(text)
    assert all(line >= 1 for line, _ in problems)
    assert isinstance(d.block_problems(text, max_lines, max_chars), list)
    d.clean_content(text)
    d.newline_of(text)
    try:
        block = d.find_block(text)
    except UsageError:
        assert problems
        for call in (d.learned_rules, d.learned_block_text, d.outside_block):
            with pytest.raises(UsageError):
                call(text)
        with pytest.raises(UsageError):
            d.apply_edits(text, edits or [Edit("add", "x")])
        return
    assert not problems
    d.learned_rules(text)
    d.learned_block_text(text)
    outside = d.outside_block(text)
    new, outcomes = d.apply_edits(text, edits, max_lines=max_lines, max_chars=max_chars)
    assert len(outcomes) == len(edits)
    assert d.structure_problems(new) == []
    if block is not None:
        assert d.outside_block(new) == outside


REPLY_PIECES = st.sampled_from([
    "```json\n", "```\n", "```", "{", "}", "[", "]", '"edits"', ":", ",", '"op"', '"add"',
    '"replace"', '"delete"', '"content"', '"anchor"', '"rationale"', '"rule"', "'", '"',
    "\\", "\\u", "\\ud800", "null", "true", "1e999", "NaN", "// c", "/*", "*/", "\n", " ",
    'Always include "X"', "<one rule>", "TODO", "...", "\x00", "\u2028", "\ufeff",
])
REPLIES = st.one_of(st.lists(REPLY_PIECES, max_size=60).map("".join), ANY_TEXT,
                    st.recursive(JSONISH, lambda x: st.lists(x, max_size=3)).map(json.dumps))


@fuzz(400)
@given(raw=REPLIES, budget=st.integers(0, 6), target=st.sampled_from(["skill", "memory"]))
def test_parse_reply_and_hygiene_never_raise(raw: str, budget: int, target: str) -> None:
    parsed = parse_reply(raw, target=target, budget=budget)
    assert len(parsed.edits) <= budget
    assert all(e.target == target and e.op in ("add", "replace", "delete")
               for e in parsed.edits)
    assert parsed.error is None or isinstance(parsed.error, str)
    kept, rejected = check_hygiene(
        parsed.edits, failing_checks=[Check("regex", "(a|a)*$"), Check("contains", "X"),
                                      Check("max_chars", 10)],
        task_prompts=[raw[:50]], current_rules=["Keep it short"])
    assert len(kept) + len(rejected) == len(parsed.edits)


@fuzz(400)
@given(text=st.one_of(ANY_TEXT, JSONISH.map(json.dumps),
                      st.builds(lambda s, r: json.dumps({"score": s, "reason": r}),
                                SCALARS, SCALARS),
                      st.lists(st.sampled_from(["score", ":", "=", "/", "-", "1", "0", ".",
                                                "10", "{", "}", '"', " ", "e9", "NaN"]),
                               max_size=20).map("".join)))
def test_parse_rubric_reply_gives_a_score_in_range_or_none(text: str) -> None:
    score = parse_rubric_reply(text)
    if score is not None:
        assert isinstance(score, Score)
        assert 0.0 <= score.soft <= 1.0 and score.hard in (0.0, 1.0)
        assert not math.isnan(score.soft)


PATTERNS = st.one_of(st.lists(st.sampled_from(list("()[]{}|*+?.^$\\-,:=!<>") + [
    "a", "b", "1", "{2}", "{0,3}", "{99999}", "(?i)", "(?:", "(?=", "(?!", "(?<=", "(?P<n>",
    "(?P=n)", "\\d", "\\s", "\\b", "[^", "\\1", "[a-z]", "(?>", "*+", "{1,}"]), max_size=16)
    .map("".join), TEXT)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # "possible nested set" from `re`
@fuzz(400)
@given(pattern=PATTERNS, answer=ANY_TEXT,
       # `command` runs its arg as a program: never a fuzzed one (tests/test_command_check.py)
       op=st.sampled_from([op for op in RULE_OPS if not OPS[op].runs_program]),
       arg=st.one_of(TEXT, st.integers(-3, 500), st.none()))
def test_judging_and_regex_helpers_never_raise(pattern: str, answer: str, op: str,
                                               arg: object) -> None:
    passed, note = check_passes(Check("regex", pattern), answer)
    assert isinstance(passed, bool) and isinstance(note, str)
    check_passes(Check(op, arg), answer)  # type: ignore[arg-type]
    score_exact(str(arg), answer)
    assert regex_size(pattern) >= 0
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        assume(False)
    literal = literal_for_regex(pattern)
    if literal is not None:
        assert re.search(pattern, literal), (pattern, literal)


@fuzz(200)
@given(text=ANY_TEXT, secret=st.text(alphabet="abcXYZ019-_", min_size=8, max_size=20))
def test_redaction_never_raises_and_masks_the_secret(text: str, secret: str) -> None:
    out = Redactor([secret]).redact(text + secret + text)
    assert secret not in out


# -- findings of long sessions, kept as regression tests ------------------------------------


@pytest.mark.parametrize(("data", "code"), [
    (b'{"id": 1' + b"0" * 5000 + b', "prompt": "p", "judge": {"kind": "exact", "answer": "x"}}',
     "GS101"),  # ValueError: Exceeds the limit (4300 digits) for integer string conversion
    (b'[{"id": 1' + b"0" * 5000 + b"}]", "GS101"),
    (b"- id: 2001-02-30\n", "GS101"),  # ValueError: day is out of range for month
    (b"- id: 1" + b"0" * 5000 + b"\n", "GS101"),
    (b"- {id: a, id: b}\n", "GS101"),  # silently last-wins before
    (b'{"id": "\\udfff", "prompt": "p", "judge": {"answer": "x"}}', "GS102"),
])
def test_long_session_findings_in_task_files(tmp_path: Path, data: bytes, code: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    tasks, problems = parse_task_file(path, "t.jsonl")
    assert tasks == [] and code in [p.code for p in problems]


@pytest.mark.parametrize("check", [
    {"op": "max_chars", "arg": "9" * 5000},  # int() of a 5000-digit string
    {"op": "regex", "arg": "a{1000000000}"},  # the judge's engine would allocate gigabytes
    {"op": "regex", "arg": "(?:(?:(?:a{50}){50}){50})"},
])
def test_long_session_findings_in_checks(tmp_path: Path, check: dict) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": "p", "judge": {"checks": [check]}}))
    tasks, problems = parse_task_file(path, "t.jsonl")
    assert tasks == [] and {p.code for p in problems} & {"GS123", "GS124"}
    assert all(len(p.message) < 300 for p in problems)


@pytest.mark.parametrize("text", [
    "version: 1\nmodel: 2001-02-30\nskills: []\n",
    "version: 1\nworkers: 1" + "0" * 5000 + "\n",
    "version: 1\nversion: 1\n",
])
def test_long_session_findings_in_configs(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(text)
    with pytest.raises(UsageError):
        load_config(path)
