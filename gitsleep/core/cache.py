"""Response cache: a reply is a pure function of (model, messages, parameters, sample).

Kept in memory for the epoch and, when a directory is given, on disk under
`.gitsleep/cache/` so a re-run on unchanged inputs makes no model call. Each entry is
its own file written atomically (temp file + rename), so concurrent writers never see a
half-written entry. Failed calls are never cached.

The cache is local: a folder it creates holds a `.gitignore` of `*` (as `.pytest_cache`
does), so `git add .` leaves it out, and entries the edge says git tracks (`ignored`) are
neither read nor written: whoever committed them chose their text. Text read back is
cleaned as a fresh reply is (`valid_unicode`), since anyone can write a file there.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from gitsleep.core.models import Answer, ToolCall

IGNORE_ALL = "# written by gitsleep: this cache is local to this machine\n*\n"


def valid_unicode(text: str) -> str:
    """Lone surrogates (half a UTF-16 pair in a reply's JSON) become U+FFFD: such text
    could not be hashed, cached or written as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _checks(raw: Any) -> tuple[tuple[int, bool, str], ...] | None:
    """A workspace answer's check outcomes as stored; a ValueError when they are not
    [index, passed, reason] triples (the entry is then a miss, never half-read)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ValueError("checks must be a list")
    outcomes = []
    for item in raw:
        if (not isinstance(item, list) or len(item) != 3 or type(item[0]) is not int
                or not isinstance(item[1], bool) or not isinstance(item[2], str)):
            raise ValueError("a check outcome must be [index, passed, reason]")
        outcomes.append((item[0], item[1], valid_unicode(item[2])))
    return tuple(outcomes)


def _trace(raw: Any) -> tuple[ToolCall, ...] | None:
    """An answer's tool calls as stored ([name, arguments, result, error] each); a
    ValueError when they are not (the entry is then a miss, never half-read)."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ValueError("trace must be a list")
    calls = []
    for item in raw:
        if (not isinstance(item, list) or len(item) != 4
                or not all(isinstance(v, str) for v in item[:3])
                or not (item[3] is None or isinstance(item[3], str))):
            raise ValueError("a tool call must be [name, arguments, result, error]")
        name, arguments, result, error = item
        calls.append(ToolCall(valid_unicode(name), valid_unicode(arguments),
                              valid_unicode(result),
                              None if error is None else valid_unicode(error)))
    return tuple(calls)


class ResponseCache:
    def __init__(self, directory: Path | None = None,
                 ignored: frozenset[str] = frozenset()) -> None:
        self.directory = directory
        self.ignored = ignored  # entries (`ab/abcd....json`) git tracks: never trusted
        self._memory: dict[str, Answer] = {}
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path | None:
        """The entry's file, or None when git tracks it or a link would lead it out of the
        cache folder (a committed entry or `.gitsleep/cache/ab` link must not receive or
        supply replies)."""
        assert self.directory is not None
        if f"{key[:2]}/{key}.json" in self.ignored:
            return None
        path = self.directory / key[:2] / f"{key}.json"
        try:
            if not path.resolve().is_relative_to(self.directory.resolve()):
                return None
        except (OSError, RuntimeError):  # a symlink loop
            return None
        return path

    def get(self, key: str) -> Answer | None:
        with self._lock:
            hit = self._memory.get(key)
        if hit is not None or self.directory is None:
            return hit
        path = self._path(key)
        if path is None:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            answer = Answer(
                text=valid_unicode(str(data["text"])),
                prompt_tokens=int(data.get("prompt_tokens", 0)),
                completion_tokens=int(data.get("completion_tokens", 0)),
                finish_reason=valid_unicode(str(data.get("finish_reason") or "")) or None,
                checks=_checks(data.get("checks")),
                diff=valid_unicode(data["diff"]) if isinstance(data.get("diff"), str) else None,
                trace=_trace(data.get("trace")),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # missing or unreadable: a miss, never an error
        with self._lock:
            self._memory[key] = answer
        return answer

    def put(self, key: str, answer: Answer) -> None:
        if not answer.ok:
            return
        # what a later hit gives back, as a file would: no timing, no per-call flags
        stored = replace(answer, cached=False, seconds=None, tokens_known=True, turns=1)
        with self._lock:
            self._memory[key] = stored
        if self.directory is None:
            return
        path = self._path(key)
        if path is None:
            return
        payload: dict[str, Any] = {
            "text": answer.text,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
            "finish_reason": answer.finish_reason,
        }
        if answer.checks is not None:  # a workspace answer: how its checks came out
            payload["checks"] = [list(outcome) for outcome in answer.checks]
        if answer.diff is not None:  # and what the agent changed, for reflection
            payload["diff"] = answer.diff
        if answer.trace is not None:  # the tools it called: judged with the answer, as one
            payload["trace"] = [[c.name, c.arguments, c.result, c.error] for c in answer.trace]
        try:
            self._make_directory()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError:
            # A cache that cannot be written costs money later, never correctness now.
            with contextlib.suppress(OSError, UnboundLocalError):
                os.unlink(tmp)

    def _make_directory(self) -> None:
        """Create the cache folder with a `.gitignore` that ignores it all, once."""
        assert self.directory is not None
        if self.directory.is_dir():
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / ".gitignore").write_text(IGNORE_ALL, encoding="utf-8")
