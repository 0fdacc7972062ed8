"""`gitsleep review` from the outside: the Action's `review` mode, the example workflow and
`init` offering it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitsleep.base import bundled
from gitsleep.base.errors import EXIT_REGRESSION
from tests.support.cli import run_cli
from tests.test_action import ACTION, STUB, action_step, read_outputs

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "workflows" / "gitsleep-review.yml"


# -- the Action's review mode ---------------------------------------------------------------


def run_step(tmp_path: Path, env_inputs: dict[str, str], stub_exit: str = "0"
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, work, runner = tmp_path / "bin", tmp_path / "work", tmp_path / "runner"
    for folder in (bin_dir, work, runner):
        folder.mkdir()
    stub = STUB.replace('skill="${*: -1}"',
                        'case " $* " in *" review "*) exit "${STUB_REVIEW_EXIT:-0}" ;; esac\n'
                        'skill="${*: -1}"')
    (bin_dir / "gitsleep").write_text(stub)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for name in ("gitsleep", "python"):
        (bin_dir / name).chmod(0o755)
    script = tmp_path / "step.sh"
    script.write_text(action_step("consolidate")["run"])
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path),
           "GITSLEEP_BIN": str(bin_dir), "RUNNER_TEMP": str(runner),
           "GITHUB_OUTPUT": str(tmp_path / "github_output"), "STUB_LOG": str(tmp_path / "log"),
           "STUB_REVIEW_EXIT": stub_exit, "GITSLEEP_ACTION_SKILL": "all",
           "GITSLEEP_ACTION_CONFIG": ".gitsleep.yml", "GITSLEEP_ACTION_BASE": "",
           "GITSLEEP_ACTION_MODEL": "", "GITSLEEP_ACTION_BACKEND": "",
           "GITSLEEP_ACTION_DRY_RUN": "false", "GITSLEEP_ACTION_API_KEY": "",
           "GITHUB_TOKEN": "ghs_token", **env_inputs}
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=60)
    return done, tmp_path


def args_logged(root: Path) -> list[str]:
    log = root / "log"
    return [line for line in log.read_text().splitlines() if line.startswith("ARGS")] \
        if log.exists() else []


def test_action_mode_input_defaults_to_consolidate_and_passes_through_env():
    action = yaml.safe_load(ACTION.read_text())
    assert action["inputs"]["mode"]["default"] == "consolidate"
    step = action_step("consolidate")
    assert step["env"]["GITSLEEP_ACTION_MODE"] == "${{ inputs.mode }}"
    assert step["env"]["GITSLEEP_PR_BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert "inputs.mode != 'review'" in action_step("outputs")["if"]


def test_review_mode_runs_one_review_against_the_pull_requests_base(tmp_path: Path):
    done, root = run_step(tmp_path, {"GITSLEEP_ACTION_MODE": "review",
                                     "GITSLEEP_PR_BASE_SHA": "b" * 40}, stub_exit="7")
    assert done.returncode == EXIT_REGRESSION, done.stderr
    assert args_logged(root) == [
        f"ARGS --config .gitsleep.yml review --base {'b' * 40} --comment"]
    assert read_outputs(root / "github_output") == {"exit-code": "7"}


def test_review_mode_passes_named_skills_and_the_base_input(tmp_path: Path):
    done, root = run_step(tmp_path, {"GITSLEEP_ACTION_MODE": "review",
                                     "GITSLEEP_ACTION_BASE": "origin/main",
                                     "GITSLEEP_ACTION_SKILL": "notes, other",
                                     "GITSLEEP_ACTION_MODEL": "m1"})
    assert done.returncode == 0, done.stderr
    assert args_logged(root) == ["ARGS --config .gitsleep.yml review --base origin/main "
                                 "--comment --model m1 --skill notes --skill other"]


@pytest.mark.parametrize("inputs", [{"GITSLEEP_ACTION_MODE": "review"},
                                    {"GITSLEEP_ACTION_MODE": "reveiw"}])
def test_review_mode_without_a_base_or_a_wrong_mode_is_exit_2(tmp_path: Path,
                                                               inputs: dict[str, str]):
    done, root = run_step(tmp_path, inputs)
    assert done.returncode == 2
    assert "::error title=gitsleep::" in done.stdout
    assert args_logged(root) == []


# -- the example workflow and init ----------------------------------------------------------


def test_example_review_workflow_runs_on_pull_requests_with_least_privilege():
    workflow = yaml.safe_load(EXAMPLE.read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"pull_request"}
    assert {".gitsleep.yml", "skills/**", "evals/**"} <= set(triggers["pull_request"]["paths"])
    assert workflow["permissions"] == {}
    job = workflow["jobs"]["review"]
    assert job["permissions"] == {"contents": "read", "pull-requests": "write"}
    checkout, _cache, step = job["steps"]
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False}
    assert step["uses"].startswith("OWNER/gitsleep@")
    assert step["with"]["mode"] == "review"
    assert "pull_request_target" not in EXAMPLE.read_text()


def test_init_offers_the_review_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    if not (bundled.examples_dir() / "workflows" / "gitsleep-review.yml").is_file():
        pytest.skip("the bundled examples are not in this install")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # init refuses elsewhere
    result = run_cli(capsys, "--repo", str(tmp_path), "init")
    assert result.code == 0, result.err
    assert ".github/workflows/gitsleep-review.yml: created" in result.out
    written = (tmp_path / ".github/workflows/gitsleep-review.yml").read_text()
    assert "mode: review" in written and "pull_request:" in written
