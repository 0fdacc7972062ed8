"""Codex rollout files: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`.

Each line is `{"timestamp", "type", "payload"}`. `session_meta` (first) holds the session
`id`, `cwd` and `git.branch`; `turn_context` the cwd per turn; `response_item` the
conversation (`message` with role user/assistant and `input_text`/`output_text` blocks,
`function_call`, `local_shell_call`, `custom_tool_call`, `reasoning`, ...); `event_msg`
the UI events, whose `user_message`/`agent_message` repeat the messages and are used only
when a file has no `response_item` messages. Older files put a bare `{id, timestamp}` meta
object first and bare response items after it; both shapes are read. The environment and
instruction preambles Codex injects as user messages are not requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gitsleep.flows.harvest.sessions import ReadStats, Session, records, text_of

KNOWN_OTHER = frozenset({"compacted", "state"})
_TOOL_ITEMS = ("function_call", "local_shell_call", "custom_tool_call", "web_search_call")
_QUIET_ITEMS = frozenset({"reasoning", "function_call_output", "custom_tool_call_output",
                          "local_shell_call_output", "ghost_snapshot"})
_NOT_A_REQUEST = ("<environment_context>", "<user_instructions>", "<user_shell_command>",
                  "# AGENTS.md instructions", "<turn_aborted>")


FILE_PATTERN = "rollout-*.jsonl"  # the files a folder given to harvest is searched for


def read(path: Path, stats: ReadStats, keep_cwd: Callable[[str], bool]) -> Iterator[Session]:
    """The one session a rollout file holds (none when it has no conversation)."""
    session = Session("codex", path.stem.removeprefix("rollout-"), path)
    events: list[tuple[str, str]] = []  # event_msg fallbacks: (role, text), bounded below
    has_items = seen = False
    for number, line in records(path, stats):
        kind, payload = line.get("type"), line.get("payload")
        if "payload" not in line:  # the older shape
            if number == 1 and "id" in line and kind is None:
                kind, payload = "session_meta", line
            elif line.get("record_type") == "state":
                continue
            else:
                kind, payload = "response_item", line
        if not isinstance(payload, dict):
            stats.skip("unknown line type")
            continue
        session.stamp(line.get("timestamp") or payload.get("timestamp"))
        if kind in ("session_meta", "turn_context"):
            if kind == "session_meta" and isinstance(payload.get("id"), str):
                session.session_id = payload["id"]
            git = payload.get("git")
            if isinstance(git, dict) and isinstance(git.get("branch"), str):
                session.branch = git["branch"] or session.branch
            if session.place(payload.get("cwd"), keep_cwd):
                yield session
                return
        elif kind == "response_item":
            seen = True
            has_items = _item(session, payload, stats) or has_items
        elif kind == "event_msg":
            seen = True
            message = payload.get("message")
            role = {"user_message": "user", "agent_message": "assistant"}.get(
                str(payload.get("type")))
            if role and isinstance(message, str) and len(events) < 4 * 40:
                events.append((role, message))
        elif kind not in KNOWN_OTHER:
            stats.skip("unknown line type")
    if not has_items:
        for role, text in events:
            if role == "user":
                _user_text(session, text)
            else:
                session.add_answer(text)
    if seen:
        yield session


def _item(session: Session, item: dict[str, Any], stats: ReadStats) -> bool:
    """Read one response item; True when it was a user or assistant message."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        content = item.get("content")
        if role == "user":
            _user_text(session, text_of(content, ("input_text", "text")))
            return True
        if role == "assistant":
            text = text_of(content, ("output_text", "text"))
            if text.strip():
                session.add_answer(text)
            return True
        return False  # developer / system preambles
    if kind in _TOOL_ITEMS:
        name = item.get("name") or kind
        session.tools_used[str(name)] += 1
        for key in ("arguments", "input", "action"):
            value = item.get(key)
            if isinstance(value, str):
                session.note_skill_paths(value)
            elif isinstance(value, dict):
                session.note_skill_paths(str(value.get("command", "")))
        return False
    if kind not in _QUIET_ITEMS:
        stats.skip("unknown line type")
    return False


def _user_text(session: Session, text: str) -> None:
    text = text.strip()
    if text and not text.startswith(_NOT_A_REQUEST):
        session.add_user(text)
