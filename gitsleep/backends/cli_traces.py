"""What an agent CLI called, read from its documented machine output into a trace.

- Claude Code, `claude -p --output-format stream-json --verbose`: one JSON object a line;
  an `assistant` message's `tool_use` blocks are the calls (`name`, `input`), a `user`
  message's `tool_result` blocks their results (by `tool_use_id`), and the `result` line
  holds the final answer.
- Codex, `codex exec --json`: one JSON event a line; each `item.completed` whose item is
  a `command_execution` (the shell: `command`, `aggregated_output`), an `mcp_tool_call`
  (`tool`, `arguments`, `result`), a `web_search` (`query`) or a `file_change`
  (`changes`) is a call, in order.

A CLI names its own tools (Claude Code's `Grep`, `Read`); `agent.tool_names` maps them to
the names a task's trajectory checks use. A line that is not JSON, or an event of another
shape, is skipped: the CLIs add event kinds, and a trace must not fail on one it does not
know. Other CLIs (gemini, opencode, llm, aider, a custom command) give no trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from gitsleep.base.redact import clip
from gitsleep.core.models import ToolCall
from gitsleep.core.trace import canonical_arguments

RESULT_CHARS = 2000  # of each result kept in the trace
TRACE_FORMATS = ("claude", "codex")


def _events(stdout: bytes) -> Iterator[dict[str, Any]]:
    for line in stdout.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event


def _text(content: Any) -> str:
    """A tool result's text: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, Mapping) and part.get("type") == "text")
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _blocks(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def claude_stream(stdout: bytes) -> tuple[tuple[ToolCall, ...], str | None]:
    """(the calls in order, the final answer from the `result` line or None)."""
    calls: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    answer: str | None = None
    for event in _events(stdout):
        kind = event.get("type")
        if kind == "assistant":
            for block in _blocks(event):
                if block.get("type") == "tool_use" and isinstance(block.get("name"), str):
                    call = {"name": block["name"], "arguments": block.get("input", {}),
                            "result": "", "error": None}
                    calls.append(call)
                    if isinstance(block.get("id"), str):
                        by_id[block["id"]] = call
        elif kind == "user":
            for block in _blocks(event):
                made = by_id.get(str(block.get("tool_use_id")))
                if block.get("type") == "tool_result" and made is not None:
                    text = _text(block.get("content"))
                    if block.get("is_error"):
                        made["error"] = clip(text, 400) or "the tool failed"
                    else:
                        made["result"] = text
        elif kind == "result" and isinstance(event.get("result"), str):
            answer = event["result"]
    return tuple(_call(c) for c in calls), answer


def codex_json(stdout: bytes) -> tuple[ToolCall, ...]:
    """The calls of `codex exec --json` in order."""
    calls: list[ToolCall] = []
    for event in _events(stdout):
        item = event.get("item")
        if event.get("type") != "item.completed" or not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "command_execution":
            failed = item.get("exit_code") not in (0, None) or item.get("status") == "failed"
            output = _text(item.get("aggregated_output"))
            calls.append(_call({"name": "command_execution",
                                "arguments": {"command": item.get("command", "")},
                                "result": output,
                                "error": f"exit {item.get('exit_code')}" if failed else None}))
        elif kind == "mcp_tool_call" and isinstance(item.get("tool"), str):
            error = item.get("error")
            calls.append(_call({"name": item["tool"], "arguments": item.get("arguments", {}),
                                "result": _text(item.get("result")),
                                "error": _text(error) if error else None}))
        elif kind == "web_search":
            calls.append(_call({"name": "web_search", "arguments": {"query": item.get("query")},
                                "result": "", "error": None}))
        elif kind == "file_change":
            calls.append(_call({"name": "file_change",
                                "arguments": {"changes": item.get("changes", [])},
                                "result": "", "error": None}))
    return tuple(calls)


def _call(raw: Mapping[str, Any]) -> ToolCall:
    return ToolCall(str(raw["name"]), canonical_arguments(raw["arguments"]),
                    clip(str(raw["result"]), RESULT_CHARS),
                    None if raw["error"] is None else clip(str(raw["error"]), 400))


def mapped(trace: tuple[ToolCall, ...], names: Mapping[str, str]) -> tuple[ToolCall, ...]:
    """The trace with each CLI tool name replaced by the declared name it maps to."""
    return tuple(replace(c, name=names.get(c.name, c.name)) for c in trace)


def read_trace(fmt: str, stdout: bytes) -> tuple[tuple[ToolCall, ...], str | None]:
    """(trace, the answer the stream holds or None) for a CLI's trace format."""
    if fmt == "claude":
        return claude_stream(stdout)
    return codex_json(stdout), None
