"""What the commands share: the skill meant without --skill, JSON on stdout, exit codes."""

from __future__ import annotations

import json

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.commands.common import exit_with, only_skill, print_json, worst_exit
from gitsleep.inputs.config import SkillConfig


def _skill(name: str) -> SkillConfig:
    return SkillConfig.model_validate({"name": name, "skill": "SKILL.md",
                                       "tasks": ["evals/t.jsonl"]})


def test_the_only_skill_is_meant_and_several_need_a_name() -> None:
    assert only_skill([_skill("a")]).name == "a"
    with pytest.raises(UsageError, match=r"--skill NAME is needed: the config has 2 skills "
                                         r"\(a, b\)"):
        only_skill([_skill("a"), _skill("b")])


def test_json_keeps_text_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"reason": "café -> ok"})
    out = capsys.readouterr().out
    assert "café" in out and json.loads(out) == {"reason": "café -> ok"}


def test_the_worst_exit_wins_and_zero_returns() -> None:
    assert worst_exit([0, 2, 3]) == 3 and worst_exit([]) == 0
    exit_with(0)
    with pytest.raises(SystemExit) as done:
        exit_with(7)
    assert done.value.code == 7
