"""Before any call, `consolidate --dry-run` says what measuring the noise may cost and
`validate` says which split is too small for any gain to be told from noise."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gitsleep.core import noise
from gitsleep.core.epoch import call_ceiling, noise_calls
from gitsleep.flows.prepare import read_inputs
from gitsleep.inputs.config import load_config
from tests.commands.test_validate import repo, run  # noqa: F401  (the fixture)
from tests.support.cli import run_cli
from tests.support.gitrepo import example_repo


def test_the_dry_run_states_the_noise_calls_inside_the_ceiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    work = example_repo(tmp_path, monkeypatch)[0]
    config_file = work / ".gitsleep.yml"
    config_file.write_text(config_file.read_text(encoding="utf-8") + "budget: {max_calls: 1}\n",
                           encoding="utf-8")
    skill = load_config(config_file).skill("brief-writer")
    tasks, _ = read_inputs(work, skill)
    val = sum(1 for t in tasks if t.split == "val")
    test = sum(1 for t in tasks if t.split == "test")
    said = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run").err
    found = re.search(r"brief-writer: noise: up to (\d+) of those calls measure the noise", said)
    assert found, said
    assert int(found[1]) == noise_calls(val, test) == 4 * val + 2 * test
    settings = load_config(config_file).epoch_settings(skill="brief-writer")
    assert f"ceiling {call_ceiling(settings, tasks, False)}" in said
    assert not noise.too_small_note({"val": val, "held-out": test})  # 6 and 6: large enough
    assert "too small for any gain" not in said


def test_validate_says_a_split_is_too_small_to_tell_a_gain_from_noise(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    code, _, err = run(capsys, repo, "validate")
    assert code == 0
    line = next(x for x in err.splitlines() if "fewer than 5 tasks" in x)
    assert ("val (1 task) and held-out (2 tasks) too small for any gain to be told from noise: "
            "with n tasks the sign test's best p is 2^-n, above 0.1 below 4 tasks") in line
    assert "0 error(s), 1 warning(s)" in err  # the same one line, counted once
