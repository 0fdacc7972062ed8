"""`demo`'s flow: a bundled example consolidated for real with the offline simulator.

The example is copied into a temporary git repository with a bare `origin` beside it (so
the push runs too), then consolidated exactly as a user would; the command prints what
came of it. No key, no network: the simulator stands in for the model and says so.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import git

from gitsleep.base.bundled import examples_dir
from gitsleep.flows import consolidate as run
from gitsleep.flows.prepare import Setup
from gitsleep.git_forge.gitrun import run_git

EXAMPLE = "brief-writer"


def example_names() -> list[str]:
    """The bundled examples a demo can run: each folder of `examples/` with a config (its
    one skill is named like the folder)."""
    return sorted(p.parent.name for p in examples_dir().glob("*/.gitsleep.yml"))


def make_demo_repo(where: Path, example: str = EXAMPLE) -> Path:
    """A fresh repository holding the example, one commit on `main`, and a bare origin."""
    repo_dir = where / "repo"
    shutil.copytree(examples_dir() / example, repo_dir)
    origin = where / "origin.git"
    runner = git.Git(str(repo_dir))  # every call through gitrun, with its safe settings
    run_git(runner, "init", "--quiet", "--initial-branch=main")
    for key, value in (("user.name", "gitsleep demo"), ("user.email", "demo@gitsleep.invalid"),
                       ("commit.gpgsign", "false")):
        run_git(runner, "config", key, value)
    run_git(runner, "add", "--all")
    run_git(runner, "commit", "--quiet", "--no-verify", "-m",
            f"Add the {example} skill and its tasks")
    run_git(runner, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    run_git(runner, "remote", "add", "origin", str(origin))
    run_git(runner, "push", "--quiet", "origin", "main")
    return repo_dir


@dataclass(frozen=True)
class DemoRun:
    """A demo night: its outcome, the setup it ran with, and where its repository is."""

    outcome: run.SkillOutcome
    setup: Setup
    repo: Path


def run_demo(where: Path, example: str = EXAMPLE, *, quiet: bool = False) -> DemoRun:
    """Consolidate `example` in a fresh repository under `where` (no pull request; the
    forge tokens are left out of its environment)."""
    repo_dir = make_demo_repo(where, example)
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
    setup = Setup.load(repo_dir, None, env=env, backend="offline",
                       progress=(lambda _l: None) if quiet else None)
    skill = setup.config.skill(example)
    outcome = run.consolidate(setup, skill, run.GitOptions(pr=False,
                              output_dir=where / "diagnostics"))
    return DemoRun(outcome, setup, repo_dir)
