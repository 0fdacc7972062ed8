"""The tool loop of an API agent: ask, run the tools it calls, hand back their results,
until it answers or the turns run out.

Every call and its result is recorded in order (`Answer.trace`), and every request counts
(`Answer.turns`: budgets count each turn, not each task). A result goes back to the model
between markers that say it is data, never instructions (`tools.as_data`), and the system
messages say so once. A call of a tool the task did not declare, or with arguments that
are not a JSON object, gets an error the model reads; it is recorded too. When the turns
run out with the agent still calling tools, the answer is an error (unscored), never a
guess at what it would have said.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from gitsleep.base.redact import clip
from gitsleep.core import tools as tool_kinds
from gitsleep.core.models import Answer, ToolCall
from gitsleep.core.ports import ModelCall
from gitsleep.core.tools import ToolSpec
from gitsleep.core.trace import canonical_arguments
from gitsleep.sandbox.tool_command import run_command_tool

MAX_TURNS = tool_kinds.ANSWER_TURNS  # requests per answer: 5 rounds of calls, then the answer
TRACE_RESULT_CHARS = 2000  # of each result kept in the trace (diagnostics, reflection)


@dataclass(frozen=True)
class Requested:
    """One tool call a model asked for: its id (to answer it), name and raw arguments."""

    id: str
    name: str
    arguments: str


def calls_in_text(text: str, names: Iterable[str]) -> list[Requested]:
    """The tool calls a reply writes in its text, for servers with no tool-call format.

    A local model behind such a server is shown the tools by its own chat template and
    answers with the call as text: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
    (Qwen's and Hermes' templates), the same object under another tag, in a fence or bare.
    Every JSON object in the reply that names a declared tool and carries an arguments
    object is a call, in order; anything else is the answer, as written."""
    declared = set(names)
    found: list[Requested] = []
    for obj in _json_objects(text):
        name, arguments = _written_call(obj)
        if name in declared and arguments is not None:
            found.append(Requested(f"text_call_{len(found)}", str(name),
                                   json.dumps(arguments, ensure_ascii=False)))
    return found


def _written_call(obj: Mapping[str, Any]) -> tuple[object, dict[str, Any] | None]:
    """(name, arguments) of an object written as a call: `{"name", "arguments"}`, the wire
    shape `{"function": {"name", "arguments"}}`, or Llama's `{"name", "parameters"}`. A
    tool's declaration echoed back (its `parameters` a JSON Schema) is no call."""
    inner = obj.get("function")
    if isinstance(inner, Mapping):
        obj = inner
    arguments = obj.get("arguments")
    if arguments is None and inner is None:
        arguments = obj.get("parameters")
        if isinstance(arguments, Mapping) and ("properties" in arguments
                                               or arguments.get("type") == "object"):
            return None, None  # a declaration: the schema of the arguments, not a call
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None, None
    return obj.get("name"), arguments if isinstance(arguments, dict) else None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """The outermost JSON objects written anywhere in `text`, in order."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        at = text.find("{", end)
    return found


# (call, messages so far, functions) -> (the reply as an Answer, the tool calls it asked for)
Exchange = Callable[[ModelCall, list[dict[str, Any]], list[dict[str, Any]]],
                    tuple[Answer, list[Requested]]]


def tools_of(call: ModelCall) -> tuple[ToolSpec, ...]:
    """The tools an answer call may use (none for other purposes)."""
    if call.purpose != "answer" or not call.context:
        return ()
    found = call.context.get("tools") or ()
    return tuple(t for t in found if isinstance(t, ToolSpec))


def environment_key(call: ModelCall, pass_env: Iterable[str]) -> str:
    """What an answer's cache key owes the tools' environment: the names `checks.pass_env`
    hands a `command` tool the call may run (its output can depend on them); '' when the
    call declares no command tool."""
    if not any(t.kind == "command" for t in tools_of(call)):
        return ""
    return "\0tool_env:" + ",".join(sorted(set(pass_env)))


def run_tool(tools: Sequence[ToolSpec], name: str, raw_arguments: str, *,
             pass_env: Iterable[str] = (), redact: Callable[[str], str] | None = None
             ) -> ToolCall:
    """Answer one call: the declared tool of that name, with the arguments the model sent."""
    arguments = canonical_arguments(raw_arguments)
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        known = ", ".join(t.name for t in tools) or "none"
        return ToolCall(name, arguments, "", f"no tool is named {name!r} (the tools: {known})")
    parsed, problem = tool_kinds.parsed_arguments(raw_arguments)
    if problem:
        return ToolCall(name, arguments, "", problem)
    if tool.kind == "command":
        stdin = parsed.get("input")
        result, error = run_command_tool(tool, stdin if isinstance(stdin, str) else "",
                                         pass_env=pass_env, redact=redact)
    else:
        result, error = tool_kinds.answer_from_folder(tool, parsed)
    mask = redact or (lambda text: text)
    return ToolCall(name, arguments, clip(result, TRACE_RESULT_CHARS, mask=mask),
                    None if error is None else clip(error, 400, mask=mask))


def run_loop(exchange: Exchange, call: ModelCall, tools: Sequence[ToolSpec], *,
             max_turns: int = MAX_TURNS, pass_env: Iterable[str] = (),
             redact: Callable[[str], str] | None = None) -> Answer:
    """The agent's final answer with every call it made, or an error with the calls so far."""
    messages: list[dict[str, Any]] = [{"role": role, "content": content}
                                      for role, content in call.messages]
    messages.insert(_after_system(messages), {"role": "system", "content": tool_kinds.DATA_NOTE})
    functions = [t.function() for t in tools]
    trace: list[ToolCall] = []
    prompt_tokens = completion_tokens = 0
    for turn in range(1, max(1, max_turns) + 1):
        answer, requested = exchange(call, messages, functions)
        prompt_tokens += answer.prompt_tokens
        completion_tokens += answer.completion_tokens
        done = {"trace": tuple(trace), "turns": turn, "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens}
        if not requested:
            return _with(answer, done)
        # no `content` key when the turn said nothing: llama-cpp-python's server refuses
        # the null OpenAI allows
        said = {"content": answer.text} if answer.text else {}
        messages.append({"role": "assistant", **said, "tool_calls": [
            {"id": r.id, "type": "function",
             "function": {"name": r.name, "arguments": r.arguments}} for r in requested]})
        for request in requested:
            made = run_tool(tools, request.name, request.arguments, pass_env=pass_env,
                            redact=redact)
            trace.append(made)
            shown = f"error: {made.error}" if made.error else made.result
            messages.append({"role": "tool", "tool_call_id": request.id,
                             "content": tool_kinds.as_data(shown)})
    return Answer(text=None, error=f"the agent was still calling tools after {max_turns} "
                  "turns (the tool loop's bound); its calls are in the trace",
                  prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  trace=tuple(trace), turns=max_turns)


def _after_system(messages: Sequence[Mapping[str, Any]]) -> int:
    """Where the note about tool results goes: after the leading system messages."""
    index = 0
    while index < len(messages) and messages[index].get("role") == "system":
        index += 1
    return index


def _with(answer: Answer, done: Mapping[str, Any]) -> Answer:
    return replace(answer, **done)
