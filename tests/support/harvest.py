"""What the harvest tests share: a skill, a brief and a correction, and one harvest run."""

from __future__ import annotations

from pathlib import Path

from gitsleep.base.redact import Redactor
from gitsleep.flows.harvest import pipeline

SKILL_TEXT = """---
name: brief-writer
description: Writes short decision briefs for engineering proposals.
---

# Brief writer

You write decision briefs about engineering proposals for readers outside the team.
"""
BRIEF = "Write a decision brief on moving the billing service to Postgres 16."
FIX = "No, add a Key Risks section. And keep it under 300 characters."
KEEP_ALL = lambda cwd: True  # noqa: E731


def plan(tmp_path: Path, source: str, paths: list[Path], **extra: object) -> pipeline.Plan:
    return pipeline.Plan(source=source, paths=paths, repo=tmp_path / "repo",
                         skill="brief-writer", skill_text=SKILL_TEXT, **extra)  # type: ignore


def harvest(tmp_path: Path, source: str, paths: list[Path], **extra: object) -> pipeline.Harvest:
    (tmp_path / "repo").mkdir(exist_ok=True)
    return pipeline.run(plan(tmp_path, source, paths, **extra), Redactor(),
                        home=str(tmp_path / "home"))
