"""The order of a harvest: find files -> read sessions -> select -> mine -> mask -> de-duplicate.

Files are read newest first, one line at a time; each session is reduced to a bounded
digest, filtered, and mined at once by the rule miner, so memory holds candidate tasks,
not transcripts. Only the LLM miner needs sessions after reading: it keeps the most
relevant ones, at most as many as tasks may be written. Every session or candidate that
does not become a task is counted with its reason.
"""

from __future__ import annotations

import errno
import heapq
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from gitsleep.base.errors import UsageError
from gitsleep.base.problems import FileProblem, read_text
from gitsleep.base.redact import Redactor
from gitsleep.core.models import Task
from gitsleep.flows.harvest import claude, codex, plain
from gitsleep.flows.harvest import select as pick
from gitsleep.flows.harvest.mine import Candidate, heuristic, prompt_key, to_record
from gitsleep.flows.harvest.privacy import Masker
from gitsleep.flows.harvest.sessions import ReadStats, Session

SOURCES: dict[str, ModuleType] = {"claude": claude, "codex": codex, "jsonl": plain}
DEFAULT_PATHS = {"claude": (".claude", "projects"), "codex": (".codex", "sessions")}
LlmMiner = Callable[[Session], tuple[list[Candidate], list[str]]]
DELETED_BEFORE = "deleted in an earlier review (git history)"


@dataclass
class Plan:
    """What to harvest: the source, where, for which skill and repository, how much."""

    source: str
    paths: list[Path]
    repo: Path
    skill: str
    skill_text: str
    since: datetime | None = None
    max_tasks: int = 40
    existing: Iterable[Task] = ()
    # ids of harvested tasks the task files' git history holds: a person deleted those
    # not in `existing` in review, and they must not come back (`select.harvested_before`)
    harvested_before: frozenset[str] = frozenset()


@dataclass(frozen=True)
class HarvestCounts:
    """What a harvest read, kept, dropped and masked: `harvest`'s summary, typed;
    `to_json` is the summary's keys after skill, from and output."""

    files: int
    sessions: int
    lines: int
    skipped_lines: dict[str, int]
    kept_sessions: int
    dropped_sessions: dict[str, int]
    tasks: int
    dropped_tasks: dict[str, int]
    masked: dict[str, int]  # secrets, home paths, e-mail addresses
    llm_sessions: int
    seconds: float

    def to_json(self) -> dict[str, object]:
        return {
            "files": self.files, "sessions": self.sessions, "lines": self.lines,
            "skipped_lines": dict(self.skipped_lines), "kept_sessions": self.kept_sessions,
            "dropped_sessions": dict(self.dropped_sessions), "tasks": self.tasks,
            "dropped_tasks": dict(self.dropped_tasks), "masked": dict(self.masked),
            "llm_sessions": self.llm_sessions, "seconds": self.seconds,
        }


@dataclass
class Harvest:
    """The tasks to write and the account of everything that was not written."""

    records: list[dict[str, Any]] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)
    kept_sessions: int = 0
    session_drops: Counter[str] = field(default_factory=Counter)
    task_drops: Counter[str] = field(default_factory=Counter)
    masked: Counter[str] = field(default_factory=Counter)
    llm_sessions: int = 0
    seconds: float = 0.0

    def summary(self) -> HarvestCounts:
        return HarvestCounts(
            files=self.stats.files, sessions=self.stats.sessions, lines=self.stats.lines,
            skipped_lines=dict(self.stats.skipped), kept_sessions=self.kept_sessions,
            dropped_sessions=dict(self.session_drops), tasks=len(self.records),
            dropped_tasks=dict(self.task_drops),
            masked={k: self.masked[k] for k in ("secrets", "home paths", "e-mail addresses")},
            llm_sessions=self.llm_sessions, seconds=round(self.seconds, 3),
        )


def default_paths(source: str, home: str | os.PathLike[str]) -> list[Path]:
    return [Path(home, *DEFAULT_PATHS[source])] if source in DEFAULT_PATHS else []


def files_newest_first(source: str, paths: Iterable[Path], stats: ReadStats
                       ) -> list[tuple[float, Path]]:
    found: dict[Path, float] = {}
    for root in paths:
        if not root.exists():
            stats.skip(f"path not found: {root.name or root}")
            continue
        pattern = SOURCES[source].FILE_PATTERN
        for path in [root] if root.is_file() else root.rglob(pattern):
            try:
                if path.is_file():
                    found[path] = path.stat().st_mtime
            except OSError:
                stats.skip("file unreadable")
    return sorted(((mtime, path) for path, mtime in found.items()),
                  key=lambda item: (-item[0], str(item[1])))


def sessions(plan: Plan, stats: ReadStats, drops: Counter[str]) -> Iterator[Session]:
    """Every session of the plan's files that is in the repository and the time window."""
    reader = SOURCES[plan.source]
    keep_cwd = pick.inside(plan.repo)
    for mtime, path in files_newest_first(plan.source, plan.paths, stats):
        if plan.since is not None and mtime < plan.since.timestamp():
            drops["older than --since (file not opened)"] += 1
            continue
        stats.files += 1
        for session in reader.read(path, stats, keep_cwd):
            stats.sessions += 1
            if session.outside:
                drops["outside the repository"] += 1
                continue
            moment = session.ended or datetime.fromtimestamp(mtime, tz=timezone.utc)
            if plan.since is not None and moment < plan.since:
                drops["older than --since"] += 1
                continue
            yield session


def run(plan: Plan, redactor: Redactor, *, home: str | None = None,
        llm: LlmMiner | None = None, progress: Callable[[str], None] | None = None
        ) -> Harvest:
    started = time.perf_counter()
    result = Harvest()
    terms = pick.skill_terms(plan.skill, plan.skill_text)
    existing_ids = {t.id for t in plan.existing}
    existing_prompts = {prompt_key(t.prompt): t.id for t in plan.existing}
    chosen: dict[str, tuple[tuple[int, float], dict[str, Any], Counter[str]]] = {}
    top: list[tuple[int, float, int, Session]] = []  # the LLM miner's sessions, a min-heap
    order = 0

    def consider(candidates: list[Candidate], rank: tuple[int, float]) -> None:
        for candidate in candidates:
            masker = Masker(redactor, home)
            record, why = to_record(candidate, masker)
            if record is None:
                result.task_drops[f"{candidate.origin}: {why}"] += 1
                continue
            key = prompt_key(record["prompt"])
            if record["id"] in existing_ids or key in existing_prompts:
                result.task_drops["duplicate of a task the skill already has"] += 1
                continue
            if record["id"] in plan.harvested_before:
                result.task_drops[DELETED_BEFORE] += 1
                continue
            earlier = chosen.get(key)
            if earlier is not None:
                result.task_drops["duplicate within the harvest"] += 1
                if earlier[0] >= rank:
                    continue
            chosen[key] = (rank, record, masker.counts)

    for session in sessions(plan, result.stats, result.session_drops):
        score = pick.relevance(session, terms)
        if score < pick.KEEP_AT:
            result.session_drops["not about the skill"] += 1
            continue
        result.kept_sessions += 1
        moment = (session.ended or session.started)
        rank = (score, moment.timestamp() if moment else 0.0)
        candidates, why = heuristic(session)
        if why:
            result.task_drops[f"rules: {why}"] += 1
        consider(candidates, rank)
        if llm is not None:
            order += 1
            item = (rank[0], rank[1], -order, session)
            if len(top) < plan.max_tasks:
                heapq.heappush(top, item)
            else:
                heapq.heappushpop(top, item)
    for score, when, _, session in sorted(top, reverse=True):
        result.llm_sessions += 1
        if progress:
            progress(f"llm miner: session {result.llm_sessions} of {len(top)}")
        candidates, reasons = llm(session)  # type: ignore[misc]
        for reason in reasons:
            result.task_drops[reason] += 1
        consider(candidates, (score, when))
    ranked = sorted(chosen.values(), key=lambda item: item[0], reverse=True)
    for _, _, _ in ranked[plan.max_tasks:]:
        result.task_drops[f"over --max {plan.max_tasks}"] += 1
    for _, record, counts in ranked[:plan.max_tasks]:
        result.records.append(record)
        result.masked.update(counts)
    result.seconds = time.perf_counter() - started
    return result


def render(records: Iterable[dict[str, Any]]) -> str:
    """JSON Lines, one task a line, in gitsleep's own task format."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def inside_work_tree(relative: str) -> None:
    """UsageError (exit 2) for a task file inside `.git`: its hooks and config run code."""
    if any(part.casefold() == ".git" for part in PurePosixPath(relative).parts):
        raise UsageError(f"{relative}: a task file cannot be inside .git (git's own folder, "
                         "whose hooks run programs); give --output a path in the work tree")


def jsonl_name(root: Path, relative: str) -> None:
    """UsageError (exit 2) for a task file not named `.jsonl`: harvest appends one JSON
    object a line, which would corrupt a YAML or JSON document. A folder there is named
    as one, so the fix is plain (`root` is the checkout)."""
    path = PurePosixPath(relative)
    if path.suffix.lower() != ".jsonl":
        if (root / relative).is_dir() and not (root / relative).is_symlink():
            raise UsageError(_folder(relative, ""))
        named = f"a {path.suffix} file" if path.suffix else "a file not named .jsonl"
        raise UsageError(f"--output {relative}: harvest appends JSON Lines (one task a line), "
                         f"which would corrupt {named}: point --output at a .jsonl file "
                         f"(e.g. {path.with_suffix('.jsonl')})")


def _folder(relative: str, where: str) -> str:
    return (f"--output {relative}{where} is a folder, not a task file: give --output the "
            f"file to append to (e.g. {relative}/harvested.jsonl)")


def file_target(root: Path, relative: str, where: str = "") -> Path:
    """`plain_target`, refused (exit 2) when no file can be appended to there: the path is
    a folder or not a regular file, or a folder on its way is a file. `where` names a
    branch."""
    path = plain_target(root, relative)
    on_the_way = root
    for part in PurePosixPath(relative).parts[:-1]:
        on_the_way = on_the_way / part
        if on_the_way.exists() and not on_the_way.is_dir():
            shown = on_the_way.relative_to(root).as_posix()
            raise UsageError(f"--output {relative}{where}: {shown} is a file, not a folder, so "
                             "no task file can be written under it: give --output another "
                             "path (e.g. evals/<skill>/harvested.jsonl)")
    if path.is_dir():
        raise UsageError(_folder(relative, where))
    if path.exists() and not path.is_file():
        raise UsageError(f"--output {relative}{where} is not a regular file (a pipe, socket or "
                         "device?): give --output a .jsonl task file")
    return path


def jsonl_target(root: Path, relative: str, where: str = "") -> Path:
    """`file_target`, refused (exit 2) unless appending lines keeps the file readable:
    it must be named `.jsonl` and, when it exists, hold one JSON object a line (a JSON or
    YAML document named `.jsonl` would be corrupted too). `where` names a branch."""
    path = file_target(root, relative, where)
    jsonl_name(root, relative)
    if not path.is_file():
        return path
    try:
        text = read_text(path)
    except FileProblem as exc:
        raise UsageError(f"{relative}{where}: {exc.message}; harvest appends to it only as "
                         "a JSON Lines text file: fix it, or point --output at another "
                         ".jsonl file") from None
    lines = text.split("\n")  # "\n" only, as tasks.py reads JSON Lines
    alone = sum(1 for line in lines if line.strip()) == 1
    for number, line in enumerate(lines, start=1):
        if line.strip() and not _json_object(line, alone=alone):
            raise UsageError(
                f"{relative}{where}: line {number} is not one JSON object, so this is not a "
                "JSON Lines file and appended lines would corrupt it; harvest appends JSON "
                "Lines: point --output at a .jsonl file with one task a line (or a new one)")
    return path


def _json_object(line: str, *, alone: bool) -> bool:
    """Whether `line` is one JSON object (a task record), not `{"tasks": [...]}`, the
    whole-file form that a one-line document would be read as."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and not (alone and isinstance(value.get("tasks"), list))


def plain_target(root: Path, relative: str) -> Path:
    """`root/relative` to append to, when neither it nor a folder on the way is a symlink.

    A link, even one inside the repository, can lead the write outside it or into `.git`
    (a committed link on the harvest branch points from gitsleep's worktree, which lives
    in the git dir, at `.git/hooks`), so any link is refused with UsageError (exit 2).
    """
    inside_work_tree(relative)
    path = root
    for part in PurePosixPath(relative).parts:
        path = path / part
        if path.is_symlink():
            try:
                target = os.readlink(path).encode("unicode_escape").decode("ascii")
            except OSError:
                target = "?"
            shown = path.relative_to(root).as_posix()
            raise UsageError(
                f"{relative}: {shown} is a symlink (to {target}); harvest appends to task "
                "files only as plain files, never through a link that could lead outside the "
                "repository or into .git: replace the link with the file itself, or give "
                "--output a plain path")
    return path


def append_to(path: Path, text: str) -> None:
    """Add lines to a task file, keeping every byte already in it; never through a link
    (O_NOFOLLOW, where the system has it, closes the gap after `plain_target`'s check)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = (os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_BINARY", 0))
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UsageError(f"{path.name}: became a symlink while harvest ran; nothing "
                             "written: replace the link with the file itself") from None
        raise
    with os.fdopen(fd, "rb+") as handle:
        joiner = b""
        if handle.seek(0, os.SEEK_END) > 0:
            handle.seek(-1, os.SEEK_END)
            joiner = b"" if handle.read(1) == b"\n" else b"\n"
        handle.write(joiner + text.encode("utf-8"))
