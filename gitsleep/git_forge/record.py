"""The git record of an epoch: its commit trailers, its note ref, and what makes it current.

An accepted epoch is one commit on `gitsleep/<skill>` whose message ends in `Gitsleep-*`
trailers, with its diagnostics.json as a note under `NOTES_REF`. The trailers say what the
epoch decided and which inputs it saw (base, task files, documents and config as digests),
so a re-run with the same inputs is "up to date" without a model call.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, get_args

from gitsleep.base.errors import UsageError
from gitsleep.core import gate
from gitsleep.core import markdown as md
from gitsleep.core.models import AgentSummary, Decision, EpochResult
from gitsleep.core.scores import fmt_change, parse_change, rounded
from gitsleep.git_forge.gitrun import run_git

if TYPE_CHECKING:
    import git

NOTES_REF = "refs/notes/gitsleep"
MAX_NOTE_BYTES = 8 << 20  # a diagnostics note is tens of KB; a larger one is not gitsleep's
ALGORITHM = "gitsleep-epoch-v1"  # part of the inputs digest: a new algorithm re-runs
PREFIX = "Gitsleep-"
SKILL = "Gitsleep-Skill"
DECISION = "Gitsleep-Decision"
METRIC = "Gitsleep-Metric"
VAL = "Gitsleep-Val"
TEST = "Gitsleep-Test"
NOISE = "Gitsleep-Noise"  # after the Test trailers, when the night measured its noise
BASE = "Gitsleep-Base"
TASKS = "Gitsleep-Tasks"
MODEL = "Gitsleep-Model"
INPUTS = "Gitsleep-Inputs"
TRAILER_KEYS = (SKILL, DECISION, METRIC, VAL, TEST, BASE, TASKS, MODEL, INPUTS)
# a night with a trigger pass (the description tuned on which skill is picked) adds these
# after the held-out trailer: the pass's decision and its trigger accuracy per split
DESCRIPTION = "Gitsleep-Description"
TRIGGER_VAL = "Gitsleep-Trigger-Val"
TRIGGER_TEST = "Gitsleep-Trigger-Test"
TRIGGER_NOISE = "Gitsleep-Trigger-Noise"  # when the pass measured its pick noise
TRIGGER_KEYS = (DESCRIPTION, TRIGGER_VAL, TRIGGER_TEST, TRIGGER_NOISE)
# The note's `extra.pull_request`: whether the epoch asked for a pull request, recorded as
# the value the run acted on, so a later run finishing its work reads the decision instead
# of re-deriving it from the 3-decimal trailer text.
PR_FIELD = "pull_request"
PR_OPEN, PR_SKIP = "open", "skip"
_DECISIONS: tuple[Decision, ...] = get_args(Decision)
_TRAILER_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*\Z")
# an agent's name as the config allows it (several agents): what a per-agent
# trailer key may end in, written or read back
AGENT_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,31}\Z")


# -- writing ------------------------------------------------------------------------------


def trailer_values(result: EpochResult, trailers: Mapping[str, str]) -> dict[str, str]:
    """The commit's trailers in their fixed order (extra keys from `trailers` follow).

    Base, Tasks, Model and Inputs come from `trailers`; a missing one reads `unknown`
    (Model defaults to `<agent> / <optimizer>`). Values are folded to one line. A night of
    several agents adds each agent's `Gitsleep-Val-<name>` and `Gitsleep-Test-<name>` after
    the aggregate `Gitsleep-Test`, in the configured order; a night that measured its noise
    adds `Gitsleep-Noise` (what moved under the placebo, the sign tests' p) after them.
    """
    agents = ", ".join(a.model for a in result.agents) or result.agent_model
    values = {
        SKILL: result.skill,
        DECISION: result.decision,
        METRIC: result.metric,
        VAL: fmt_change(result.val.baseline, result.val.candidate),
        TEST: fmt_change(result.test.baseline, result.test.candidate),
        **agent_trailers(result.agents),
        **({NOISE: result.noise.trailer()} if result.noise is not None else {}),
        **trigger_trailers(result),
        BASE: trailers.get(BASE, "unknown"),
        TASKS: trailers.get(TASKS, "unknown"),
        MODEL: trailers.get(MODEL, f"{agents} / {result.optimizer_model}"),
        INPUTS: trailers.get(INPUTS, "unknown"),
    }
    for key, value in trailers.items():
        if key in values:
            continue
        if not _TRAILER_KEY.match(key):
            raise ValueError(f"not a git trailer key: {key!r}")
        values[key] = value
    # git drops or mis-reads empty and multi-line values: fold, and never leave one empty.
    return {k: " ".join(md.one_line(v).split()) or "unknown" for k, v in values.items()}


def trigger_trailers(result: EpochResult) -> dict[str, str]:
    """The trigger pass's decision and accuracy (val, held-out), and what moved under its
    placebo with the sign tests' p when it measured that; none without a pass."""
    night = result.triggers
    if night is None:
        return {}
    return {DESCRIPTION: night.decision,
            TRIGGER_VAL: fmt_change(night.val.baseline, night.val.final),
            TRIGGER_TEST: fmt_change(night.test.baseline, night.test.final),
            **({TRIGGER_NOISE: night.noise.trailer()} if night.noise is not None else {})}


def trigger_scores(trailers: Mapping[str, str]
                   ) -> tuple[tuple[float | None, float | None],
                              tuple[float | None, float | None]] | None:
    """(val, held-out) trigger accuracy as a commit's trailers record it (None: no pass);
    a value that is not a score reads as unknown."""
    if TRIGGER_VAL not in trailers and TRIGGER_TEST not in trailers:
        return None
    return (finite_pair(scores(trailers, TRIGGER_VAL)),
            finite_pair(scores(trailers, TRIGGER_TEST)))


def agent_key(split_key: str, name: str) -> str:
    """`Gitsleep-Val-<name>` / `Gitsleep-Test-<name>`: one agent's trailer for a split."""
    return f"{split_key}-{name}"


def agent_trailers(agents: list[AgentSummary]) -> dict[str, str]:
    """Each agent's val and held-out change, in the agents' order; a name that could not be
    a trailer key (the config allows none) is left out rather than forge another key."""
    values: dict[str, str] = {}
    for agent in agents:
        if AGENT_NAME.match(agent.name):
            values[agent_key(VAL, agent.name)] = fmt_change(agent.val.baseline,
                                                            agent.val.candidate)
            values[agent_key(TEST, agent.name)] = fmt_change(agent.test.baseline,
                                                             agent.test.candidate)
    return values


def with_proof(data: Mapping[str, Any], sha: str, branch: str) -> dict[str, Any]:
    """The note for commit `sha` on `branch`: `data` plus the commit and branch it is for.

    A note copied to another commit (`notes.rewriteRef` on an amend or rebase) names the
    original sha, so it proves nothing about the copy.
    """
    return {**data, "commit": sha, "branch": branch}


# -- reading ------------------------------------------------------------------------------


def parse_lines(text: str) -> dict[str, str]:
    """`Key: value` lines as a dict (a key given twice keeps its last value)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, separator, value = line.partition(":")
        if separator and key.strip():
            found[key.strip()] = value.strip()
    return found


def ours(trailers: Mapping[str, str]) -> dict[str, str]:
    """Only the `Gitsleep-*` trailers."""
    return {k: v for k, v in trailers.items() if k.startswith(PREFIX)}


def read_trailers(repo: git.Repo, rev: str) -> dict[str, str]:
    """The trailers of a commit's message, as `git interpret-trailers --parse` reads them.

    A key given twice keeps its last value.
    """
    message = run_git(repo.git, "log", "-1", "--format=%B", rev, "--")
    handle, message_path = tempfile.mkstemp(prefix="gitsleep-msg-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(message + "\n")
        parsed = run_git(repo.git, "interpret-trailers", "--parse", message_path)
    finally:
        os.unlink(message_path)
    return parse_lines(parsed)


def recorded_decision(trailers: Mapping[str, str]) -> Decision:
    """The decision the trailers record, one of the contract's values: gitsleep commits only
    an accepted epoch, so a missing or foreign value (anyone can write a trailer) reads as
    `accepted`."""
    value = trailers.get(DECISION)
    return next((d for d in _DECISIONS if d == value), "accepted")


def scores(trailers: Mapping[str, str], key: str) -> tuple[float | None, float | None]:
    """(baseline, candidate) recorded under `key` (VAL or TEST); None where unknown."""
    return parse_change(trailers.get(key))


@dataclass(frozen=True)
class RecordedAgent:
    """One agent's val and held-out (baseline, candidate) as its trailers record them."""

    name: str
    val: tuple[float | None, float | None]
    test: tuple[float | None, float | None]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "val": score_pair(self.val), "test": score_pair(self.test)}

    def line(self) -> str:
        """`agent small: val 0.250 -> 0.500, held-out 0.000 -> 1.000` (log, status)."""
        return f"agent {self.name}: val {fmt_change(*self.val)}, held-out {fmt_change(*self.test)}"


def score_pair(scores: tuple[float | None, float | None]) -> dict[str, float | None]:
    """`{"baseline": 0.25, "candidate": 0.5}`, rounded to 3 decimals, for --json."""
    return {"baseline": rounded(scores[0]), "candidate": rounded(scores[1])}


def agent_scores(trailers: Mapping[str, str]) -> list[RecordedAgent]:
    """Each agent's recorded scores, in the trailers' order (empty for a night of one
    agent). A trailer is untrusted text: only a key ending in an agent name the config
    could allow counts, and a score that is not a number reads as unknown."""
    names: list[str] = []
    for key in trailers:
        for split_key in (VAL, TEST):
            name = key.removeprefix(f"{split_key}-")
            if name != key and AGENT_NAME.match(name) and name not in names:
                names.append(name)
    return [RecordedAgent(name, finite_pair(scores(trailers, agent_key(VAL, name))),
                        finite_pair(scores(trailers, agent_key(TEST, name)))) for name in names]


def finite_pair(pair: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """The pair with `nan` or `inf` (a trailer anyone could write) read as unknown."""
    return (pair[0] if pair[0] is None or math.isfinite(pair[0]) else None,
            pair[1] if pair[1] is None or math.isfinite(pair[1]) else None)


def deciding_scores(trailers: Mapping[str, str]) -> tuple[float, float] | None:
    """The recorded scores a pull request is decided on: held-out, else val; None if none."""
    for key in (TEST, VAL):
        before, after = scores(trailers, key)
        if before is not None and after is not None:
            return before, after
    return None


def pr_field(opens: bool) -> dict[str, str]:
    """What the note records about the pull request: `{"pull_request": "open" | "skip"}`."""
    return {PR_FIELD: PR_OPEN if opens else PR_SKIP}


def note_data(text: str | None) -> dict[str, object]:
    """A note's JSON object; empty when missing or unreadable (a note is untrusted input:
    wrong shapes read as nothing)."""
    try:
        data = json.loads(text) if text else None
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def recorded_pr(note_text: str | None, trailers: Mapping[str, str], min_delta: float) -> bool:
    """Whether the recorded epoch asked for a pull request: the decision its note records
    (`extra.pull_request`); a note without it (written before gitsleep recorded it, or
    missing: a run stopped between commit and note) falls back to the trailers' scores."""
    extra = note_data(note_text).get("extra")
    value = extra.get(PR_FIELD) if isinstance(extra, dict) else None
    if value in (PR_OPEN, PR_SKIP):
        return bool(value == PR_OPEN)
    return recorded_improvement(trailers, min_delta)


def recorded_improvement(trailers: Mapping[str, str], min_delta: float) -> bool:
    """Whether a recorded epoch asks for a pull request: its deciding scores pass the
    gate's one rule (`gate.improves`), as the epoch's own `pr_eligible` did."""
    found = deciding_scores(trailers)
    return found is not None and gate.improves(*found, min_delta)


# -- what makes a recorded epoch current --------------------------------------------------


class _TaskFile(Protocol):
    @property
    def path(self) -> str: ...


class SkillInputs(Protocol):
    """What the record reads of a skill's config: its name and its task files (the
    config loader's `SkillConfig`; the record never imports the loader)."""

    @property
    def name(self) -> str: ...

    @property
    def tasks(self) -> Sequence[_TaskFile]: ...


class ConfigInputs(Protocol):
    """What the record reads of the config: its effective values and a skill's models."""

    def model_dump(self, *, mode: str) -> dict[str, Any]: ...

    def models(self, roles: tuple[str, ...] = ..., *, skill: str | None = ...
               ) -> tuple[str, ...]: ...


def task_files_digest(repo_root: Path, skill: SkillInputs) -> str:
    """`sha256:<hex>` of the skill's task files in config order (the Gitsleep-Tasks trailer).

    Each file's path and length go in before its bytes, so moving a task from one file
    to another changes the digest.
    """
    digest = hashlib.sha256()
    for entry in skill.tasks:
        try:
            data = (repo_root / entry.path).read_bytes()
        except OSError as exc:
            raise UsageError(f"{entry.path}: cannot be read ({exc.strerror or exc})") from None
        digest.update(f"{entry.path}\0{len(data)}\0".encode())
        digest.update(data)
    return f"sha256:{digest.hexdigest()}"


def inputs_digest(config: ConfigInputs, skill: SkillInputs, root: Path,
                  documents: Mapping[str, str | None]) -> str:
    """sha256 of what decides an epoch: documents, task files and the effective config."""
    h = hashlib.sha256(ALGORITHM.encode())
    for name in ("skill", "memory"):
        h.update(f"\0{name}\0".encode())
        h.update((documents.get(name) or "").encode("utf-8"))
    h.update(task_files_digest(root, skill).encode())
    effective = config.model_dump(mode="json")
    effective["skills"] = [s for s in effective["skills"] if s["name"] == skill.name]
    h.update(json.dumps(effective, sort_keys=True).encode())
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True)
class Digests:
    """The inputs an epoch ran on, as its Base, Tasks, Model and Inputs trailers record them."""

    base: str
    tasks: str
    model: str
    inputs: str

    @classmethod
    def of(cls, config: ConfigInputs, skill: SkillInputs, root: Path,
           documents: Mapping[str, str | None], base_sha: str) -> Digests:
        agent, optimizer, _ = config.models(skill=skill.name)
        return cls(base=base_sha, tasks=task_files_digest(root, skill),
                   model=f"{agent} / {optimizer}",
                   inputs=inputs_digest(config, skill, root, documents))

    def trailers(self) -> dict[str, str]:
        return {BASE: self.base, TASKS: self.tasks, MODEL: self.model, INPUTS: self.inputs}

    def recorded_in(self, trailers: Mapping[str, str]) -> bool:
        """Whether `trailers` record an epoch on exactly these inputs (it is up to date)."""
        return is_up_to_date(trailers, base_sha=self.base, tasks_digest=self.tasks,
                             inputs_digest=self.inputs)


def is_up_to_date(
    trailers: Mapping[str, str], *, base_sha: str, tasks_digest: str, inputs_digest: str
) -> bool:
    """Whether the branch already holds this exact epoch (same base, tasks and inputs)."""
    return bool(trailers) and (
        trailers.get(BASE) == base_sha
        and trailers.get(TASKS) == tasks_digest
        and trailers.get(INPUTS) == inputs_digest
    )
