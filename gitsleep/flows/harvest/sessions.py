"""What the readers share: a bounded session digest and a line reader that never stops.

Transcripts are large and written by other programs: a reader holds one line at a time,
keeps only a bounded digest per session (the first user turns, clipped), and turns every
bad line (not UTF-8, not JSON, over the size limit, an unknown type) into a counted skip.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitsleep.base.redact import clip

MAX_LINE_BYTES = 8 * 2**20  # one transcript line (a pasted image can be megabytes)
MAX_TEXT = 4000  # characters kept of one message
MAX_TURNS = 40  # user turns kept per session; later ones are only counted

# A skill document named in a tool call or a message: `.../skills/<name>/SKILL.md`.
SKILL_PATH = re.compile(r"([A-Za-z0-9_.-]+)[/\\]SKILL\.md\b")
_SURROGATES = re.compile("[\ud800-\udfff]")


@dataclass
class Turn:
    """One user message and the agent's last text reply to it."""

    user: str
    answer: str = ""


@dataclass
class Session:
    """A bounded digest of one agent session, whatever tool wrote it."""

    tool: str  # claude | codex | jsonl
    session_id: str
    path: Path
    cwd: str | None = None
    branch: str | None = None
    started: datetime | None = None
    ended: datetime | None = None
    turns: list[Turn] = field(default_factory=list)
    user_turns: int = 0  # all of them, also those past MAX_TURNS
    assistant_turns: int = 0
    tools_used: Counter[str] = field(default_factory=Counter)
    skills_used: set[str] = field(default_factory=set)
    outside: bool = False  # reading stopped early: the cwd is outside the repository

    def add_user(self, text: str) -> None:
        self.user_turns += 1
        if len(self.turns) < MAX_TURNS:
            self.turns.append(Turn(clean(text)))

    def add_answer(self, text: str) -> None:
        self.assistant_turns += 1
        if self.turns and self.user_turns <= MAX_TURNS and text.strip():
            self.turns[-1].answer = clean(text)

    def place(self, cwd: object, keep_cwd: Callable[[str], bool]) -> bool:
        """Take the session's first working directory from a line; True when it lies
        outside the repository, so the reader stops and yields the session as `outside`."""
        if not isinstance(cwd, str) or not cwd or self.cwd is not None:
            return False
        self.cwd = cwd
        self.outside = not keep_cwd(cwd)
        return self.outside

    def stamp(self, value: Any) -> None:
        moment = parse_time(value)
        if moment is None:
            return
        if self.started is None or moment < self.started:
            self.started = moment
        if self.ended is None or moment > self.ended:
            self.ended = moment

    def note_skill_paths(self, text: str) -> None:
        for match in SKILL_PATH.finditer(text[:MAX_TEXT]):
            self.skills_used.add(match.group(1))


@dataclass
class ReadStats:
    """How much was read and every skip with its reason."""

    files: int = 0
    lines: int = 0
    sessions: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] += count


def clean(text: str) -> str:
    """Clipped, valid Unicode text: half a UTF-16 pair cannot be written to a task file.
    The cut drops the partial word at its edge: it is cut before masking, and half a key
    matches no secret (`redact.clip`)."""
    return _SURROGATES.sub("\ufffd", clip(text.strip(), MAX_TEXT))


def parse_time(value: Any) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 string or epoch seconds/milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        # more than 6 fractional digits ("…:38.3170000Z"): keep microseconds
        match = re.match(r"(.*\.\d{6})\d+(.*)$", text)
        if not match:
            return None
        try:
            moment = datetime.fromisoformat(match.group(1) + match.group(2))
        except ValueError:
            return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def records(path: Path, stats: ReadStats) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each readable JSON object line; every other line is a
    counted skip. One line at a time, at most MAX_LINE_BYTES of it."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        stats.skip(f"file unreadable ({exc.strerror or exc})")
        return
    with handle:
        number = 0
        while True:
            try:
                raw = handle.readline(MAX_LINE_BYTES + 1)
            except OSError as exc:
                stats.skip(f"file unreadable ({exc.strerror or exc})")
                return
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # drop the rest of this line
                    raw = handle.readline(MAX_LINE_BYTES)
                stats.skip("line over 8 MB")
                continue
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                stats.skip("line not UTF-8")
                continue
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                stats.skip("line not JSON")
                continue
            if not isinstance(value, dict):
                stats.skip("line not a JSON object")
                continue
            stats.lines += 1
            yield number, value


def text_of(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    """The text of a message's content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [block.get("text") for block in content
             if isinstance(block, dict) and block.get("type") in kinds]
    return "\n".join(p for p in parts if isinstance(p, str))
