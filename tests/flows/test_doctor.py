"""`doctor`'s flow: one task through the configured agent, each step handed to `show`."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.flows.doctor import check_agent
from gitsleep.flows.prepare import Setup
from tests.support.gitrepo import example_repo


def _shown(setup: Setup, task_id: str | None) -> list[tuple[str, str]]:
    steps: list[tuple[str, str]] = []
    started: list[bool] = []

    def show(label: str, value: str, *, block: bool = False) -> None:
        assert started, "a step was shown before the setup said it started"
        steps.append((label, value))

    check_agent(setup, setup.config.skills[0], task_id, show,
                started=lambda: started.append(True))
    return steps


def test_the_first_val_task_runs_through_the_simulator_and_is_judged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    setup = Setup.load(work, None, env={"PATH": "/usr/bin:/bin"}, backend="offline",
                       progress=lambda _line: None)
    steps = _shown(setup, None)
    labels = [label for label, _ in steps]
    assert labels == ["backends", "models", "task", "answer", "judge"]
    assert dict(steps)["backends"] == "answer offline, propose offline, judge offline"
    assert "(val, " in dict(steps)["task"]
    assert dict(steps)["judge"].startswith("hard ")


def test_a_task_id_the_skill_lacks_is_refused_before_any_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = example_repo(tmp_path, monkeypatch)
    setup = Setup.load(work, None, env={"PATH": "/usr/bin:/bin"}, backend="offline",
                       progress=lambda _line: None)
    with pytest.raises(UsageError, match="has no task 'nope'"):
        _shown(setup, "nope")
