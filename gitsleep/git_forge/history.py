"""Every epoch of a skill, read back from git: commit trailers and diagnostics notes.

An accepted epoch is one commit on `gitsleep/<skill>` with `Gitsleep-*` trailers and its
diagnostics.json as a note under `refs/notes/gitsleep`. A merged epoch lives on in the
base's history; a superseded one (the next epoch restarted the branch from the base)
keeps its note. So the history is: the trailered commits reachable from the base and the
branch, plus any commit the notes ref remembers, each once, oldest first.

Anyone who can push can push notes and trailers, so both are read as untrusted text: a
note that is not a JSON object (or not UTF-8, too large, too deeply nested) is skipped and
counted, every field is type-checked, text is cleaned of control characters, and a note on
an object that is not an epoch's commit is no epoch. Reading costs a fixed number of git
processes (`git log`, `git notes list`, `git cat-file --batch`), not one per epoch.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitsleep.base.hostile_text import INVISIBLE
from gitsleep.core import markdown as md
from gitsleep.core.models import SKILL_NAME_RE
from gitsleep.core.numbers import loads_json
from gitsleep.core.outcome import NoteFacts
from gitsleep.core.scores import fmt_change
from gitsleep.git_forge import record
from gitsleep.git_forge.gitrun import git_bytes as _git_bytes
from gitsleep.git_forge.gitrun import git_out, read_blobs
from gitsleep.git_forge.record import MAX_NOTE_BYTES, NOTES_REF

_FIELD, _RECORD = "\x1f", "\x1e"
_MAX_LABEL = 40  # characters of a decision or metric shown in `log`


@dataclass
class RecordedEpoch:
    """One epoch as git records it: where it is, when, what it decided and what it cost
    (not `gitsleep.core.epoch.Epoch`, which runs one)."""

    skill: str
    commit: str
    date: str  # ISO 8601 committer date; "" when the commit object is gone
    where: str  # "base" (merged), "branch" (its gitsleep branch), "superseded" (a note only)
    decision: str
    metric: str
    val: tuple[float | None, float | None]
    test: tuple[float | None, float | None]
    applied: int | None = None  # edits applied, from the note (None: no readable note)
    calls: int | None = None
    usd: float | None = None
    cache_hits: int | None = None
    trailers: dict[str, str] = field(default_factory=dict)
    # several agents: each one's scores, from its Gitsleep-Val-<name> / -Test-<name> trailers
    agents: list[record.RecordedAgent] = field(default_factory=list)
    # a trigger pass: (val, held-out) trigger accuracy from its trailers (None: no pass)
    triggers: tuple[tuple[float | None, float | None],
                    tuple[float | None, float | None]] | None = None

    def trigger_line(self) -> str:
        """`triggers: val 0.400 -> 1.000, held-out 0.400 -> 1.000` ('' without a pass)."""
        if self.triggers is None:
            return ""
        val, test = self.triggers
        return f"triggers: val {fmt_change(*val)}, held-out {fmt_change(*test)}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "skill": self.skill, "commit": self.commit, "date": self.date or None,
            "where": self.where, "decision": self.decision, "metric": self.metric,
            "val": record.score_pair(self.val), "test": record.score_pair(self.test),
            "edits_applied": self.applied,
            "cost": {"calls": self.calls, "cache_hits": self.cache_hits,
                     "estimated_usd": self.usd}}
        if self.agents:  # a night of one agent keeps its shape
            data["agents"] = [agent.to_json() for agent in self.agents]
        if self.triggers is not None:
            data["triggers"] = {"decision": self.trailers.get(record.DESCRIPTION),
                                "val": record.score_pair(self.triggers[0]),
                                "test": record.score_pair(self.triggers[1])}
        return data


def utc_minute(date: str) -> str:
    """`2026-11-23 18:43` in UTC from an ISO 8601 date with any offset; `?` when unknown."""
    try:
        return datetime.fromisoformat(date).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "?"


def held_out_points(epochs: list[RecordedEpoch]) -> list[tuple[str, float]]:
    """(label, held-out) for a chart: the first epoch's baseline, then each epoch's result;
    none below 2 epochs with a held-out score (one epoch is already in the score table)."""
    points: list[tuple[str, float]] = []
    scored = [e for e in epochs if e.test[1] is not None]
    if len(scored) < 2:
        return []
    if scored and scored[0].test[0] is not None:
        points.append(("before", scored[0].test[0]))
    for number, epoch in enumerate(scored, 1):
        points.append((f"#{number} {utc_minute(epoch.date)[5:10]}", epoch.test[1] or 0.0))
    return points


# -- reading git in a fixed number of processes --------------------------------------------


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _object_types(repo: Path, names: list[str]) -> dict[str, str]:
    """object name -> its type (`commit`, `blob`, ...; `missing` when git has no such object),
    for all of `names` in one `git cat-file --batch-check`."""
    if not names:
        return {}
    out = _text(_git_bytes(repo, "cat-file", "--batch-check=%(objectname) %(objecttype)",
                           stdin="".join(f"{name}\n" for name in names).encode()))
    types: dict[str, str] = {}
    for name, line in zip(names, out.splitlines(), strict=False):
        found = line.split()
        types[name] = found[1] if len(found) == 2 and found[0] == name else "missing"
    return types


def _notes(repo: Path) -> dict[str, str]:
    """annotated object -> its note's blob, from one `git notes list` per notes ref: this
    clone's first, then each remote's as last fetched (a fresh clone has only those)."""
    from gitsleep.git_forge.remote_notes import tracking_refs

    found: dict[str, str] = {}
    for ref in [NOTES_REF, *tracking_refs(repo)]:
        pairs = (line.split() for line in _text(_git_bytes(
            repo, "notes", f"--ref={ref}", "list")).splitlines())
        for pair in pairs:
            if len(pair) == 2:
                found.setdefault(pair[1], pair[0])
    return found


def _commits(repo: Path, *revs: str, stdin: bytes | None = None
             ) -> list[tuple[str, str, dict[str, str]]]:
    """(sha, committer date, Gitsleep-* trailers) of each commit `git log` lists: the
    trailers only, never the message's prose."""
    fmt = _FIELD.join(["%H", "%cI", "%(trailers:only,unfold)"]) + _RECORD
    out = _text(_git_bytes(repo, "log", "--no-color", f"--format={fmt}", *revs, stdin=stdin))
    found = []
    for entry in out.split(_RECORD):
        parts = entry.strip("\n").split(_FIELD)
        if len(parts) == 3:
            sha, date, trailer_text = parts
            found.append((sha, date, record.ours(record.parse_lines(trailer_text))))
    return found


# -- reading notes and trailers that anyone could have written ------------------------------


def diagnostics_note(raw: bytes | None) -> NoteFacts | None:
    """What `log` reads from a note, parsed here at the edge (every field checked), or None
    when it is not a note gitsleep could have written (not UTF-8, not JSON, not an object,
    too large or too deeply nested)."""
    if raw is None or len(raw) > MAX_NOTE_BYTES:
        return None
    try:
        data = loads_json(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return NoteFacts.from_json(data) if isinstance(data, dict) else None


def _skill_name(value: object) -> str | None:
    return value if isinstance(value, str) and SKILL_NAME_RE.match(value) else None


def _label(value: object, default: str) -> str:
    """A decision or metric for one table cell: text only, one line, nothing invisible or
    controlling the terminal, clipped."""
    if not isinstance(value, str):
        return default
    text = " ".join(INVISIBLE.sub("", value).split())
    return md.clip(text, _MAX_LABEL) if text else default


# -- the history --------------------------------------------------------------------------


@dataclass
class History:
    """The epochs read back, and the notes skipped because gitsleep did not write them."""

    epochs: list[RecordedEpoch]
    unreadable: list[str]  # objects whose note is not a diagnostics note of an epoch
    odd_commits: list[str]  # commits whose Gitsleep-Skill trailer is not a skill name

    def skipped_line(self) -> str | None:
        """One line for stderr naming what was skipped, or None when nothing was."""
        if not self.unreadable and not self.odd_commits:
            return None
        parts = []
        if self.unreadable:
            parts.append(f"{len(self.unreadable)} notes under {NOTES_REF} that are not "
                         f"gitsleep diagnostics of an epoch (first on {self.unreadable[0][:12]})")
        if self.odd_commits:
            parts.append(f"{len(self.odd_commits)} commits whose {record.SKILL} trailer is "
                         f"not a skill name (first {self.odd_commits[0][:12]})")
        return ("gitsleep: skipped " + " and ".join(parts) + "; `git notes --ref=gitsleep "
                "show <commit>` and `git show <commit>` show them")


def branch_refs(repo: Path, prefix: str) -> list[str]:
    """The local and remote-tracking refs of every gitsleep branch (named `<prefix>...`)."""
    out = git_out(repo, "for-each-ref", "--format=%(refname)", f"refs/heads/{prefix}",
                  "refs/remotes/")
    return [ref for ref in out.split() if ref.startswith(f"refs/heads/{prefix}")
            or f"/{prefix}" in ref.removeprefix("refs/remotes/")]


def read_epochs(repo: Path, *, base: str, branch_refs: list[str],
                skills: list[str] | None = None, details: bool = True) -> list[RecordedEpoch]:
    """Every recorded epoch of `skills` (all when None), oldest first (see `read_history`)."""
    return read_history(repo, base=base, branch_refs=branch_refs, skills=skills,
                        details=details).epochs


def read_history(repo: Path, *, base: str, branch_refs: list[str],
                 skills: list[str] | None = None, details: bool = True) -> History:
    """Every recorded epoch of `skills` (all when None), oldest first, and what was skipped.

    `branch_refs` are the gitsleep branches' refs that exist (local and remote-tracking),
    so an epoch that is only on its branch is found too. A fixed number of git processes
    reads any number of epochs. `details=False` reads a note only where the commit's
    trailers lack the scores (a chart needs no edits or cost): a pull request's chart
    does not read every note.
    """
    wanted = (lambda skill: True) if skills is None else set(skills).__contains__
    on_base = set(_text(_git_bytes(repo, "rev-list", f"--grep=^{record.SKILL}: ", base,
                                   "--")).split())
    notes = _notes(repo)
    found: dict[str, tuple[str, str, str, dict[str, str]]] = {}  # sha -> its record
    odd: list[str] = []
    seen: set[str] = set()

    def keep(sha: str, date: str, where: str, trailers: dict[str, str]) -> None:
        seen.add(sha)
        skill = _skill_name(trailers.get(record.SKILL))
        if skill is None:
            odd.append(sha)
        elif wanted(skill):
            found[sha] = (skill, date, where, trailers)

    for sha, date, trailers in _commits(repo, f"--grep=^{record.SKILL}: ", base,
                                              *branch_refs, "--"):
        keep(sha, date, "base" if sha in on_base else "branch", trailers)
    # annotated objects not on the base or a branch: a superseded epoch's commit, a commit
    # that is gone (only its note is left), or something that is not an epoch at all
    others = [name for name in notes if name not in seen]
    types = _object_types(repo, others)
    present = [name for name in others if types.get(name) == "commit"]
    epoch_commits: set[str] = set()
    if present:
        for sha, date, trailers in _commits(
                repo, "--no-walk=unsorted", "--stdin", "--",
                stdin="".join(f"{sha}\n" for sha in present).encode()):
            if record.SKILL in trailers:
                epoch_commits.add(sha)
                keep(sha, date, "superseded", trailers)
    gone = [name for name in others if types.get(name) == "missing"]
    unreadable = [name for name in others
                  if name not in epoch_commits and name not in gone and name not in odd]

    def needs_note(sha: str) -> bool:
        trailers = found[sha][3]
        return details or record.VAL not in trailers or record.TEST not in trailers

    blobs = read_blobs(repo, [notes[sha] for sha in found if sha in notes and needs_note(sha)]
                       + [notes[sha] for sha in gone], MAX_NOTE_BYTES)
    epochs: list[RecordedEpoch] = []
    for sha, (skill, date, where, trailers) in found.items():
        note = None
        if sha in notes and needs_note(sha):
            note = diagnostics_note(blobs.get(notes[sha]))
            if note is None:
                unreadable.append(sha)
        epochs.append(_epoch(skill, sha, date, where, trailers, note))
    for sha in gone:  # only the note is left: it says which skill
        note = diagnostics_note(blobs.get(notes[sha]))
        named = _skill_name(note.skill) if note is not None else None
        if note is None or named is None:
            unreadable.append(sha)
        elif wanted(named):
            epochs.append(_epoch(named, sha, "", "superseded", {}, note))
    return History(_ordered(repo, epochs), sorted(set(unreadable)), odd)


def _ordered(repo: Path, epochs: list[RecordedEpoch]) -> list[RecordedEpoch]:
    """Oldest first: by commit time, then (for epochs in the same second) by how much
    history the commit has, since a later epoch starts from a later base. Depth costs a
    git process per commit, so it is counted only for commits that share a second."""

    def when(epoch: RecordedEpoch) -> float:
        try:
            return datetime.fromisoformat(epoch.date).timestamp()
        except ValueError:
            return float("inf")

    seconds = Counter(when(e) for e in epochs)

    def depth(epoch: RecordedEpoch) -> int:
        if seconds[when(epoch)] < 2 or not epoch.date:
            return 0
        count = git_out(repo, "rev-list", "--count", epoch.commit, "--").strip()
        return int(count) if count.isdigit() else 0

    return sorted(epochs, key=lambda e: (when(e), depth(e), e.commit))


def _epoch(skill: str, sha: str, date: str, where: str, trailers: dict[str, str],
           note: NoteFacts | None) -> RecordedEpoch:
    """An epoch from its trailers (what the commit says) and its note's structure (every
    field checked: a note is JSON anyone could have pushed). The commit message's prose is
    never read: an epoch without a readable note shows its edit count as unknown."""
    facts = note or NoteFacts()
    val = (record.finite_pair(record.scores(trailers, record.VAL)) if record.VAL in trailers
           else facts.val)
    test = (record.finite_pair(record.scores(trailers, record.TEST)) if record.TEST in trailers
            else facts.test)
    return RecordedEpoch(
        skill=skill, commit=sha, date=date, where=where,
        decision=_label(trailers.get(record.DECISION) or facts.decision, "?"),
        metric=_label(trailers.get(record.METRIC) or facts.metric, ""),
        val=val, test=test, applied=facts.applied, calls=facts.calls, usd=facts.usd,
        cache_hits=facts.cache_hits, trailers=trailers, agents=record.agent_scores(trailers),
        triggers=record.trigger_scores(trailers),
    )
