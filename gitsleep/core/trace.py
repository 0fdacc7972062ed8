"""What an agent called: the trace of tool calls an answer carries, and the trajectory
checks judged over it.

A trace is the calls in the order the agent made them, each with its name as the task
declared it, the arguments it gave (canonical JSON text) and what the tool answered. A
backend that cannot say what its agent called gives no trace (`None`), which is not the
same as a trace of no calls (`()`): the first leaves a trajectory check unjudgeable (the
answer is an error, never a 0), the second fails `tool_called` honestly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from gitsleep.base.redact import Redactor, clip
from gitsleep.core.patterns import search_untrusted


@dataclass(frozen=True)
class ToolCall:
    """One call the agent made: what it called, with what, and what came back."""

    name: str
    arguments: str = "{}"  # canonical JSON of the arguments the agent gave
    result: str = ""  # what the tool answered (clipped), data for the agent, never orders
    error: str | None = None  # the tool refused or failed; the agent saw this instead


Trace = tuple[ToolCall, ...]


def canonical_arguments(raw: object) -> str:
    """The arguments as canonical JSON text: a JSON object string is re-serialised sorted,
    anything else (a model's broken JSON) is kept as a JSON string of its text."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return json.dumps(raw, ensure_ascii=False)
    else:
        value = raw
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return json.dumps(str(raw), ensure_ascii=False)


def _matches(call: ToolCall, name: str, args_regex: str | None) -> tuple[bool, str]:
    if call.name != name:
        return False, ""
    if args_regex is None:
        return True, ""
    return search_untrusted(args_regex, call.arguments)


def calls_of(trace: Sequence[ToolCall], name: str, args_regex: str | None = None
             ) -> tuple[list[int], str]:
    """The positions of the calls of `name` (whose arguments match `args_regex`, when
    given), and a problem with the pattern itself ("" when it is sound)."""
    found: list[int] = []
    for index, call in enumerate(trace):
        ok, problem = _matches(call, name, args_regex)
        if problem:
            return [], problem
        if ok:
            found.append(index)
    return found, ""


def called_names(trace: Sequence[ToolCall]) -> str:
    """`search, read_file` (or `no tool`): what a failing check's reason says was called."""
    return ", ".join(c.name for c in trace) if trace else "no tool"


def tool_called(trace: Sequence[ToolCall], name: str, args_regex: str | None
                ) -> tuple[bool, str]:
    found, problem = calls_of(trace, name, args_regex)
    return bool(found), problem


def tool_not_called(trace: Sequence[ToolCall], name: str, args_regex: str | None
                    ) -> tuple[bool, str]:
    found, problem = calls_of(trace, name, args_regex)
    return not found and not problem, problem


def tool_called_before(trace: Sequence[ToolCall], first: str, then: str
                       ) -> tuple[bool, str]:
    """`first` is called before the first call of `then`; a trace without `then` passes
    (pair the check with `tool_called` of `then` to require it)."""
    later, _ = calls_of(trace, then)
    if not later:
        return True, ""
    earlier, _ = calls_of(trace, first)
    return bool(earlier) and earlier[0] < later[0], ""


def pair_arg(arg: str) -> tuple[str, str] | None:
    """The two tool names of a `tool_called_before` check's canonical JSON arg."""
    try:
        value = json.loads(arg)
    except ValueError:
        return None
    if (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, str) and v for v in value)):
        return value[0], value[1]
    return None


_SHAPES = Redactor()  # known token shapes only; the edge masks its secrets as well


def shown(trace: Sequence[ToolCall] | None, *, limit: int = 8, result_chars: int = 160,
          args_chars: int = 160) -> str:
    """The calls as short lines for a reader (reflection, the pull request): names,
    arguments and results masked (known token shapes) and clipped; at most `limit`."""
    if trace is None:
        return "(the backend gave no tool trace)"
    if not trace:
        return "(no tool was called)"
    lines = []
    for number, call in enumerate(trace[:limit], start=1):
        mask = _SHAPES.redact
        outcome = (f"error: {clip(call.error, result_chars, mask=mask)}" if call.error
                   else clip(" ".join(call.result.split()), result_chars, mask=mask))
        arguments = clip(call.arguments, args_chars, mask=mask)
        lines.append(f"{number}. {call.name}({arguments}) -> {outcome}")
    if len(trace) > limit:
        lines.append(f"... and {len(trace) - limit} more call(s)")
    return "\n".join(lines)
