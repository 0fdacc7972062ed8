"""The rule-check ops, each defined once: how to judge it and how to teach it.

A rule judge is a list of checks `{"op", "arg"}`. Everything gitsleep knows about an op
lives in its row of `OPS`: the judge, the words the optimizer reads, a text that passes
it (for the prompt's examples, skeletons and rules), whether a single rule line can pass
it, and the facts hygiene needs to tell a rule that asks for the opposite. Task
validation accepts exactly the ops in this table, so an op added here is an op users
can write, and an op with no row cannot be judged at all.

Every function takes the check's argument as text (`""` when it has none).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeGuard

from gitsleep.core.patterns import search, search_untrusted
from gitsleep.core.regex_literal import typed_form
from gitsleep.core.sections import headings, section_present
from gitsleep.core.trace import ToolCall, pair_arg, tool_called, tool_called_before, tool_not_called

CheckOp = Literal["contains", "not_contains", "regex", "section_present",
                  "section_contains", "max_chars", "min_chars", "no_refusal", "equals",
                  "command", "file_exists", "file_contains", "changed_files_max",
                  "tool_called", "tool_not_called", "tool_called_before", "max_tool_calls"]
# How a task file writes an op's arg: text (the answer ops; `bound` ones a number), an
# argv list, a workspace path, {"path", "text"|"regex"}, a count, a tool's name, or two
# tools' names in order. Structured args are kept as canonical JSON text, so every function
# below still takes the arg as text.
ArgShape = Literal["text", "argv", "path", "file_text", "count", "tool", "tool_pair"]

REFUSALS = (
    "cannot complete",
    "i cannot",
    "i can't",
    "i'm unable",
    "i am unable",
    "unable to complete",
    "sorry, i can't",
    "sorry, i cannot",
    "no can do",
)
_LEAD_MARKUP = re.compile(r"^(?:\s|[>*_#-]|\d+[.)])+")


def is_refusal(answer: str) -> bool:
    """An empty answer, or a short one that opens with a refusal (markup aside)."""
    stripped = answer.strip()
    if not stripped:
        return True
    head = _LEAD_MARKUP.sub("", stripped)[:160].lower()
    return len(stripped) < 600 and head.startswith(REFUSALS)


def _norm_ws(text: str) -> str:
    return " ".join(text.split())


def _no_example(arg: str) -> str | None:
    return None


def _heading_example(arg: str) -> str | None:
    """`## Name` for a section check (its own heading marks kept when it has some)."""
    if not arg.strip():
        return None
    return arg.strip() if arg.lstrip().startswith("#") else f"## {arg.strip()}"


def _length_judge(op: str, fits: Callable[[int, int], bool]) -> Callable[[str, str],
                                                                        tuple[bool, str]]:
    def judge(answer: str, arg: str) -> tuple[bool, str]:
        try:
            bound = int(arg)
        except ValueError:
            return False, f"{op} needs an integer"
        return fits(len(answer), bound), ""
    return judge


def command_argv(arg: str) -> list[str] | None:
    """The argv of a `command` check from its canonical JSON arg; None when the arg is not
    one (a Check built by hand: task validation only ever stores a list of strings)."""
    try:
        value = json.loads(arg)
    except ValueError:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return None
    return value


def check_argv(op: str, arg: str) -> list[str] | None:
    """The argv a check runs (an op that runs a program, with a sound argv), else None: what
    validation, `validate`'s list and the cache key read the same way."""
    spec = OPS.get(op)  # type: ignore[call-overload]
    return command_argv(arg) if spec is not None and spec.runs_program else None


def file_text_arg(arg: str) -> tuple[str, str, str]:
    """(path, "text" or "regex", value) of a `file_contains` check's canonical JSON arg."""
    value = json.loads(arg)
    kind = "regex" if "regex" in value else "text"
    return str(value["path"]), kind, str(value[kind])


def _shown_argv(arg: str) -> str:
    argv = command_argv(arg)
    return arg if argv is None else shlex.join(argv)


def _describe_file_text(arg: str) -> str:
    try:
        path, kind, value = file_text_arg(arg)
    except (ValueError, KeyError, TypeError):
        return f"the workspace file check {arg} must pass"
    if kind == "regex":
        return f'the workspace file "{path}" must match the regular expression `{value}`'
    return f'the workspace file "{path}" must contain the text "{value}"'


def _runs_a_program(answer: str, arg: str) -> tuple[bool, str]:
    """`command` runs a program, which this low table does not do itself: the judge runs
    it (`judges.check_passes`, through the program runner the edge gives it). Reached
    directly, it is a broken check, said as one, never a silent pass."""
    return False, "a command check is run by gitsleep.core.judges, not by the op table"


def _workspace_only() -> tuple[bool, str]:
    """A workspace op reached with a text answer alone: validation refuses such a task
    (GS135), so this is a broken check, said as one, never a silent pass."""
    return False, "judged over the task's workspace, and this answer has none"


def _trace_only() -> tuple[bool, str]:
    """A trajectory op reached with a text answer alone: replay makes such an answer an
    error (the backend gave no trace), so this is a broken check, never a silent pass."""
    return False, "judged over the tools the agent called, and this answer has no trace"


# (trace, arg, args_regex) -> (passed, a problem with the check itself)
TraceJudge = Callable[[Sequence[ToolCall], str, str | None], tuple[bool, str]]


def _count_calls(trace: Sequence[ToolCall], arg: str, _regex: str | None
                 ) -> tuple[bool, str]:
    try:
        bound = int(arg)
    except ValueError:
        return False, "max_tool_calls needs a whole number"
    return len(trace) <= bound, ""


def _called_before(trace: Sequence[ToolCall], arg: str, _regex: str | None
                   ) -> tuple[bool, str]:
    pair = pair_arg(arg)
    if pair is None:
        return False, "tool_called_before needs two tool names"
    return tool_called_before(trace, *pair)


def _describe_before(arg: str) -> str:
    pair = pair_arg(arg)
    if pair is None:
        return f"the check tool_called_before {arg} must pass"
    return (f'the agent must call the tool "{pair[0]}" before it first calls the tool '
            f'"{pair[1]}"')


@dataclass(frozen=True)
class OpSpec:
    """What gitsleep knows about one op."""

    # (answer, arg) -> (passed, a problem with the check itself, "" when it is sound)
    judge: Callable[[str, str], tuple[bool, str]]
    # the failing check in plain words, for the reflection prompt
    describe: Callable[[str], str]
    # a text that passes (a typed placeholder where the arg leaves a choice), or None
    example: Callable[[str], str | None] = _no_example
    # (text, arg): whether one rule line alone passes; None when no line can on its own
    satisfied_by: Callable[[str, str], bool] | None = None
    # what of the arg a rule quotes so answers have it: the text itself, a text matching
    # the pattern, a section heading; "" when the op asks for nothing to be written
    quotes: Literal["text", "pattern", "heading", ""] = ""
    avoids: bool = False  # a rule naming the arg must tell the agent to leave it out
    bound: Literal["max", "min", ""] = ""  # the arg bounds the answer's length
    takes_arg: bool = True  # False: the op reads the answer alone
    format_only: bool = False  # looks only at the answer's shape: a judge of only these is weak
    arg_shape: ArgShape = "text"  # how the task file writes the arg (see ArgShape)
    # "workspace": judged over the task's workspace after the agent ran
    # (gitsleep.sandbox.workspace), never over a text answer; such an op needs a task with one
    # "trace": judged over the tools the agent called (`judge_trace`), never over the text
    reads: Literal["answer", "workspace", "trace"] = "answer"
    runs_program: bool = False  # runs a program from the task file: never written by harvest
    judge_trace: TraceJudge | None = None  # a trajectory op's judge


def _trace_op(describe: Callable[[str], str], arg_shape: ArgShape, judge: TraceJudge) -> OpSpec:
    """A trajectory op: judged over the trace (`judge`), never over a text answer."""
    return OpSpec(judge=lambda answer, arg: _trace_only(), describe=describe,
                  arg_shape=arg_shape, reads="trace", judge_trace=judge)


OPS: dict[CheckOp, OpSpec] = {
    "contains": OpSpec(  # case-insensitive
        judge=lambda answer, arg: (arg.casefold() in answer.casefold(), ""),
        describe=lambda arg: f'the answer must contain the text "{arg}"',
        example=lambda arg: arg or None,
        satisfied_by=lambda text, arg: bool(arg.strip()) and arg.casefold() in text.casefold(),
        quotes="text",
    ),
    "not_contains": OpSpec(
        judge=lambda answer, arg: (arg.casefold() not in answer.casefold(), ""),
        describe=lambda arg: f'the answer must not contain the text "{arg}"',
        avoids=True,
    ),
    "regex": OpSpec(  # an untrusted pattern: searched with a time bound
        judge=lambda answer, arg: search_untrusted(arg, answer),
        describe=lambda arg: f"the answer must match the regular expression `{arg}`",
        example=typed_form,  # `Severity: <1-4>`: a choice stays a typed placeholder
        satisfied_by=lambda text, arg: search(arg, text) is not None,
        quotes="pattern",
    ),
    "section_present": OpSpec(  # a heading ending with the name, a bold lead or a label
        judge=lambda answer, arg: (section_present(answer, arg), ""),
        describe=lambda arg: f'the answer must have a section headed "{arg}"',
        example=_heading_example,
        quotes="heading",
        format_only=True,
    ),
    "section_contains": OpSpec(  # some heading contains the text
        judge=lambda answer, arg: (
            any(arg.strip().casefold() in h for h in headings(answer)), ""),
        describe=lambda arg: f'the answer must have a Markdown heading containing "{arg}"',
        example=_heading_example,
        quotes="heading",
        format_only=True,
    ),
    "max_chars": OpSpec(
        judge=_length_judge("max_chars", lambda length, bound: length <= bound),
        describe=lambda arg: f"the answer must be at most {arg} characters",
        bound="max",
        format_only=True,
    ),
    "min_chars": OpSpec(
        judge=_length_judge("min_chars", lambda length, bound: length >= bound),
        describe=lambda arg: f"the answer must be at least {arg} characters",
        bound="min",
        format_only=True,
    ),
    "no_refusal": OpSpec(
        judge=lambda answer, arg: (not is_refusal(answer), ""),
        describe=lambda arg: "the answer must not refuse the task",
        takes_arg=False,
    ),
    "equals": OpSpec(  # whitespace-normalised, case-sensitive; no example on purpose:
        # a skill rule cannot make every answer one text
        judge=lambda answer, arg: (_norm_ws(answer) == _norm_ws(arg), ""),
        describe=lambda arg: f'the answer must be exactly "{arg}" (whitespace aside)',
    ),
    # Programmatic and workspace checks. `command` on a text task runs its argv
    # in a scratch folder with the answer in the file $GITSLEEP_ANSWER names.
    "command": OpSpec(
        judge=_runs_a_program,
        describe=lambda arg: f"the check command `{_shown_argv(arg)}` must exit 0",
        arg_shape="argv",
        runs_program=True,
    ),
    "file_exists": OpSpec(
        judge=lambda answer, arg: _workspace_only(),
        describe=lambda arg: f'the workspace must hold the file "{arg}"',
        arg_shape="path",
        reads="workspace",
    ),
    "file_contains": OpSpec(
        judge=lambda answer, arg: _workspace_only(),
        describe=lambda arg: _describe_file_text(arg),
        arg_shape="file_text",
        reads="workspace",
    ),
    "changed_files_max": OpSpec(
        judge=lambda answer, arg: _workspace_only(),
        describe=lambda arg: f"the agent must change at most {arg} file(s) of the workspace",
        arg_shape="count",
        reads="workspace",
    ),
    # Trajectory checks: judged over the trace of tool calls the answer carries. A check
    # may name a regex over a call's arguments in a field of its own (`args_regex`).
    "tool_called": _trace_op(lambda arg: f'the agent must call the tool "{arg}" before it '
                             "answers", "tool", tool_called),
    "tool_not_called": _trace_op(lambda arg: f'the agent must not call the tool "{arg}"',
                                 "tool", tool_not_called),
    "tool_called_before": _trace_op(_describe_before, "tool_pair", _called_before),
    "max_tool_calls": _trace_op(lambda arg: f"the agent must make at most {arg} tool call(s)",
                                "count", _count_calls),
}

RULE_OPS: tuple[CheckOp, ...] = tuple(OPS)  # the ops a task file may use, in this order
# the ops that read only the answer and run nothing: what harvest may write
ANSWER_OPS: tuple[CheckOp, ...] = tuple(
    op for op, spec in OPS.items() if spec.reads == "answer" and not spec.runs_program)
FORMAT_OPS: frozenset[CheckOp] = frozenset(op for op, spec in OPS.items() if spec.format_only)
TRACE_OPS: frozenset[CheckOp] = frozenset(op for op, spec in OPS.items() if spec.reads == "trace")


def is_check_op(op: object) -> TypeGuard[CheckOp]:
    """Whether `op` names an op in the table (for validating task files)."""
    return isinstance(op, str) and op in OPS
