"""Which skill Claude Code picks, asked of Claude Code itself.

Each run gets its own fresh temporary project: every skill of the catalog installed at
`.claude/skills/<name>/SKILL.md` (the candidate description for the skill being tuned, the
siblings' as they are), then `claude -p --output-format stream-json --verbose` with the
query on stdin, stopped at the configured timeout. The pick is read from the whole stream,
not its first tool call: the Skill tool naming a skill of the catalog, or any tool reading
a skill's SKILL.md. When the skill being tuned is loaded anywhere in the stream it is the
pick, even after a sibling fired first; otherwise the first skill loaded is; none is "no
skill". A failed or timed-out run is an error, never a wrong pick.

A personal copy of a catalog skill under `~/.claude/skills/<name>/` would be loaded in
place of the project's (the candidate would never be seen), so it is refused before any
call (`shadowing`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gitsleep.base.errors import BackendError, UsageError
from gitsleep.base.redact import without_forge_tokens
from gitsleep.core.models import Answer
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.sandbox import processes

STREAM_ARGS = ("-p", "--output-format", "stream-json", "--verbose")
MAX_STREAM_BYTES = 8 << 20
SKILL_TOOL = "Skill"


def shadowing(home: Path, names: Iterable[str]) -> list[Path]:
    """The user-level skills that would shadow a project skill of the same name."""
    return [home / ".claude" / "skills" / name / "SKILL.md" for name in names
            if (home / ".claude" / "skills" / name / "SKILL.md").exists()]


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _tool_uses(event: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                yield block


def picks_in(stream: str, names: Sequence[str]) -> list[str]:
    """Every skill of `names` the stream shows loaded, in order (each once)."""
    found: list[str] = []
    for line in stream.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line that is not an event: not a pick
        if not isinstance(event, Mapping):
            continue
        for use in _tool_uses(event):
            values = list(_strings(use.get("input")))
            for name in names:
                named = use.get("name") == SKILL_TOOL and any(
                    v.strip().removeprefix("/") == name for v in values)
                read = any(f"skills/{name}/SKILL.md" in v for v in values)
                if (named or read) and name not in found:
                    found.append(name)
    return found


def install(folder: Path, catalog: Sequence[tuple[str, str]]) -> None:
    """Every catalog skill as Claude Code finds a project skill."""
    for name, description in catalog:
        path = folder / ".claude" / "skills" / name / "SKILL.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n"
                        f"# {name}\n\nFollow this skill's instructions for the request.\n",
                        encoding="utf-8")


class ClaudePicker(Backend):
    """Answers pick calls by running Claude Code; any other call goes to `others`."""

    name = "claude-code"

    def __init__(self, others: Backend, *, command: Sequence[str] = ("claude",),
                 env: Mapping[str, str], timeout: float, home: Path | None = None) -> None:
        self.others = others
        self.command = tuple(command)
        self.env = without_forge_tokens(env, set())
        self.timeout = timeout
        self.home = home if home is not None else Path(env.get("HOME") or Path.home())
        self.simulated = others.simulated

    def refuse_shadowing(self, names: Iterable[str]) -> None:
        """UsageError when a personal skill would be loaded instead of a project one."""
        found = shadowing(self.home, names)
        if found:
            raise UsageError(f"{found[0]}: a personal skill of the same name shadows the "
                             "project's, so Claude Code would never be shown the candidate "
                             "description; move it aside while gitsleep tunes triggers")

    def complete(self, call: ModelCall) -> Answer:
        pick = (call.context or {}).get("pick")
        if not isinstance(pick, Mapping):
            return self.others.complete(call)
        catalog = [(str(n), str(d)) for n, d in pick.get("catalog", [])]
        names = [n for n, _ in catalog]
        try:
            self.refuse_shadowing(names)
        except UsageError as exc:
            raise BackendError(str(exc)) from None
        folder = Path(tempfile.mkdtemp(prefix="gitsleep-trigger-"))  # one folder per run
        try:
            install(folder, catalog)
            try:
                code, timed_out, _, out, err, seconds = processes.run_process(
                    [*self.command, *STREAM_ARGS], cwd=str(folder), env=self.env,
                    stdin=str(pick.get("query", "")).encode("utf-8"), timeout=self.timeout,
                    max_output_bytes=MAX_STREAM_BYTES)
            except OSError as exc:
                raise BackendError(f"{self.command[0]}: cannot start Claude Code "
                                   f"({exc.strerror or exc})") from None
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if timed_out:
            return Answer(text=None, error=f"claude timed out after {self.timeout:g}s "
                          "(triggers.timeout)", seconds=seconds, tokens_known=False)
        found = picks_in(out.decode("utf-8", "replace"), names)
        if code != 0 and not found:
            tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return Answer(text=None, error=f"claude exited {code}: {tail[0][:200]}",
                          seconds=seconds, tokens_known=False)
        skill = str(pick.get("skill") or "")
        chosen = skill if skill in found else (found[0] if found else None)
        return Answer(text=json.dumps({"skill": chosen}), seconds=seconds, tokens_known=False)

    def cache_salt(self, call: ModelCall) -> str:
        return "claude-code" if (call.context or {}).get("pick") else ""

    def close(self) -> None:
        self.others.close()
