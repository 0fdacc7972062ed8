"""Agent transcripts as Claude Code and Codex write them, for harvest tests and benchmarks.

Shapes follow the published formats: Claude Code's `~/.claude/projects/<encoded cwd>/
<session id>.jsonl` event lines (`type` user/assistant with `message.content`, `cwd`,
`gitBranch`, `sessionId`, `timestamp`, `isSidechain`, `parentUuid`) and Codex's
`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl` lines (`{timestamp, type,
payload}` with session_meta, turn_context, response_item, event_msg). Each writer adds
the noise real files hold: tool calls and results, meta lines, sidechains, environment
preambles, duplicated UI events.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def encode_cwd(cwd: str | Path) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def claude_lines(cwd: str | Path, turns: list[tuple[str, str]], *, session_id: str | None = None,
                 branch: str = "main", start: datetime = T0, skill: str | None = None,
                 noise: bool = True) -> list[dict[str, Any]]:
    """The event lines of one Claude Code session: (user, assistant) turns plus noise."""
    sid = session_id or str(uuid.uuid4())
    moment = start
    parent: str | None = None
    lines: list[dict[str, Any]] = []

    def event(kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        nonlocal moment, parent
        moment += timedelta(seconds=7)
        ident = str(uuid.uuid4())
        line = {"parentUuid": parent, "isSidechain": False, "userType": "external",
                "cwd": str(cwd), "sessionId": sid, "version": "2.0.61", "gitBranch": branch,
                "type": kind, "message": message, "uuid": ident, "timestamp": stamp(moment),
                **extra}
        parent = ident
        lines.append(line)
        return line

    if noise:
        lines.append({"type": "file-history-snapshot", "messageId": "m0",
                      "snapshot": {"trackedFileBackups": {}}})
        event("user", {"role": "user", "content": "<command-name>/clear</command-name>"},
              isMeta=True)
    for number, (user, answer) in enumerate(turns):
        event("user", {"role": "user", "content": [{"type": "text", "text": user}]})
        if noise and number == 0:
            tool_id = f"toolu_{uuid.uuid4().hex[:12]}"
            tool_input = {"skill": skill} if skill else {"file_path": f"{cwd}/README.md"}
            event("assistant", {"role": "assistant", "model": "claude-sonnet-4-5", "content": [
                {"type": "thinking", "thinking": "Let me look first.", "signature": "x"},
                {"type": "tool_use", "id": tool_id, "name": "Skill" if skill else "Read",
                 "input": tool_input}]})
            event("user", {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool_id, "content": "file text"}]},
                toolUseResult={"type": "text"})
            sidechain = event("user", {"role": "user", "content": "Search the repo for notes"})
            sidechain["isSidechain"] = True
            sidechain["agentId"] = "a1b2c3"
        event("assistant", {"role": "assistant", "model": "claude-sonnet-4-5",
                            "content": [{"type": "text", "text": answer}],
                            "usage": {"input_tokens": 10, "output_tokens": 20}})
    if noise:
        lines.append({"type": "summary", "summary": "A session", "leafUuid": parent})
    return lines


def codex_lines(cwd: str | Path, turns: list[tuple[str, str]], *, session_id: str | None = None,
                branch: str = "main", start: datetime = T0) -> list[dict[str, Any]]:
    """The lines of one Codex rollout file: meta, context, messages, tool calls, events."""
    sid = session_id or str(uuid.uuid4())
    moment = start
    lines: list[dict[str, Any]] = []

    def line(kind: str, payload: dict[str, Any]) -> None:
        nonlocal moment
        moment += timedelta(seconds=5)
        lines.append({"timestamp": stamp(moment), "type": kind, "payload": payload})

    line("session_meta", {"id": sid, "timestamp": stamp(start), "cwd": str(cwd),
                          "originator": "codex_cli_rs", "cli_version": "0.46.0",
                          "instructions": None, "source": "cli",
                          "git": {"commit_hash": "abc123", "branch": branch,
                                  "repository_url": "git@github.com:acme/app.git"}})
    line("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": f"<environment_context>\n  <cwd>{cwd}</cwd>\n"
                                       "</environment_context>"}]})
    for user, answer in turns:
        line("turn_context", {"cwd": str(cwd), "approval_policy": "on-request",
                              "model": "gpt-5-codex", "summary": "auto"})
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": user}]})
        line("event_msg", {"type": "user_message", "message": user, "kind": "plain"})
        line("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "x"})
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                               "arguments": json.dumps({"command": ["bash", "-lc", "ls"]})})
        line("response_item", {"type": "function_call_output", "call_id": "c1",
                               "output": "README.md"})
        line("event_msg", {"type": "token_count", "info": None})
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": answer}]})
        line("event_msg", {"type": "agent_message", "message": answer})
    return lines


def write_jsonl(path: Path, lines: list[dict[str, Any]], *, extra: list[bytes] = ()) -> Path:
    """Write the lines as JSONL, then any raw extra lines (corrupt ones, other bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join(json.dumps(line).encode("utf-8") + b"\n" for line in lines)
    path.write_bytes(data + b"".join(extra))
    return path


def claude_file(home: Path, cwd: str | Path, turns: list[tuple[str, str]], **options: Any
                ) -> Path:
    sid = options.pop("session_id", None) or str(uuid.uuid4())
    lines = claude_lines(cwd, turns, session_id=sid, **options)
    return write_jsonl(home / ".claude" / "projects" / encode_cwd(cwd) / f"{sid}.jsonl", lines)


def codex_file(home: Path, cwd: str | Path, turns: list[tuple[str, str]], **options: Any
               ) -> Path:
    lines = codex_lines(cwd, turns, **options)
    start = options.get("start", T0)
    name = f"rollout-{start:%Y-%m-%dT%H-%M-%S}-{lines[0]['payload']['id']}.jsonl"
    return write_jsonl(home / ".codex" / "sessions" / f"{start:%Y/%m/%d}" / name, lines)
