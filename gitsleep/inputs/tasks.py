"""Task files: read three formats, build `Task` records, and find every problem.

Formats are detected by content, not by file name:

1. gitsleep's own records `{"id", "prompt", "split"?, "judge", "system"?, "tags"?}`, as a
   JSON list, a `{"tasks": [...]}` object, JSON Lines or YAML;
2. gbrain-evals lines `{"task_id", "task", "judge"}`;
3. SkillOpt-Sleep `skillopt_sleep.tasks.v1` records (`id`, `intent`, `reference_kind`,
   `reference`, `judge`, `split`, ...), with legacy splits replay -> train, holdout -> val.

Loading never stops at the first problem: `check_skill_tasks` returns every problem with
its file and line so `gitsleep validate` can list them all, and `load_skill_tasks` turns
the first error into one usage error for the commands that spend money.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import posixpath
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import ValidationError

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import (
    ERROR,
    WARNING,
    FileProblem,
    Problem,
    compose_yaml,
    construct_yaml,
    read_text,
)
from gitsleep.core import sandbox
from gitsleep.core.check_ops import OPS, RULE_OPS, CheckOp, check_argv, is_check_op
from gitsleep.core.models import SPLITS, Check, Judge, Split, Task, Trigger, is_split
from gitsleep.core.patterns import MAX_REGEX_SIZE, regex_size
from gitsleep.core.tools import TOOL_NAME_RE, ToolSpec
from gitsleep.inputs.config import CONFIG_NAME, SkillConfig
from gitsleep.inputs.tool_settings import ToolConfig, unique_names
from gitsleep.sandbox import workspace as workspaces
from gitsleep.sandbox.check_program import argv_problem, program_problem

SPLIT_SEED = "gitsleep-split-v1:"
VAL_PERCENT = 34  # share of unlabelled tasks that `split: auto` puts in val
LEGACY_SPLITS = {"replay": "train", "holdout": "val"}
OWN_KEYS = ("id", "prompt", "split", "judge", "system", "tags", "review", "source", "workspace",
            "tools")
TRIGGER_KEYS = ("id", "query", "should_trigger", "expect", "split", "tags", "review", "source")
PENDING = "pending"  # `review: pending`: harvested, left out of runs until a person removes it
REVIEW_MARKS = (PENDING, "accepted")
JUDGE_KINDS = ("rule", "exact", "rubric")

Reporter = Callable[[str, str, str], None]  # (severity, code, message)


def _shown(value: Any, limit: int = 60) -> str:
    """A value quoted for a message, clipped: a 5,000-digit bound or a 1 MB id is one
    readable line, not a screenful."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def split_for(task_id: str) -> Split:
    """The split `auto` gives an unlabelled task: a stable hash of its id alone.

    Adding or removing other tasks never moves this one.
    """
    digest = hashlib.sha256(f"{SPLIT_SEED}{task_id}".encode()).hexdigest()
    return "val" if int(digest, 16) % 100 < VAL_PERCENT else "train"


# --- one file ---------------------------------------------------------------------------


def parse_task_file(
    path: Path, source: str, file_split: Split | Literal["auto"] = "auto"
) -> tuple[list[Task], list[Problem]]:
    """Tasks and problems of one file. `source` is the repo-relative name used in messages."""
    problems: list[Problem] = []
    try:
        text = read_text(path)
    except FileProblem as exc:
        return [], [Problem(source, exc.line, exc.code, ERROR, f"task file {exc.message}")]
    records = _records(text, source, path.suffix.lower(), problems)
    tasks: list[Task] = []
    for index, (record, line) in enumerate(records):

        def report(severity: str, code: str, message: str, line: int | None = line) -> None:
            problems.append(Problem(source, line, code, severity, message))

        task = _task_from_record(record, index, source, line, file_split, report)
        if task is not None:
            tasks.append(task)
    pending = [t for t in tasks if t.review == PENDING]
    if pending:
        problems.append(Problem(
            source, pending[0].line, "GS119", WARNING,
            f"{len(pending)} task(s) marked review: pending (first {_shown(pending[0].id)}): "
            "harvested tasks are left out of eval and consolidate until a person reads each "
            'one and accepts it: remove "review": "pending" (or delete the task)'))
    if not records and not any(p.is_error for p in problems):
        problems.append(Problem(source, None, "GS107", WARNING, "task file holds no tasks"))
    return tasks, problems


def _records(
    text: str, source: str, suffix: str, problems: list[Problem]
) -> list[tuple[Any, int | None]]:
    """The raw task records of a file with the line each starts on, by detected format."""
    start = text.lstrip()
    if not start:
        return []
    try:
        if start[0] in "[{":
            try:
                data, lines, top_line = _json_document(text)
            except (json.JSONDecodeError, DuplicateKey) as exc:
                if suffix == ".jsonl" or _looks_like_jsonl(text):
                    return _jsonl_records(text, source, problems)
                if suffix in (".yaml", ".yml"):
                    return _yaml_records(text, source, problems)
                if isinstance(exc, DuplicateKey):
                    problems.append(Problem(source, None, "GS101", ERROR, exc.message("JSON")))
                    return []
                problems.append(
                    Problem(source, exc.lineno, "GS101", ERROR,
                            f"JSON does not parse: {exc.msg} (column {exc.colno})")
                )
                return []
        else:
            return _yaml_records(text, source, problems)
    except RecursionError:
        problems.append(Problem(source, None, "GS104", ERROR,
                                "task file is nested too deeply to read"))
        return []
    except ValueError as exc:  # not a JSONDecodeError: a number of thousands of digits
        problems.append(Problem(source, None, "GS101", ERROR,
                                f"JSON does not parse: {_number_problem(exc)}"))
        return []
    return _shape(data, lines, top_line, source, problems)


def _number_problem(exc: ValueError) -> str:
    """Python's int/str digit limit, said for a person editing a task file."""
    return f"a number is too long to read ({str(exc).split(';')[0].strip()}); quote it"


def _looks_like_jsonl(text: str) -> bool:
    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        return isinstance(json.loads(first), dict)
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        return False


def _jsonl_records(
    text: str, source: str, problems: list[Problem]
) -> list[tuple[Any, int | None]]:
    records: list[tuple[Any, int | None]] = []
    # split on "\n" only: str.splitlines would also split on U+2028 inside JSON strings
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            records.append((json.loads(line, object_pairs_hook=_no_duplicate_keys), number))
        except DuplicateKey as exc:
            problems.append(Problem(source, number, "GS101", ERROR,
                                    exc.message("JSON Lines record")))
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(source, number, "GS101", ERROR,
                        f"JSON Lines record does not parse: {exc.msg} (column {exc.colno})")
            )
        except RecursionError:
            problems.append(
                Problem(source, number, "GS104", ERROR, "record is nested too deeply to read")
            )
        except ValueError as exc:
            problems.append(
                Problem(source, number, "GS101", ERROR,
                        f"JSON Lines record does not parse: {_number_problem(exc)}")
            )
    return records


def _yaml_records(
    text: str, source: str, problems: list[Problem]
) -> list[tuple[Any, int | None]]:
    try:
        node = compose_yaml(text)
        if node is None:
            return []
        data = construct_yaml(node)
    except FileProblem as exc:
        problems.append(Problem(source, exc.line, exc.code, ERROR, exc.message))
        return []
    items = node
    if isinstance(node, yaml.MappingNode):
        items = next((v for k, v in node.value if getattr(k, "value", None) == "tasks"), node)
    lines = (
        [child.start_mark.line + 1 for child in items.value]
        if isinstance(items, yaml.SequenceNode)
        else []
    )
    return _shape(data, lines, node.start_mark.line + 1, source, problems)


def _shape(
    data: Any, lines: list[int], top_line: int, source: str, problems: list[Problem]
) -> list[tuple[Any, int | None]]:
    """Records from a parsed document: a list, `{"tasks": [...]}`, or one bare record."""
    if isinstance(data, dict) and "tasks" in data:
        data = data["tasks"]
        if not isinstance(data, list):
            problems.append(
                Problem(source, top_line, "GS105", ERROR,
                        "'tasks' must be a list of task objects")
            )
            return []
    elif isinstance(data, dict) and data.keys() & {"id", "prompt", "task", "task_id", "intent"}:
        return [(data, top_line)]
    if not isinstance(data, list):
        problems.append(
            Problem(source, top_line, "GS105", ERROR,
                    "must hold a list of tasks, an object with a 'tasks' list, "
                    "or one JSON object per line")
        )
        return []
    if len(lines) != len(data):
        lines = [top_line] * len(data)  # positions unknown: point at the document
    return list(zip(data, lines, strict=True))


# JSON with line numbers: the standard decoder does the work, element by element.
_WS = re.compile(r"[ \t\n\r]*")
class DuplicateKey(ValueError):
    """A JSON object names one key twice: `json` would keep the last value and lose the
    first unseen (a task's first judge, say), so it is refused as YAML's duplicates are."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def message(self, what: str) -> str:
        return f"{what} names the key {self.key!r} twice; keep one"


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DuplicateKey(key)
        obj[key] = value
    return obj


_DECODE = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys).raw_decode


class _LineCounter:
    """1-based line numbers for increasing offsets, counted incrementally."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1

    def at(self, pos: int) -> int:
        self.line += self.text.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


def _json_document(text: str) -> tuple[Any, list[int], int]:
    """Parse JSON; also return the line where each element of the task list starts."""
    counter = _LineCounter(text)
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    top_line = counter.at(pos)
    lines: list[int] = []
    data: Any
    if text.startswith("[", pos):
        data, pos = _json_array(text, pos, counter, lines)
    elif text.startswith("{", pos):
        data, pos = _json_object(text, pos, counter, lines)
    else:
        data, pos = _DECODE(text, pos)
    pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
    if pos != len(text):
        raise json.JSONDecodeError("Extra data", text, pos)
    return data, lines, top_line


def _skip(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _next_item(text: str, pos: int, close: str) -> tuple[bool, int]:
    """After an item of an array or object: (True, past `close`) at its end, (False, at the
    next item) after a comma; anything else is the error `json` itself would raise."""
    pos = _skip(text, pos)
    if text.startswith(",", pos):
        return False, _skip(text, pos + 1)
    if text.startswith(close, pos):
        return True, pos + 1
    raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)


def _json_array(
    text: str, pos: int, counter: _LineCounter, lines: list[int]
) -> tuple[list[Any], int]:
    items: list[Any] = []
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return items, pos + 1
    while True:
        lines.append(counter.at(pos))
        value, pos = _DECODE(text, pos)
        items.append(value)
        closed, pos = _next_item(text, pos, "]")
        if closed:
            return items, pos


def _json_object(
    text: str, pos: int, counter: _LineCounter, lines: list[int]
) -> tuple[dict[str, Any], int]:
    obj: dict[str, Any] = {}
    pos = _skip(text, pos + 1)
    if text.startswith("}", pos):
        return obj, pos + 1
    while True:
        if not text.startswith('"', pos):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, pos
            )
        key, pos = _DECODE(text, pos)
        if key in obj:
            raise DuplicateKey(key)
        pos = _skip(text, pos)
        if not text.startswith(":", pos):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
        pos = _skip(text, pos + 1)
        if key == "tasks" and text.startswith("[", pos):
            lines.clear()
            obj[key], pos = _json_array(text, pos, counter, lines)
        else:
            obj[key], pos = _DECODE(text, pos)
        closed, pos = _next_item(text, pos, "}")
        if closed:
            return obj, pos


# --- one record -------------------------------------------------------------------------


def _task_from_record(
    record: Any,
    index: int,
    source: str,
    line: int | None,
    file_split: Split | Literal["auto"],
    report: Reporter,
) -> Task | None:
    """A Task, or None after reporting why this record cannot be one."""
    if not isinstance(record, dict):
        report(ERROR, "GS105",
               f"task #{index + 1} must be an object with id, prompt and judge, "
               f"not {type(record).__name__}")
        return None
    if _has_surrogate(record):
        # JSON can spell half a UTF-16 pair ("\ud800"); Python keeps it, but no file,
        # commit or HTTP request can carry it, so the run would fail far from the cause.
        report(ERROR, "GS102",
               f"task #{index + 1} holds an unpaired UTF-16 surrogate escape "
               "(\\ud800-\\udfff): not valid Unicode text; write the character itself")
        return None
    if "intent" in record:
        fmt, id_key, prompt_key = "skillopt", "id", "intent"
    elif "prompt" not in record and ("task" in record or "task_id" in record):
        fmt, id_key, prompt_key = "gbrain", "task_id", "task"
    else:
        fmt, id_key, prompt_key = "gitsleep", "id", "prompt"

    raw_id = record.get(id_key, record.get("id"))
    if isinstance(raw_id, int) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    if not isinstance(raw_id, str) or not raw_id.strip():
        report(ERROR, "GS110",
               f"task #{index + 1} has no {id_key!r}: give every task a unique string id")
        return None
    task_id = raw_id.strip()
    name = f"task {_shown(task_id)}"
    ok = True
    if fmt == "gitsleep" and ("should_trigger" in record or "query" in record):
        return _trigger_task(record, task_id, source, line, file_split, report)

    if fmt == "gitsleep":
        for key in record:
            close = difflib.get_close_matches(str(key), OWN_KEYS, n=1, cutoff=0.75)
            if key not in OWN_KEYS and close:
                report(WARNING, "GS106",
                       f"{name}: unknown key {_shown(key)} is ignored; did you mean {close[0]!r}?")

    prompt = record.get(prompt_key)
    if not isinstance(prompt, str) or not prompt.strip():
        report(ERROR, "GS111", f"{name}: {prompt_key!r} is missing or empty: write the prompt")
        ok = False

    if fmt == "skillopt":
        judge = _skillopt_judge(record, name, report)
    else:
        judge = parse_judge(record.get("judge"), name, report)
    ok = ok and judge is not None

    split, split_ok = _split_of(record.get("split"), file_split, name, report)
    system, tags, review, extras_ok = _extras_of(record, name, report)
    workspace, workspace_ok = _workspace_of(
        record.get("workspace") if fmt == "gitsleep" else None, judge, name, report)
    tools, tools_ok = _tools_of(record.get("tools") if fmt == "gitsleep" else None, name, report)
    ok = ok and split_ok and extras_ok and workspace_ok and tools_ok

    if not ok or judge is None:
        return None
    return Task(
        id=task_id,
        prompt=str(prompt),  # a str here: checked above (ok)
        split=split or split_for(task_id),
        judge=judge,
        system=system or None,
        tags=tuple(tags),
        source=source,
        line=line,
        review=review,
        workspace=workspace,
        tools=tools,
    )


def _tools_of(raw: Any, name: str, report: Reporter) -> tuple[tuple[ToolSpec, ...], bool]:
    """The task's own tool declarations (they replace its skill's), and whether they are
    sound (GS160: one line naming the tool and the fix)."""
    if raw is None:
        return (), True
    if not isinstance(raw, list) or not raw:
        report(ERROR, "GS160", f"{name}: tools must be a non-empty list like "
               '[{"tool": "search", "folder": "brain/topics"}]')
        return (), False
    found: list[ToolConfig] = []
    for number, item in enumerate(raw, start=1):
        try:
            found.append(ToolConfig.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            report(ERROR, "GS160", f"{name}: tool {number}{f' {where}' if where else ''}: "
                   f"{first['msg'].removeprefix('Value error, ')}")
            return (), False
    try:
        unique_names(found)
    except ValueError as exc:
        report(ERROR, "GS160", f"{name}: {exc}")
        return (), False
    return tuple(t.spec() for t in found), True


def _trigger_task(record: dict[str, Any], task_id: str, source: str, line: int | None,
                  file_split: Split | Literal["auto"], report: Reporter) -> Task | None:
    """A trigger task `{id, query, should_trigger, expect?}`, or None after reporting why
    not. An empty query is a warning and the task is left out (nothing to ask)."""
    name = f"trigger task {_shown(task_id)}"
    for key in record:
        close = difflib.get_close_matches(str(key), TRIGGER_KEYS, n=1, cutoff=0.75)
        if key not in TRIGGER_KEYS and close:
            report(WARNING, "GS106",
                   f"{name}: unknown key {_shown(key)} is ignored; did you mean {close[0]!r}?")
    query = record.get("query")
    should = record.get("should_trigger")
    expect = record.get("expect")
    ok = True
    if not isinstance(should, bool):
        report(ERROR, "GS170", f"{name}: 'should_trigger' must be true or false (got "
               f"{_shown(should)}): say whether this skill should be picked for the query")
        ok = False
    if expect is not None and (not isinstance(expect, str) or not expect.strip()):
        report(ERROR, "GS171", f"{name}: 'expect' must name the sibling skill the query "
               "belongs to")
        ok = False
    elif expect is not None and should is True:
        report(ERROR, "GS171", f"{name}: 'expect' names the sibling a should-not query "
               "belongs to; set should_trigger to false or remove expect")
        ok = False
    split, split_ok = _split_of(record.get("split"), file_split, name, report)
    _, tags, review, extras_ok = _extras_of(record, name, report)
    if not isinstance(query, str) or not query.strip():
        report(WARNING, "GS172", f"{name}: 'query' is missing or empty, so the task is left "
               "out: write the request a user would make")
        return None
    if not (ok and split_ok and extras_ok) or not isinstance(should, bool):
        return None
    return Task(id=task_id, prompt=query.strip(), split=split or split_for(task_id),
                judge=Judge("trigger"), tags=tuple(tags), source=source, line=line,
                review=review, trigger=Trigger(should, expect.strip() if expect else None))


def _split_of(label: Any, file_split: Split | Literal["auto"], name: str,
              report: Reporter) -> tuple[Split | None, bool]:
    """The task's split (the file's, else its own label, else None) and whether the
    label was valid."""
    split: Split | None = None
    ok = True
    if label not in (None, ""):
        normal = label.strip().lower() if isinstance(label, str) else None
        named = LEGACY_SPLITS.get(normal or "", normal)
        if is_split(named):
            split = named
        else:
            report(ERROR, "GS114",
                   f"{name}: split must be train, val or test (got {_shown(label)})")
            ok = False
    if file_split != "auto":
        split = file_split
    return split, ok


def _extras_of(record: dict[str, Any], name: str, report: Reporter
               ) -> tuple[str | None, list[str], Any, bool]:
    """(system, tags, review mark, ok): the optional fields beside id, prompt and judge."""
    ok = True
    system = record.get("system")
    if system is not None and not isinstance(system, str):
        report(ERROR, "GS118", f"{name}: 'system' must be a string")
        ok = False
    tags = record.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        report(ERROR, "GS118", f"{name}: 'tags' must be a list of strings")
        ok = False
    review = record.get("review")
    if review is not None and review not in REVIEW_MARKS:
        report(ERROR, "GS119",
               f"{name}: review must be \"pending\" or \"accepted\" (got {_shown(review)}); "
               "remove the field once the task is reviewed")
        ok = False
    if record.get("source") is not None and not isinstance(record.get("source"), dict):
        report(ERROR, "GS118", f"{name}: 'source' must be an object like "
               '{"tool": ..., "session": ..., "time": ...}')
        ok = False
    return system, tags, review, ok


def _workspace_of(raw_workspace: Any, judge: Judge | None, name: str,
                  report: Reporter) -> tuple[str | None, bool]:
    """The task's workspace folder (normalised) and whether it, and the checks that need
    one, are valid."""
    workspace: str | None = None
    ok = True
    if raw_workspace is not None:
        if not isinstance(raw_workspace, str):
            report(ERROR, "GS130",
                   f"{name}: workspace must be a string naming a folder of the repository "
                   f"(e.g. \"evals/changelog/fixture\"), got {_shown(raw_workspace)}")
            ok = False
        elif (problem := sandbox.folder_problem(raw_workspace)) is not None:
            report(ERROR, "GS130", f"{name}: workspace {_shown(raw_workspace)} {problem}")
            ok = False
        else:
            workspace = sandbox.normal_folder(raw_workspace)
    if judge is not None and workspace is None and raw_workspace is None:
        for number, check in enumerate(judge.checks, start=1):
            if OPS[check.op].reads == "workspace":
                report(ERROR, "GS135",
                       f"{name}: check {number}: {check.op} judges the task's workspace after "
                       'the agent ran, and the task has none: add "workspace": "<folder>" '
                       "or remove the check")
                ok = False
    return workspace, ok


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: Any) -> bool:
    """Whether any string in a parsed record (keys included) holds a lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _skillopt_judge(record: dict[str, Any], name: str, report: Reporter) -> Judge | None:
    """A judge from a SkillOpt-Sleep record: its reference_kind decides which one."""
    kind = record.get("reference_kind") or "none"
    reference = record.get("reference")
    if kind in ("exact", "answer", "rubric"):
        text = str(reference) if isinstance(reference, (int, float, str)) else ""
        if not text.strip():
            report(ERROR, "GS127",
                   f"{name}: reference_kind {_shown(kind)} needs a non-empty 'reference'")
            return None
        if kind == "rubric":
            return Judge(kind="rubric", rubric=text)
        return Judge(kind="exact", answer=text)
    if kind in ("rule", "none"):
        if kind == "none" and not record.get("judge"):
            report(ERROR, "GS120",
                   f"{name}: reference_kind 'none' and no judge: nothing can score it; "
                   "add a judge or a reference")
            return None
        return parse_judge(record.get("judge"), name, report)
    report(ERROR, "GS121",
           f"{name}: unknown reference_kind {_shown(kind)}: use exact, rubric or rule")
    return None


def parse_judge(raw: Any, name: str, report: Reporter) -> Judge | None:
    """A Judge from its JSON form, or None after reporting every problem in it."""
    if raw is None or raw == {}:
        report(ERROR, "GS120",
               f"{name}: no judge: add {{\"kind\": \"rule\", \"checks\": [...]}}, "
               "an exact answer or a rubric")
        return None
    if not isinstance(raw, dict):
        report(ERROR, "GS120", f"{name}: 'judge' must be an object with a 'kind'")
        return None
    kind = raw.get("kind")
    if kind is None:  # infer from the one field that says it
        kind = next((k for k, f in (("rule", "checks"), ("exact", "answer"),
                                    ("rubric", "rubric")) if f in raw), None)
        if kind is None:
            report(ERROR, "GS120",
                   f"{name}: judge needs a 'kind': rule (with checks), exact (with answer) "
                   "or rubric (with rubric)")
            return None
    if kind not in JUDGE_KINDS:
        report(ERROR, "GS121",
               f"{name}: unknown judge kind {_shown(kind)}: use rule, exact or rubric")
        return None
    if kind in ("exact", "rubric"):
        field = "answer" if kind == "exact" else "rubric"
        text = raw.get(field)
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            text = str(text)
        if not isinstance(text, str) or not text.strip():
            report(ERROR, "GS127", f"{name}: {kind} judge needs a non-empty {field!r}")
            return None
        return Judge(kind=kind, answer=text) if kind == "exact" else Judge(kind=kind, rubric=text)

    checks_raw = raw.get("checks")
    if not isinstance(checks_raw, list) or not checks_raw:
        report(ERROR, "GS126",
               f"{name}: rule judge needs a non-empty 'checks' list of {{\"op\", \"arg\"}}")
        return None
    checks: list[Check] = []
    for number, item in enumerate(checks_raw, start=1):
        check = _parse_check(item, f"{name}: check {number}", report)
        if check is not None:
            checks.append(check)
    if len(checks) != len(checks_raw):
        return None
    judge = Judge(kind="rule", checks=tuple(checks))
    if judge.format_only:
        report(WARNING, "GS128",
               f"{name}: judge only checks the answer's shape "
               f"({', '.join(sorted({c.op for c in checks}))}); add a content check "
               "(contains, regex, equals) so edits cannot pass by formatting alone")
    return judge


def _parse_check(item: Any, where: str, report: Reporter) -> Check | None:
    if not isinstance(item, dict) or "op" not in item:
        report(ERROR, "GS125", f"{where} must be an object like {{\"op\": \"contains\", "
               "\"arg\": \"...\"}")
        return None
    op, arg = item["op"], item.get("arg")
    if not is_check_op(op):
        close = difflib.get_close_matches(str(op), RULE_OPS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        report(ERROR, "GS122",
               f"{where}: unknown op {_shown(op)}: {hint}known ops: {', '.join(RULE_OPS)}")
        return None
    spec = OPS[op]
    args_regex = item.get("args_regex")
    if args_regex is not None:
        return _with_args_regex(_parse_check({"op": op, "arg": arg}, where, report),
                                args_regex, where, report)
    if spec.arg_shape != "text":
        return _structured_check(op, arg, where, report)
    if not spec.takes_arg:
        if arg not in (None, ""):
            report(ERROR, "GS125",
                   f"{where}: {op} takes no arg (got {_shown(arg)}): remove it")
            return None
        return Check(op=op)
    if spec.bound:
        bound = char_bound(arg)
        if bound is None:
            report(ERROR, "GS124",
                   f"{where}: {op} needs a non-negative whole number of characters "
                   f"(got {_shown(arg)})")
            return None
        if spec.bound == "min" and bound == 0:
            report(WARNING, "GS124", f"{where}: {op} 0 always passes: raise it or remove it")
        return Check(op=op, arg=bound)
    pattern = spec.quotes == "pattern"
    if isinstance(arg, (int, float)) and not isinstance(arg, bool) and not pattern:
        arg = str(arg)
    if not isinstance(arg, str) or not arg.strip():
        report(ERROR, "GS125", f"{where}: {op} needs a non-empty text arg")
        return None
    if pattern:
        problem = _regex_problem(arg)
        if problem:
            report(ERROR, "GS123", f"{where}: {problem}")
            return None
    return Check(op=op, arg=arg)


def _with_args_regex(check: Check | None, args_regex: Any, where: str, report: Reporter
                     ) -> Check | None:
    """A `tool_called` / `tool_not_called` check with the regex its call's arguments must
    match; any other op with one is an error (it would be silently ignored)."""
    if check is None:
        return None
    if check.op not in ("tool_called", "tool_not_called"):
        report(ERROR, "GS125", f"{where}: {check.op} takes no args_regex (only tool_called "
               "and tool_not_called do): remove it")
        return None
    if not isinstance(args_regex, str) or not args_regex.strip():
        report(ERROR, "GS125", f"{where}: args_regex must be a non-empty regular expression "
               f"(got {_shown(args_regex)})")
        return None
    problem = _regex_problem(args_regex)
    if problem:
        report(ERROR, "GS123", f"{where}: args_regex: {problem}")
        return None
    return Check(op=check.op, arg=check.arg, args_regex=args_regex)


def _tool_name_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not TOOL_NAME_RE.match(value):
        return ("a tool name: letters, digits, '_' or '-', starting with a letter "
                '(e.g. "search")')
    return None


def _regex_problem(pattern: str) -> str | None:
    """Why a task's regex cannot be judged with, or None."""
    try:
        with warnings.catch_warnings():  # "Possible nested set": stderr noise, not a fault
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except re.error as exc:
        return f"invalid regex {_shown(pattern)}: {exc.msg} at position {exc.pos}"
    except (RecursionError, OverflowError):
        return "regex too complex to compile"
    if regex_size(pattern) > MAX_REGEX_SIZE:
        return (f"regex repeats too much (over {MAX_REGEX_SIZE} steps once its "
                "counted repeats like x{n} are written out): use smaller counts")
    return None


def _workspace_path_problem(value: Any) -> str | None:
    """Why a check's path is not a relative path inside the workspace, or None."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        return "a relative path in the workspace"
    text = value.replace("\\", "/")
    normal = posixpath.normpath(text)
    if text.startswith("/") or normal in (".", "..") or normal.startswith("../"):
        return "a relative path in the workspace (no '..', not absolute)"
    return None


_FILE_TEXT_SHAPE = ('{"path": "...", "text": "..."} or {"path": "...", "regex": "..."}')


def _structured_check(op: CheckOp, arg: Any, where: str, report: Reporter) -> Check | None:
    """A check whose arg is not plain text: an argv, a workspace path, a file
    and what it must hold, or a count. Structured args are kept as canonical JSON."""
    shape = OPS[op].arg_shape
    if shape == "argv":
        problem = argv_problem(arg)
        if problem:
            report(ERROR, "GS132", f"{where}: command {problem} (got {_shown(arg)})")
            return None
        return Check(op=op, arg=json.dumps(arg, ensure_ascii=False))
    if shape == "count":
        bound = char_bound(arg) if not isinstance(arg, str) else None
        if bound is None:
            counted = "tool calls" if OPS[op].reads == "trace" else "files"
            report(ERROR, "GS134",
                   f"{where}: {op} needs a non-negative whole number of {counted} "
                   f"(got {_shown(arg)})")
            return None
        return Check(op=op, arg=bound)
    if shape == "tool":  # a bare tool name, as gbrain-evals writes it
        problem = _tool_name_problem(arg)
        if problem:
            report(ERROR, "GS125", f"{where}: {op} needs {problem} (got {_shown(arg)})")
            return None
        return Check(op=op, arg=arg)
    if shape == "tool_pair":
        names = arg if isinstance(arg, list) else None
        if (names is None or len(names) != 2 or any(_tool_name_problem(n) for n in names)
                or names[0] == names[1]):
            report(ERROR, "GS125", f'{where}: {op} needs two different tool names in order, '
                   f'like ["search", "read_file"] (got {_shown(arg)})')
            return None
        return Check(op=op, arg=json.dumps(names, ensure_ascii=False))
    if shape == "path":
        problem = _workspace_path_problem(arg)
        if problem:
            report(ERROR, "GS134", f"{where}: {op} needs {problem} (got {_shown(arg)})")
            return None
        return Check(op=op, arg=posixpath.normpath(str(arg).replace("\\", "/")))
    if not isinstance(arg, dict):
        report(ERROR, "GS134", f"{where}: {op} needs {_FILE_TEXT_SHAPE} (got {_shown(arg)})")
        return None
    unknown = sorted(str(k) for k in arg if k not in ("path", "text", "regex"))
    if unknown:
        report(ERROR, "GS134", f"{where}: {op} has unknown key {_shown(unknown[0])}: "
               f"use {_FILE_TEXT_SHAPE}")
        return None
    problem = _workspace_path_problem(arg.get("path"))
    if problem:
        report(ERROR, "GS134",
               f"{where}: {op} needs a \"path\" that is {problem} (got {_shown(arg.get('path'))})")
        return None
    kinds = [k for k in ("text", "regex") if k in arg]
    if len(kinds) != 1:
        report(ERROR, "GS134", f'{where}: {op} needs either a "text" or a "regex" beside '
               '"path", not both and not neither')
        return None
    value = arg[kinds[0]]
    if not isinstance(value, str) or not value.strip():
        report(ERROR, "GS134", f"{where}: {op} needs a non-empty {kinds[0]} string")
        return None
    if kinds[0] == "regex":
        regex_problem = _regex_problem(value)
        if regex_problem:
            report(ERROR, "GS123", f"{where}: {op}: {regex_problem}")
            return None
    path = posixpath.normpath(str(arg["path"]).replace("\\", "/"))
    return Check(op=op, arg=json.dumps({"path": path, kinds[0]: value}, ensure_ascii=False))


def char_bound(value: Any) -> int | None:
    """A character bound: an int, a whole float, or a digit string; anything else is None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and value >= 0:
            return int(value)
        return None
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,18}", value.strip()):
        return int(value.strip())
    return None


# --- one skill --------------------------------------------------------------------------


def check_skill_tasks(repo_root: Path, skill: SkillConfig) -> tuple[list[Task], list[Problem]]:
    """Every valid task of a skill and every problem found, across all its files."""
    tasks: list[Task] = []
    problems: list[Problem] = []
    seen_files: set[str] = set()
    for entry in skill.tasks:
        if entry.path in seen_files:
            problems.append(Problem(entry.path, None, "GS001", ERROR,
                                    f"listed twice for skill {skill.name!r}: remove one entry"))
            continue
        seen_files.add(entry.path)
        if not _inside(repo_root, entry.path):
            problems.append(Problem(entry.path, None, "GS100", ERROR,
                                    "task file points outside the repository (a symlink); "
                                    "keep task files inside the repo"))
            continue
        file_tasks, file_problems = parse_task_file(repo_root / entry.path, entry.path,
                                                    entry.split)
        tasks.extend(file_tasks)
        problems.extend(file_problems)
    tasks = _drop_duplicates(tasks, problems)
    _check_workspaces(repo_root, tasks, problems)
    _check_task_files_outside_workspaces(skill, tasks, problems)
    _check_prompt_leaks(tasks, problems)
    return tasks, problems + skill_problems(repo_root, skill, tasks, problems)


def skill_problems(repo_root: Path, skill: SkillConfig, tasks: list[Task],
                   file_problems: Sequence[Problem] = ()) -> list[Problem]:
    """The problems that belong to the skill, not to its task files (its package, its split
    sizes): `validate` runs these for every skill, also for skills that share task files.
    `file_problems` are the task files' own: with an error among them, an empty task list
    is their consequence and gets no line of its own."""
    problems: list[Problem] = list(file_problems)
    first = len(problems)
    if skill.package is not None:  # installed beside the skill: a folder like a workspace
        problem = workspaces.folder_problem_on_disk(repo_root, skill.package)
        if problem:
            fix = problem.replace("the task's workspace", "the skill's package:")
            problems.append(Problem(CONFIG_NAME, None, "GS137", ERROR,
                                    f"skill {skill.name!r}: package {skill.package!r} {fix}"))
    _check_split_sizes(skill, tasks, problems)
    return problems[first:]


def _check_workspaces(repo_root: Path, tasks: list[Task], problems: list[Problem]) -> None:
    """Each task's workspace folder is a folder of this checkout that stays inside the
    repository, and each check command's program can be found where it would run: on
    PATH, or in the workspace for `./script` (so a night never starts to fail on it)."""
    folder_problems: dict[str, str | None] = {}  # tasks share fixtures: walk each folder once
    for task in tasks:
        name = f"task {_shown(task.id)}"
        folder: Path | None = None
        if task.workspace is not None:
            if task.workspace not in folder_problems:
                folder_problems[task.workspace] = workspaces.folder_problem_on_disk(
                    repo_root, task.workspace)
            problem = folder_problems[task.workspace]
            if problem:
                problems.append(Problem(task.source, task.line, "GS131", ERROR,
                                        f"{name}: workspace {task.workspace!r} {problem}"))
                continue
            folder = repo_root / task.workspace
        for number, check in enumerate(task.judge.checks, start=1):
            argv = check_argv(check.op, check.text)
            if argv is not None:
                if folder is not None:  # '..' or a link of the fixture on one of its paths
                    path_problem = workspaces.argv_path_problem(folder, argv)
                    if path_problem:
                        problems.append(Problem(task.source, task.line, "GS132", ERROR,
                                                f"{name}: check {number}: {path_problem}"))
                        continue
                problem = program_problem(argv, folder)
                if problem:
                    problems.append(Problem(task.source, task.line, "GS133", ERROR,
                                            f"{name}: check {number}: command {problem}"))


def _check_task_files_outside_workspaces(skill: SkillConfig, tasks: list[Task],
                                         problems: list[Problem]) -> None:
    """No workspace folder holds one of the skill's task files: the agent gets a copy of
    the folder, so it would read every task's checks, held-out included (as a package
    may not hold one). One line per folder, at its first task."""
    seen: set[str] = set()
    for task in tasks:
        folder = task.workspace
        if folder is None or folder in seen:
            continue
        seen.add(folder)
        held = next((e.path for e in skill.tasks if e.path.startswith(folder + "/")), None)
        if held is not None:
            problems.append(Problem(task.source, task.line, "GS138", ERROR, (
                f"task {_shown(task.id)}: workspace {folder!r} holds the task file {held}: "
                "the agent would read every split's checks; keep task files outside the "
                "workspace folder (move the fixture into a folder of its own)")))


def _inside(repo_root: Path, relative: str) -> bool:
    """Whether a repo path, symlinks followed, stays in the repository: task text goes to a
    model provider, so a link to ~/.netrc must not become a prompt."""
    try:
        return (repo_root / relative).resolve().is_relative_to(repo_root.resolve())
    except (OSError, RuntimeError):  # a symlink loop: let the reader report it
        return True


def load_skill_tasks(repo_root: Path, skill: SkillConfig,
                     say: Callable[[str], None] | None = None) -> list[Task]:
    """The tasks of a skill a run may use, or a UsageError naming the first error (warnings
    are fine). Tasks marked `review: pending` are left out, and `say` hears how many.
    Trigger tasks are not among them (`load_trigger_tasks`)."""
    tasks, problems = check_skill_tasks(repo_root, skill)
    tasks = [t for t in tasks if not t.trigger]
    errors = [p for p in problems if p.is_error]
    if errors:
        first = errors[0]
        more = (f" (and {len(errors) - 1} more: run `gitsleep validate`)"
                if len(errors) > 1 else "")
        raise UsageError(f"{first.location()}: {first.message}{more}")
    ready = [t for t in tasks if t.review != PENDING]
    pending = len(tasks) - len(ready)
    if pending:
        if not any(t.split == "val" for t in ready):
            raise UsageError(
                f"skill {skill.name!r} has no val tasks once the {pending} task(s) marked "
                "review: pending are left out: review them (remove the mark) or add val tasks")
        if say is not None:
            say(f"{skill.name}: {pending} task(s) marked review: pending are left out; "
                "remove the mark to use them (gitsleep validate lists them)")
    return ready


def load_trigger_tasks(repo_root: Path, skill: SkillConfig) -> list[Task]:
    """The skill's trigger tasks a run may use (pending ones left out), or a UsageError
    naming the first error of its task files."""
    tasks, problems = check_skill_tasks(repo_root, skill)
    errors = [p for p in problems if p.is_error]
    if errors:
        raise UsageError(f"{errors[0].location()}: {errors[0].message}")
    return [t for t in tasks if t.trigger and t.review != PENDING]


def _where(task: Task) -> str:
    return f"{task.source}:{task.line}" if task.line else task.source


def _same_prompt(task: Task, other: Task, code: str, level: str, why: str) -> Problem:
    """`task` asks what `other`, in another split, already asks: `why` says what follows."""
    return Problem(task.source, task.line, code, level,
                   f"task {_shown(task.id)} ({task.split}) has the same prompt as task "
                   f"{_shown(other.id)} ({other.split}, {_where(other)}): {why}")


def _drop_duplicates(tasks: list[Task], problems: list[Problem]) -> list[Task]:
    """Keep the first task of each id; a later one is a duplicate, or a leak across splits."""
    first: dict[str, Task] = {}
    kept: list[Task] = []
    for task in tasks:
        earlier = first.get(task.id)
        if earlier is None:
            first[task.id] = task
            kept.append(task)
            continue
        if (earlier.split == "test") != (task.split == "test"):
            problems.append(Problem(
                task.source, task.line, "GS113", ERROR,
                f"task {_shown(task.id)} is in {task.split} here and in {earlier.split} at "
                f"{_where(earlier)}: held-out tasks must never be used for selection; "
                "keep it in one split"))
        elif earlier.split != task.split:
            problems.append(Problem(
                task.source, task.line, "GS112", ERROR,
                f"task {_shown(task.id)} is in {task.split} here and in {earlier.split} at "
                f"{_where(earlier)}: a task belongs to exactly one split; rename or remove one"))
        else:
            problems.append(Problem(
                task.source, task.line, "GS112", ERROR,
                f"duplicate task id {_shown(task.id)} (first at {_where(earlier)}): ids must be "
                "unique within a skill; rename one"))
    return kept


def _prompt_key(task: Task) -> str:
    return " ".join(f"{task.system or ''}\n{task.prompt}".split()).casefold()


def _check_prompt_leaks(tasks: list[Task], problems: list[Problem]) -> None:
    """The same prompt in test and in train/val leaks the held-out split (error);
    in train and val it lets the gate re-test what reflection saw (warning)."""
    seen: dict[str, dict[str, Task]] = {split: {} for split in SPLITS}
    for task in tasks:
        key = _prompt_key(task)
        if task.split == "test":
            other = seen["train"].get(key) or seen["val"].get(key)
        else:
            other = seen["test"].get(key)
        if other is not None:
            problems.append(_same_prompt(task, other, "GS113", ERROR, "the held-out split "
                                         "would leak into selection; reword or remove one"))
        elif task.split != "test":
            twin = seen["val" if task.split == "train" else "train"].get(key)
            if twin is not None:
                problems.append(_same_prompt(task, twin, "GS117", WARNING,
                                             "the gate would re-test what reflection saw"))
        seen[task.split].setdefault(key, task)


def _check_trigger_splits(triggers: list[Task], problems: list[Problem]) -> None:
    """A split of trigger tasks with no should-not query cannot see a description that
    takes every request: the gate would reward the vaguest one."""
    for split in SPLITS:
        mine = [t for t in triggers if t.split == split]
        if mine and not any(t.trigger and not t.trigger.should_trigger for t in mine):
            problems.append(Problem(mine[0].source, None, "GS173", WARNING,
                                    f"trigger tasks in {split} hold no should-not query "
                                    f"(should_trigger: false): a description that takes "
                                    "every request would score best; add near misses"))


def _check_split_sizes(skill: SkillConfig, tasks: list[Task], problems: list[Problem]) -> None:
    where = skill.tasks[0].path
    triggers = [t for t in tasks if t.trigger]
    _check_trigger_splits(triggers, problems)
    tasks = [t for t in tasks if not t.trigger]
    if triggers and not tasks:
        return  # a skill tuned on when it is picked alone: its night is the trigger pass
    counts = {split: sum(1 for t in tasks if t.split == split) for split in SPLITS}
    if not tasks:
        if not any(p.is_error for p in problems):
            problems.append(Problem(where, None, "GS107", ERROR,
                                    f"skill {skill.name!r} has no tasks: add some"))
        return
    if counts["val"] == 0:
        problems.append(Problem(
            where, None, "GS115", ERROR,
            f"skill {skill.name!r} has no val tasks: the gate needs some; label tasks "
            "\"split\": \"val\" or use `split: auto` on a file with unlabelled tasks"))
    if counts["train"] == 0:
        problems.append(Problem(
            where, None, "GS116", WARNING,
            f"skill {skill.name!r} has no train tasks: reflection has no failures to learn from"))
