"""The composite action, the CI workflow and the example workflow.

Schemas and security: check-jsonschema's vendored GitHub schemas and `zizmor --offline`,
both fully offline. Behaviour: the action's bash step runs for real (as the runner runs
it) with a stub `gitsleep` on its bin path, and the outputs/summary helper runs on sample
`consolidate --json` results with fake $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitsleep.report.action_outputs import github_output_lines, outputs_for, summary_markdown

pytestmark = pytest.mark.slow  # zizmor and check-jsonschema over the Action

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
CI = ROOT / ".github" / "workflows" / "ci.yml"
EXAMPLE = ROOT / "examples" / "workflows" / "gitsleep-nightly.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted(
    (ROOT / "examples" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent
SHA_PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
SPEC_INPUTS = {"skill", "config", "base", "model", "backend", "api-key", "github-token",
               "dry-run", "python-version", "mode"}  # mode: third round (review)
SPEC_OUTPUTS = {"decision", "val-baseline", "val-candidate", "test-baseline",
                "test-candidate", "pr-operation", "pr-number", "pr-url", "commit"}

SAMPLE = {
    "skill": "brief-writer",
    "decision": "accepted",
    "reason": "held-out improved 0.000 -> 1.000 | 2 edits applied",
    "metric": "mixed",
    "val": {"baseline": 0.25, "candidate": 0.9166666666666666, "n": 6},
    "test": {"baseline": 0.0, "candidate": 1.0, "n": 6},
    "edits": {"applied": [], "rejected": [], "unmatched": []},
    "branch": "gitsleep/brief-writer",
    "commit": "0123456789abcdef0123456789abcdef01234567",
    "pr": {"operation": "created", "number": 7,
           "url": "https://github.com/octo/skills/pull/7"},
    "cost": {"calls": 41, "cache_hits": 12, "prompt_tokens": 0, "completion_tokens": 0},
    "diagnostics": ".gitsleep/runs/brief-writer-20261122T030000Z/diagnostics.json",
}


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def tool(name: str) -> str:
    found = shutil.which(name, path=str(BIN)) or shutil.which(name)
    assert found, f"{name} is a test dependency: pip install -e '.[test]'"
    return found


def action_step(step_id: str) -> dict[str, Any]:
    steps = load(ACTION)["runs"]["steps"]
    return next(step for step in steps if step.get("id") == step_id)


def read_outputs(path: Path) -> dict[str, str]:
    """Parse a $GITHUB_OUTPUT file, including `name<<DELIM` blocks."""
    outputs: dict[str, str] = {}
    lines = iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        if "<<" in line and "=" not in line.split("<<", 1)[0]:
            name, delimiter = line.split("<<", 1)
            block = []
            for inner in lines:
                if inner == delimiter:
                    break
                block.append(inner)
            outputs[name] = "\n".join(block)
        else:
            name, value = line.split("=", 1)
            outputs[name] = value
    return outputs


# --- schemas and audits ----------------------------------------------------------------------


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "NO_COLOR": "1"})


def test_workflows_match_githubs_schema():
    assert len(WORKFLOWS) >= 2
    result = run_tool(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                      *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_action_matches_githubs_schema():
    result = run_tool(tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions",
                      str(ACTION))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing():
    result = run_tool(tool("zizmor"), "--offline", "--no-progress", "--format", "json",
                      str(ACTION), *map(str, WORKFLOWS))
    findings = json.loads(result.stdout or "[]")
    assert result.returncode == 0 and findings == [], result.stdout + result.stderr


# --- the action's contract ---------------------------------------------------------------


def test_action_inputs_and_outputs_follow_the_interface():
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == SPEC_INPUTS
    assert action["inputs"]["github-token"]["default"] == "${{ github.token }}"
    assert action["inputs"]["config"]["default"] == ".gitsleep.yml"
    assert action["inputs"]["dry-run"]["default"] == "false"
    assert action["inputs"]["python-version"]["default"] == "3.12"
    assert set(action["outputs"]) >= SPEC_OUTPUTS
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.outputs.outputs.{name} }}}}"


def test_action_never_expands_templates_inside_scripts():
    steps = load(ACTION)["runs"]["steps"]
    scripts = [step["run"] for step in steps if "run" in step]
    assert len(scripts) == 3
    for script in scripts:
        assert "${{" not in script
    consolidate_env = action_step("consolidate")["env"]
    for name in ("skill", "config", "base", "model", "backend", "dry-run", "api-key",
                 "github-token"):
        assert f"${{{{ inputs.{name} }}}}" in consolidate_env.values(), name


def test_action_keeps_the_users_python_untouched():
    setup = action_step("python")
    assert SHA_PINNED.match(setup["uses"]), setup["uses"]
    assert setup["with"]["update-environment"] is False
    assert "${{ github.action_path }}" in action_step("install")["env"].values()


def test_every_third_party_action_is_pinned_by_sha():
    checked = 0
    for path in [*WORKFLOWS, ACTION]:
        text = path.read_text(encoding="utf-8")
        for ref in re.findall(r"^\s*(?:- )?uses:\s*([^\s#]+)", text, flags=re.MULTILINE):
            checked += 1
            if ref.startswith("OWNER/gitsleep@"):  # the example's documented placeholder
                continue
            assert SHA_PINNED.match(ref), f"{path.name}: {ref}"
    assert checked >= 8


def test_ci_runs_the_test_command_on_every_supported_python():
    ci = load(CI)
    test_job = ci["jobs"]["test"]
    assert test_job["strategy"]["matrix"]["python-version"] == ["3.10", "3.11", "3.12", "3.13"]
    commands = " ".join(step.get("run", "") for step in test_job["steps"])
    assert ("python -m venv .venv && .venv/bin/pip install -e '.[test]' && "
            ".venv/bin/python -m pytest -q") in commands
    lint = " ".join(step.get("run", "") for step in ci["jobs"]["lint"]["steps"])
    for check in ("ruff check", "vendor.github-workflows", "vendor.github-actions",
                  "zizmor --offline"):
        assert check in lint
    assert ci["permissions"] == {}


def test_example_workflow_shape():
    example = load(EXAMPLE)
    triggers = example[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"schedule", "workflow_dispatch"}
    assert example["permissions"] == {}
    plan, job = example["jobs"]["plan"], example["jobs"]["consolidate"]
    assert "gitsleep plan --json" in plan["steps"][-1]["run"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    assert job["strategy"] == {"fail-fast": False,
                               "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    assert job["concurrency"] == {"group": "gitsleep-${{ matrix.skill }}",
                                  "cancel-in-progress": False}
    checkout, cache, gitsleep = job["steps"]
    assert checkout["with"]["fetch-depth"] == 0
    assert cache["with"]["path"] == ".gitsleep/cache"
    assert "${{ matrix.skill }}" in cache["with"]["key"] and "hashFiles(" in cache["with"]["key"]
    assert cache["with"]["restore-keys"].strip() == "gitsleep-${{ matrix.skill }}-"
    assert gitsleep["uses"] == "OWNER/gitsleep@COMMIT_SHA"  # init fills both in
    assert gitsleep["with"]["skill"] == "${{ matrix.skill }}"
    assert "pull_request_target" not in EXAMPLE.read_text(encoding="utf-8")


# --- the outputs and summary helper ---------------------------------------------------------


def publish(tmp_path: Path, results: list[Any] | None, exit_code: str = "0",
            raw: str | None = None) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    results_dir = tmp_path / "results"
    results_dir.mkdir(exist_ok=True)
    if raw is not None:
        (results_dir / "001.json").write_text(raw, encoding="utf-8")
    for index, result in enumerate(results or [], start=1):
        (results_dir / f"{index:03d}.json").write_text(json.dumps(result, indent=2))
    output, summary = tmp_path / "github_output", tmp_path / "step_summary"
    output.write_text("earlier=step\n")  # the runner's files are shared: append only
    env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary)}
    completed = subprocess.run(
        [sys.executable, "-m", "gitsleep.report.action_outputs", "publish", "--results",
         str(results_dir), "--exit-code", exit_code],
        capture_output=True, text=True, env=env, timeout=60)
    return completed, output, summary


def test_publish_writes_outputs_and_a_summary_table(tmp_path: Path):
    completed, output, summary = publish(tmp_path, [SAMPLE])

    assert completed.returncode == 0, completed.stderr
    outputs = read_outputs(output)
    assert outputs["earlier"] == "step"
    assert {name: outputs[name] for name in SPEC_OUTPUTS} == {
        "decision": "accepted",
        "val-baseline": "0.25", "val-candidate": "0.917",
        "test-baseline": "0.0", "test-candidate": "1.0",
        "pr-operation": "created", "pr-number": "7",
        "pr-url": "https://github.com/octo/skills/pull/7",
        "commit": "0123456789abcdef0123456789abcdef01234567",
    }
    assert json.loads(outputs["results"]) == [{**SAMPLE, "val": {**SAMPLE["val"],
                                                                 "candidate": 0.917}}]
    table = summary.read_text(encoding="utf-8").splitlines()
    assert "| Skill | Decision | Validation | Held-out | Pull request | Commit |" in table
    assert ("| brief-writer | accepted | 0.250 → 0.917 (n=6) | 0.000 → 1.000 (n=6) "
            "| created [#7](https://github.com/octo/skills/pull/7) | `0123456789ab` |") in table
    # The pipe in the reason is escaped so it cannot break the table.
    assert "- **brief-writer**: held-out improved 0.000 -> 1.000 \\| 2 edits applied" in table


def test_publish_with_several_skills_and_a_failure(tmp_path: Path):
    second = {**SAMPLE, "skill": "triage", "decision": "rejected", "commit": None,
              "reason": "val <b>did not</b> improve",
              "test": {"baseline": None, "candidate": None, "n": 0},
              "pr": {"operation": "closed", "number": 3, "url": "javascript:alert(1)"}}
    completed, output, summary = publish(tmp_path, [SAMPLE, second], exit_code="4")

    assert completed.returncode == 0  # consolidate's own step already failed with 4
    outputs = read_outputs(output)
    assert outputs["decision"] == "accepted"  # the first skill's values
    assert [item["skill"] for item in json.loads(outputs["results"])] == ["brief-writer",
                                                                          "triage"]
    text = summary.read_text(encoding="utf-8")
    assert "exit code 4" in text and "git or forge failure" in text
    assert "| triage | rejected | 0.250 → 0.917 (n=6) | no tasks | closed #3 | — |" in text
    assert "&lt;b>did not&lt;/b>" in text and "javascript:" not in text


def test_publish_without_results_still_explains_the_failure(tmp_path: Path):
    completed, output, summary = publish(tmp_path, None, exit_code="3")

    assert completed.returncode == 0
    assert read_outputs(output)["decision"] == ""
    text = summary.read_text(encoding="utf-8")
    assert "exit code 3" in text and "model backend failure" in text
    assert "No skill produced a result." in text


def test_publish_fails_on_unreadable_results_after_a_success(tmp_path: Path):
    completed, _output, summary = publish(tmp_path, None, exit_code="0", raw="{not json")

    assert completed.returncode == 1
    assert "::error" in completed.stdout and "001.json" in completed.stdout
    assert "Could not read the results" in summary.read_text(encoding="utf-8")


def test_multiline_output_values_use_a_delimiter():
    text = github_output_lines({"one": "a", "two": "b\nc"})
    assert text.startswith("one=a\ntwo<<gitsleep_")
    assert text.rstrip("\n").endswith(text.splitlines()[1].split("<<", 1)[1])
    assert outputs_for([])["decision"] == "" and "No skill" in summary_markdown([], 0)


# --- the action's bash step, run as the runner runs it ---------------------------------------

STUB = r"""#!/usr/bin/env bash
{ printf 'ARGS %s\n' "$*"
  printf 'ENV key=%s token=%s author=%s\n' "${MY_KEY:-}" "${GITHUB_TOKEN:-}" "${GIT_AUTHOR_NAME:-}"
} >> "$STUB_LOG"
case " $* " in
  *" plan "*)
    if [ -n "${STUB_PLAN_EXIT:-}" ]; then
      echo "gitsleep: error: bad config" >&2; exit "$STUB_PLAN_EXIT"
    fi
    echo '{"include": [{"skill": "alpha"}, {"skill": "beta"}]}'; exit 0 ;;
esac
skill="${*: -1}"
cat <<JSON
{"skill": "$skill", "decision": "accepted", "reason": "r", "commit": "abc",
 "val": {"baseline": 0.5, "candidate": 0.75, "n": 4},
 "test": {"baseline": 0.5, "candidate": 1.0, "n": 2},
 "pr": {"operation": "created", "number": 1, "url": "https://github.com/o/r/pull/1"}}
JSON
if [ "$skill" = "${STUB_FAIL_SKILL:-}" ]; then echo "gitsleep: error: push rejected" >&2; exit 4; fi
if [ "$skill" = "${STUB_BAD_SKILL:-}" ]; then echo "gitsleep: error: bad task" >&2; exit 2; fi
"""


def run_consolidate_step(tmp_path: Path, inputs: dict[str, str], fail_skill: str = "",
                         plan_exit: str = "", bad_skill: str = "", head_config: str = "",
                         ) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir, work, runner_temp = tmp_path / "bin", tmp_path / "work", tmp_path / "runner"
    for folder in (bin_dir, work, runner_temp):
        folder.mkdir()
    (bin_dir / "gitsleep").write_text(STUB)
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for name in ("gitsleep", "python"):
        (bin_dir / name).chmod(0o755)
    (work / ".gitsleep.yml").write_text(
        "version: 1\napi_key_env: MY_KEY\nskills:\n  - name: alpha\n"
        "    skill: skills/alpha/SKILL.md\n    tasks:\n      - path: evals/alpha.jsonl\n")
    if head_config:  # the committed config is the base; the checkout's the head's
        quiet = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        for command in (["init", "-q", "-b", "main"], ["add", "-A"],
                        ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "base"]):
            subprocess.run(["git", *command], cwd=work, env=quiet, check=True, timeout=60)
        (work / ".gitsleep.yml").write_text(head_config)
    script = tmp_path / "consolidate.sh"
    script.write_text(action_step("consolidate")["run"])
    env_names = {
        "GITSLEEP_ACTION_SKILL": "skill", "GITSLEEP_ACTION_CONFIG": "config",
        "GITSLEEP_ACTION_BASE": "base", "GITSLEEP_ACTION_MODEL": "model",
        "GITSLEEP_ACTION_BACKEND": "backend", "GITSLEEP_ACTION_DRY_RUN": "dry-run",
        "GITSLEEP_ACTION_API_KEY": "api-key", "GITHUB_TOKEN": "github-token",
        "GITSLEEP_ACTION_MODE": "mode",
    }
    defaults = {"skill": "all", "config": ".gitsleep.yml", "dry-run": "false"}
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CEILING_DIRECTORIES": str(tmp_path),
        "GITSLEEP_BIN": str(bin_dir), "RUNNER_TEMP": str(runner_temp),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"), "STUB_LOG": str(tmp_path / "log"),
        "STUB_FAIL_SKILL": fail_skill, "STUB_PLAN_EXIT": plan_exit, "STUB_BAD_SKILL": bad_skill,
    }
    for variable, name in env_names.items():
        env[variable] = inputs.get(name, defaults.get(name, ""))
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],  # as the runner
        cwd=work, env=env, capture_output=True, text=True, timeout=60)
    return completed, tmp_path


def test_consolidate_step_runs_each_skill_in_a_group(tmp_path: Path):
    secret = "sk-test-0123456789abcdefghij"
    completed, root = run_consolidate_step(
        tmp_path,
        {"base": "main", "model": "m1", "dry-run": "true", "api-key": secret,
         "github-token": "ghs_token"},
        fail_skill="beta")

    assert completed.returncode == 4, completed.stderr
    log = (root / "log").read_text().splitlines()
    assert log[0] == "ARGS --config .gitsleep.yml plan --json"
    consolidate_calls = [line for line in log if "consolidate" in line]
    assert consolidate_calls == [
        f"ARGS --config .gitsleep.yml consolidate --json --base main --model m1 --dry-run "
        f"--skill {skill}" for skill in ("alpha", "beta")]
    # The key reaches gitsleep in the variable named by api_key_env, and is masked.
    assert f"ENV key={secret} token=ghs_token author=github-actions[bot]" in log
    assert f"::add-mask::{secret}" in completed.stdout
    assert "::group::gitsleep consolidate --skill alpha" in completed.stdout
    assert completed.stdout.count("::endgroup::") == 2
    assert "::error title=gitsleep::consolidate --skill beta exited with 4" in completed.stdout
    assert read_outputs(root / "github_output") == {"exit-code": "4"}
    saved = sorted((root / "runner" / "gitsleep-results").iterdir())
    assert [json.loads(path.read_text())["skill"] for path in saved] == ["alpha", "beta"]

    # The next step publishes the outputs from what this one saved.
    env = {**os.environ, "GITHUB_OUTPUT": str(root / "outputs"),
           "GITHUB_STEP_SUMMARY": str(root / "summary")}
    subprocess.run([sys.executable, "-m", "gitsleep.report.action_outputs", "publish", "--results",
                    str(root / "runner" / "gitsleep-results"), "--exit-code", "4"],
                   check=True, env=env, timeout=60)
    outputs = read_outputs(root / "outputs")
    assert (outputs["decision"], outputs["test-candidate"], outputs["pr-number"]) == (
        "accepted", "1.0", "1")


def test_consolidate_step_exits_with_the_highest_code_like_the_cli(tmp_path: Path):
    # alpha fails first with 2, beta later with 4: the step exits 4, as `consolidate` would.
    completed, root = run_consolidate_step(tmp_path, {}, bad_skill="alpha", fail_skill="beta")

    assert completed.returncode == 4, completed.stderr
    assert read_outputs(root / "github_output") == {"exit-code": "4"}
    assert "--skill alpha exited with 2" in completed.stdout
    assert "--skill beta exited with 4" in completed.stdout


def test_summary_rounds_scores_marks_offline_rows_and_says_why_no_pull_request(
        tmp_path: Path):
    offline = {**SAMPLE, "val": {"baseline": 0.20000000000000004, "candidate": 0.6, "n": 4},
               "pr": {"operation": "none", "number": None, "url": None,
                      "reason": "held-out did not improve"},
               "simulated": True}
    completed, output, summary = publish(tmp_path, [offline])

    assert completed.returncode == 0, completed.stderr
    outputs = read_outputs(output)
    assert outputs["val-baseline"] == "0.2"
    assert json.loads(outputs["results"])[0]["val"]["baseline"] == 0.2
    text = summary.read_text(encoding="utf-8")
    assert "| brief-writer | accepted _(offline)_ | 0.200 → 0.600 (n=4) |" in text
    assert "offline simulator" in text
    assert "- **brief-writer**: no pull request: held-out did not improve" in text


def test_consolidate_step_with_named_skills_and_no_options(tmp_path: Path):
    completed, root = run_consolidate_step(tmp_path, {"skill": "beta, alpha"})

    assert completed.returncode == 0, completed.stderr
    log = (root / "log").read_text().splitlines()
    assert [line for line in log if line.startswith("ARGS")] == [
        "ARGS --config .gitsleep.yml consolidate --json --skill beta",
        "ARGS --config .gitsleep.yml consolidate --json --skill alpha"]
    assert "ENV key= token= author=github-actions[bot]" in log
    assert "::add-mask::" not in completed.stdout
    assert read_outputs(root / "github_output") == {"exit-code": "0"}


def test_consolidate_step_stops_with_plans_exit_code(tmp_path: Path):
    completed, root = run_consolidate_step(tmp_path, {"skill": " all "}, plan_exit="2")

    assert completed.returncode == 2
    assert "bad config" in completed.stderr
    assert [line for line in (root / "log").read_text().splitlines()
            if line.startswith("ARGS")] == ["ARGS --config .gitsleep.yml plan --json"]
    assert read_outputs(root / "github_output") == {"exit-code": "2"}
    assert list((root / "runner" / "gitsleep-results").iterdir()) == []


def test_review_mode_exports_the_key_under_the_bases_api_key_env(tmp_path: Path):
    """Before: the head's `.gitsleep.yml` named the variable, so a pull request could move
    the model key into a variable of its choosing."""
    secret = "sk-test-0123456789abcdefghij"
    head = "version: 1\napi_key_env: HEAD_KEY\nskills: []\n"
    completed, root = run_consolidate_step(
        tmp_path, {"mode": "review", "base": "main", "api-key": secret}, head_config=head)
    assert completed.returncode == 0, completed.stderr
    log = (root / "log").read_text().splitlines()
    assert log[0] == "ARGS --config .gitsleep.yml review --base main --comment"
    assert log[1].startswith(f"ENV key={secret} ")  # MY_KEY: the base's api_key_env


def test_api_key_env_at_a_base_without_the_config_is_the_default(tmp_path: Path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, timeout=60)
    (tmp_path / ".gitsleep.yml").write_text("version: 1\napi_key_env: HEAD_KEY\nskills: []\n")
    completed = subprocess.run(
        [sys.executable, "-m", "gitsleep.report.action_outputs", "api-key-env", "--config",
         ".gitsleep.yml", "--base", "no-such-ref"], cwd=tmp_path, capture_output=True,
        text=True, check=True, timeout=60)
    assert completed.stdout.strip() == "OPENAI_API_KEY"


@pytest.mark.parametrize("config_text", ["version: 1\napi_key_env: OTHER_KEY\nskills: []\n",
                                         ": not yaml ["])
def test_api_key_env_falls_back_on_a_broken_config(tmp_path: Path, config_text: str):
    config = tmp_path / "gitsleep.yml"
    config.write_text(config_text)
    completed = subprocess.run(
        [sys.executable, "-m", "gitsleep.report.action_outputs", "api-key-env", "--config",
         str(config)], capture_output=True, text=True, check=True, timeout=60)
    # An invalid config falls back to the default: consolidate reports the problem itself.
    assert completed.stdout.strip() == "OPENAI_API_KEY"


def test_publish_gives_each_agents_scores_as_an_output_and_a_summary_table(tmp_path: Path):
    """Several agents: the aggregate stays in the scalar outputs; `agents` holds
    each agent's scores and the summary has a row per agent. One agent: `agents` is []."""
    agent = {"name": "small", "model": "qwen0.5b", "backend": "openai",
             "val": {"baseline": 0.25, "candidate": 0.5000000001, "n": 3},
             "test": {"baseline": 0.0, "candidate": 1.0, "n": 2}}
    completed, output, summary = publish(tmp_path, [{**SAMPLE, "agents": [agent]}])
    assert completed.returncode == 0, completed.stderr
    outputs = read_outputs(output)
    assert outputs["val-candidate"] == "0.917"  # the aggregate
    assert json.loads(outputs["agents"]) == [{**agent, "val": {**agent["val"],
                                                               "candidate": 0.5}}]
    table = summary.read_text(encoding="utf-8").splitlines()
    assert "| Skill | Agent | Model | Validation | Held-out |" in table
    assert ("| brief-writer | small | qwen0.5b | 0.250 → 0.500 (n=3) | 0.000 → 1.000 (n=2) |"
            in table)

    (tmp_path / "one").mkdir()
    _, output, summary = publish(tmp_path / "one", [SAMPLE])
    assert read_outputs(output)["agents"] == "[]"
    assert "| Agent |" not in summary.read_text(encoding="utf-8")
