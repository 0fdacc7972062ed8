"""Generated benchmark inputs: tasks with rule judges, a skill and a memory document.

The task set is built so an epoch has work for several rounds with the offline simulator:

- ten fixable requirements with falling frequencies, shared by train, val and test, so
  round 1 fixes the most common four (the edit budget) and rounds 2 and 3 the rest;
- a train-only trap (`contains "Internal only"`) that val and test contradict
  (`not_contains "internal"`), so the gate has a real edit to reject;
- a few unfixable tasks (`equals`), so train keeps failing and every round runs.

Everything is derived from a seeded `random.Random`, so the same arguments always give the
same tasks, byte for byte.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gitsleep.core.models import Check, Judge, Task

SKILL_NAME = "bench-writer"


@dataclass(frozen=True)
class Requirement:
    """A check some share of the tasks in the given splits carry."""

    check: Check
    share: float
    splits: tuple[str, ...] = ("train", "val", "test")


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement(Check("section_present", "Summary"), 0.80),
    Requirement(Check("regex", r"[Cc]onfidence\s*[:=]"), 0.70),
    Requirement(Check("max_chars", 300), 0.60),
    Requirement(Check("contains", "Owner:"), 0.55),
    Requirement(Check("not_contains", "I considered"), 0.50),
    Requirement(Check("section_present", "Next Steps"), 0.45),
    Requirement(Check("contains", "Rollback plan"), 0.40),
    Requirement(Check("contains", "Decision:"), 0.35),
    Requirement(Check("section_present", "Risks"), 0.30),
    Requirement(Check("contains", "Cost:"), 0.25),
    Requirement(Check("contains", "Internal only"), 0.20, ("train",)),  # the trap
    Requirement(Check("not_contains", "internal"), 0.30, ("val", "test")),
    Requirement(Check("equals", "No brief needed."), 0.04),  # no directive can fix it
)

ACTIONS = (
    "migrating", "retiring", "splitting", "consolidating", "rewriting", "sharding",
    "caching", "replacing", "automating", "versioning", "encrypting", "rate limiting",
)
SYSTEMS = (
    "the billing service", "the search endpoint", "nightly reports", "the events table",
    "feature flags", "the email pipeline", "the deploy scripts", "the metrics store",
    "session storage", "the public API gateway", "image uploads", "the audit log",
)
REASONS = (
    "to cut latency", "to lower hosting cost", "before the licence renewal",
    "after last quarter's outage", "to unblock the mobile team", "for the new region",
)

SKILL_DOCUMENT = """\
---
name: bench-writer
description: Writes short decision briefs on engineering changes for readers outside the team.
---

# Decision brief writer

You write decision briefs about engineering changes for product managers, support leads
and customers' technical contacts. Say what is proposed, why, and what it changes for
the reader. Prefer short sentences and concrete numbers over adjectives.
"""

MEMORY_DOCUMENT = """\
# AGENTS.md

Notes every agent in this repository reads before it writes anything.

- Briefs go to people outside the engineering team: avoid jargon.
- Numbers beat adjectives; dates are ISO 8601.
"""


def _prompt(rng: random.Random, number: int) -> str:
    return (f"Write a decision brief on {rng.choice(ACTIONS)} {rng.choice(SYSTEMS)} "
            f"{rng.choice(REASONS)} (change request {number}).")


def _checks(rng: random.Random, split: str) -> tuple[Check, ...]:
    checks = [r.check for r in REQUIREMENTS if split in r.splits and rng.random() < r.share]
    checks.append(Check("no_refusal"))  # every task has at least one check
    return tuple(checks)


def make_tasks(
    n_train: int, n_val: int, n_test: int, *, seed: int = 7, rubric_share: float = 0.0
) -> list[Task]:
    """`n_train + n_val + n_test` tasks with rule judges (and optionally some rubric ones).

    `rubric_share` of the tasks get a rubric judge quoting the phrases their rule checks
    would require, so benchmarks can count judge calls too.
    """
    rng = random.Random(seed)
    tasks: list[Task] = []
    number = 0
    for split, count in (("train", n_train), ("val", n_val), ("test", n_test)):
        for index in range(count):
            number += 1
            prompt = _prompt(rng, number)
            checks = _checks(rng, split)
            if rubric_share and rng.random() < rubric_share:
                judge = Judge("rubric", rubric='The brief has a "## Summary" heading and '
                                              'states "Owner:".')
            else:
                judge = Judge("rule", checks=checks)
            tasks.append(Task(f"{split}-{index + 1:05d}", prompt, split, judge))
    return tasks


def split_sizes(total: int) -> tuple[int, int, int]:
    """A total divided into train, val and test thirds (train takes the remainder)."""
    third = total // 3
    return total - 2 * third, third, third


def task_record(task: Task) -> dict:
    """The task as a line of gitsleep's own task format."""
    judge: dict = {"kind": task.judge.kind}
    if task.judge.kind == "rule":
        judge["checks"] = [
            {"op": c.op} if c.arg is None else {"op": c.op, "arg": c.arg}
            for c in task.judge.checks
        ]
    elif task.judge.kind == "rubric":
        judge["rubric"] = task.judge.rubric
    else:
        judge["answer"] = task.judge.answer
    return {"id": task.id, "prompt": task.prompt, "split": task.split, "judge": judge}


def write_repo(root: Path, tasks: Sequence[Task], *, memory: bool = True) -> Path:
    """A repository layout `gitsleep validate` accepts: config, documents, task files.

    Returns the path of the `.gitsleep.yml` it wrote.
    """
    skill_path = Path("skills") / SKILL_NAME / "SKILL.md"
    (root / skill_path).parent.mkdir(parents=True, exist_ok=True)
    (root / skill_path).write_text(SKILL_DOCUMENT, encoding="utf-8")
    if memory:
        (root / "AGENTS.md").write_text(MEMORY_DOCUMENT, encoding="utf-8")
    evals = root / "evals" / SKILL_NAME
    evals.mkdir(parents=True, exist_ok=True)
    entries = []
    for split in ("train", "val", "test"):
        lines = [json.dumps(task_record(t)) for t in tasks if t.split == split]
        if not lines:
            continue
        (evals / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        entries.append(f"      - path: evals/{SKILL_NAME}/{split}.jsonl\n        split: {split}\n")
    config = (
        "version: 1\nbackend: offline\nmodel: null\nskills:\n"
        f"  - name: {SKILL_NAME}\n    skill: {skill_path.as_posix()}\n"
        + ("    memory: AGENTS.md\n" if memory else "")
        + "    tasks:\n" + "".join(entries)
    )
    path = root / ".gitsleep.yml"
    path.write_text(config, encoding="utf-8")
    return path
