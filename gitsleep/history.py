"""Every epoch of a skill, read back from git: commit trailers and diagnostics notes.

An accepted epoch is one commit on `gitsleep/<skill>` with `Gitsleep-*` trailers and its
diagnostics.json as a note under `refs/notes/gitsleep`. A merged epoch lives on in the
base's history; a superseded one (the next epoch restarted the branch from the base)
keeps its note. So the history is: the trailered commits reachable from the base and the
branch, plus any commit the notes ref remembers, each once, oldest first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitsleep import record
from gitsleep.gitrun import git_out
from gitsleep.record import NOTES_REF
from gitsleep.scores import rounded

_FIELD, _RECORD = "\x1f", "\x1e"


@dataclass
class Epoch:
    """One recorded epoch: where it is, when, what it decided and what it cost."""

    skill: str
    commit: str
    date: str  # ISO 8601 committer date; "" when the commit object is gone
    where: str  # "base" (merged), "branch" (its gitsleep branch), "superseded" (a note only)
    decision: str
    metric: str
    val: tuple[float | None, float | None]
    test: tuple[float | None, float | None]
    applied: int | None = None  # edits applied (from the note or the message)
    calls: int | None = None
    usd: float | None = None
    trailers: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        def pair(scores: tuple[float | None, float | None]) -> dict[str, float | None]:
            return {"baseline": rounded(scores[0]), "candidate": rounded(scores[1])}

        return {"skill": self.skill, "commit": self.commit, "date": self.date or None,
                "where": self.where, "decision": self.decision, "metric": self.metric,
                "val": pair(self.val), "test": pair(self.test),
                "edits_applied": self.applied,
                "cost": {"calls": self.calls, "estimated_usd": self.usd}}


def utc_minute(date: str) -> str:
    """`2026-11-23 18:43` in UTC from an ISO 8601 date with any offset; `?` when unknown."""
    try:
        return datetime.fromisoformat(date).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "?"


def held_out_points(epochs: list[Epoch]) -> list[tuple[str, float]]:
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


def _applied_from_message(body: str) -> int | None:
    for line in body.splitlines():
        if line.startswith("Applied edits (") and line.endswith("):"):
            return int(line[len("Applied edits ("):-2])
    return 0 if body else None


def _notes(repo: Path) -> dict[str, dict[str, Any]]:
    """commit sha -> its parsed diagnostics note (notes that are not JSON are skipped)."""
    notes: dict[str, dict[str, Any]] = {}
    for line in git_out(repo, "notes", f"--ref={NOTES_REF}", "list").splitlines():
        blob, _, commit = line.partition(" ")
        try:
            data = json.loads(git_out(repo, "cat-file", "-p", blob))
        except ValueError:
            continue
        if isinstance(data, dict):
            notes[commit] = data
    return notes


def read_epochs(repo: Path, *, base: str, branch_refs: list[str],
                skills: list[str] | None = None) -> list[Epoch]:
    """Every recorded epoch of `skills` (all when None), oldest first.

    `branch_refs` are the gitsleep branches' refs that exist (local and remote-tracking),
    so an epoch that is only on its branch is found too.
    """
    revs = [base, *branch_refs]
    fmt = _FIELD.join(["%H", "%cI", "%(trailers:only,unfold)", "%B"]) + _RECORD
    log = git_out(repo, "log", "--no-color", f"--format={fmt}", f"--grep=^{record.SKILL}: ",
               *revs, "--")
    on_base = set(git_out(repo, "rev-list", f"--grep=^{record.SKILL}: ", base, "--").split())
    notes = _notes(repo)
    epochs: dict[str, Epoch] = {}
    for entry in log.split(_RECORD):
        parts = entry.strip("\n").split(_FIELD)
        if len(parts) != 4:
            continue
        sha, date, trailer_text, body = parts
        trailers = record.ours(record.parse_lines(trailer_text))
        skill = trailers.get(record.SKILL, "")
        if not skill or (skills is not None and skill not in skills):
            continue
        where = "base" if sha in on_base else "branch"
        epochs[sha] = _epoch(skill, sha, date, where, trailers, notes.get(sha), body)
    for sha, note in notes.items():
        skill = str(note.get("skill", ""))
        if sha in epochs or not skill or (skills is not None and skill not in skills):
            continue
        date = git_out(repo, "show", "-s", "--format=%cI", sha, "--").strip()
        epochs[sha] = _epoch(skill, sha, date, "superseded", {}, note, "")
    return sorted(epochs.values(), key=lambda e: _order(repo, e))


def _order(repo: Path, epoch: Epoch) -> tuple[float, int, str]:
    """Oldest first: by commit time, then (for epochs in the same second) by how much
    history the commit has, since a later epoch starts from a later base."""
    try:
        when = datetime.fromisoformat(epoch.date).timestamp()
    except ValueError:
        when = float("inf")
    depth = git_out(repo, "rev-list", "--count", epoch.commit, "--").strip()
    return when, int(depth) if depth.isdigit() else 0, epoch.commit


def _epoch(skill: str, sha: str, date: str, where: str, trailers: dict[str, str],
           note: dict[str, Any] | None, body: str) -> Epoch:
    note = note or {}
    splits = note.get("splits") or {}

    def from_note(name: str) -> tuple[float | None, float | None]:
        split = splits.get(name) or {}
        return split.get("baseline"), split.get("candidate")

    val = record.scores(trailers, record.VAL) if record.VAL in trailers else from_note("val")
    test = (record.scores(trailers, record.TEST) if record.TEST in trailers
            else from_note("test"))
    edits = note.get("edits") or {}
    applied = len(edits["applied"]) if isinstance(edits.get("applied"), list) else (
        _applied_from_message(body))
    cost = note.get("cost") or {}
    extra = note.get("extra") or {}
    return Epoch(
        skill=skill, commit=sha, date=date, where=where,
        decision=trailers.get(record.DECISION) or str(note.get("decision", "?")),
        metric=trailers.get(record.METRIC) or str(note.get("metric", "")),
        val=val, test=test, applied=applied,
        calls=cost.get("calls") if isinstance(cost.get("calls"), int) else None,
        usd=extra.get("estimated_usd") if isinstance(extra.get("estimated_usd"), float)
        else None,
        trailers=trailers,
    )
