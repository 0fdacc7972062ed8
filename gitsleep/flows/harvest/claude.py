"""Claude Code session files: `~/.claude/projects/<encoded cwd>/<session id>.jsonl`.

Each line is one event. `user` and `assistant` lines carry `message.content` (a string or
a list of blocks: `text`, `tool_use`, `tool_result`, `thinking`, `image`) plus `cwd`,
`gitBranch`, `timestamp`, `sessionId` and `isSidechain`. Sub-agent conversations are
sidechains (`isSidechain: true`, also written to `agent-*.jsonl` files): skipped, they are
the agent talking to itself. A user line that only returns a tool result, a meta line, a
slash-command echo or an interruption notice is not a request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gitsleep.flows.harvest.sessions import ReadStats, Session, records, text_of

# Line types Claude Code writes that hold no conversation: read past, not "unknown".
KNOWN_OTHER = frozenset({"summary", "system", "progress", "file-history-snapshot",
                         "queue-operation", "custom-title", "attachment", "result"})
_NOT_A_REQUEST = ("<command-message>", "<local-command-stdout>", "<local-command-stderr>",
                  "<system-reminder>", "<bash-input>", "<bash-stdout>", "<bash-stderr>",
                  "Caveat: The messages below were generated", "[Request interrupted",
                  "Base directory for this skill:", "This session is being continued")


FILE_PATTERN = "*.jsonl"  # the files a folder given to harvest is searched for


def read(path: Path, stats: ReadStats, keep_cwd: Callable[[str], bool]) -> Iterator[Session]:
    """The one session a file holds (none when it has no conversation)."""
    if path.name.startswith("agent-"):
        stats.skip("sub-agent (sidechain) file")
        return
    session = Session("claude", path.stem, path)
    seen_conversation = False
    for _, line in records(path, stats):
        kind = line.get("type")
        if kind not in ("user", "assistant"):
            if kind not in KNOWN_OTHER:
                stats.skip("unknown line type")
            continue
        if line.get("isSidechain"):
            stats.skip("sidechain line")
            continue
        seen_conversation = True
        if session.place(line.get("cwd"), keep_cwd):
            yield session
            return
        if isinstance(line.get("sessionId"), str) and line["sessionId"]:
            session.session_id = line["sessionId"]
        if isinstance(line.get("gitBranch"), str) and line["gitBranch"]:
            session.branch = line["gitBranch"]
        session.stamp(line.get("timestamp"))
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if kind == "user":
            _user(session, line, content)
        else:
            _assistant(session, content)
    if seen_conversation:
        yield session


def _user(session: Session, line: dict[str, Any], content: object) -> None:
    text = text_of(content).strip()
    if text.startswith("<command-name>"):
        # `/name` typed by the user: a skill run as a slash command counts as using it
        name = text[len("<command-name>"):].split("<", 1)[0].strip().lstrip("/")
        if name:
            session.skills_used.add(name)
        return
    if line.get("isMeta") or "toolUseResult" in line or not text:
        return
    if text.startswith(_NOT_A_REQUEST):
        return
    session.add_user(text)


def _assistant(session: Session, content: object) -> None:
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            name = block.get("name")
            if isinstance(name, str):
                session.tools_used[name] += 1
            tool_input = block.get("input")
            if not isinstance(tool_input, dict):
                continue
            if name == "Skill" and isinstance(tool_input.get("skill"), str):
                session.skills_used.add(tool_input["skill"])
            for value in tool_input.values():
                if isinstance(value, str):
                    session.note_skill_paths(value)
    text = text_of(content)
    if text.strip():
        session.add_answer(text)
