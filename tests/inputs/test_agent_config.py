"""`backend: command`: the `agent:` section, presets, routing, doctor and a whole epoch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend
from gitsleep.backends.presets import PRESETS
from gitsleep.backends.select import RoutedBackend
from gitsleep.base.errors import UsageError
from gitsleep.flows.prepare import backend_for
from gitsleep.inputs.config import load_config
from tests.support.cli import run_cli
from tests.support.fake_agents import install

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
SKILLS = """\
skills:
  - name: brief-writer
    skill: skills/brief-writer/SKILL.md
    tasks:
      - path: evals/brief-writer/tasks.jsonl
        split: auto
      - path: evals/brief-writer/held-out.jsonl
        split: test
"""


def write(tmp_path: Path, head: str) -> Path:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(head + SKILLS, encoding="utf-8")
    return path


def error_of(tmp_path: Path, head: str) -> str:
    with pytest.raises(UsageError) as info:
        load_config(write(tmp_path, head))
    message = str(info.value)
    assert "\n" not in message and ".gitsleep.yml" in message
    return message


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_preset_fills_a_runnable_agent(tmp_path: Path, preset: str) -> None:
    head = f"backend: command\noptimizer_model: m\nagent: {preset}\n"
    config = load_config(write(tmp_path, head))
    spec = config.agent_spec("brief-writer")
    assert spec.command[0] == preset and spec.label == preset
    assert spec.prompt in ("stdin", "arg", "option:--prompt", "option:--message")
    assert spec.install.endswith(".md")
    assert "{skill}" not in spec.install
    assert config.models() == (preset, "m", "m")
    assert config.backends() == ("command", "openai", "openai")


def test_claude_installs_the_skill_under_its_name_and_model_goes_by_the_flag(
    tmp_path: Path,
) -> None:
    config = load_config(write(tmp_path, "backend: command\nmodel: sonnet\n"
                                         "agent: {preset: claude}\n"))
    spec = config.agent_spec("brief-writer")
    assert spec.install == ".claude/skills/brief-writer/SKILL.md"
    assert spec.memory_install == "CLAUDE.md"
    assert spec.command == ("claude", "--model", "sonnet", "-p", "--output-format", "stream-json",
                            "--verbose")
    codex = load_config(write(tmp_path, "backend: command\nmodel: gpt-5\nagent: codex\n"))
    command = codex.agent_spec("x").command
    assert command[:4] == ("codex", "exec", "-m", "gpt-5") and command[-1] == "-"
    assert codex.models() == ("gpt-5", "gpt-5", "gpt-5")  # the optimizer defaults to model


def test_keys_written_under_agent_win_over_the_preset(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "backend: command\noptimizer_backend: command\n"
                                         "agent: {preset: llm, install: SYSTEM.md, timeout: 9}\n"))
    spec = config.agent_spec("x")
    assert spec.install == "SYSTEM.md" and spec.timeout == 9
    assert config.models() == ("llm", "llm", "llm")


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ("backend: command\n", "no `agent:` section"),
        ("backend: command\nagent: {command: codex exec -}\n", "agent.command: must be a list"),
        ("backend: command\nagent: {command: []}\n", "agent.command: must be a non-empty list"),
        ("backend: command\nagent: cursor\n", "agent.preset: must be 'codex'"),
        ("backend: command\nagent: {prompt: stdin}\n", "set `command`"),
        ("backend: command\nagent: {preset: llm, answer: 'file:../x'}\n", "agent.answer: must be"),
        ("backend: command\nagent: {preset: llm, install: /etc/AGENTS.md}\n",
         "agent.install: must be a relative path"),
        ("backend: command\nagent: {preset: llm, env: {OPENAI_API_KEY: hunter2hunter2}}\n",
         "never write a secret here"),
        ("backend: command\nagent: {preset: llm, tiemout: 3}\n", "did you mean 'timeout'"),
        ("backend: command\noptimizer_backend: codex\nagent: codex\n",
         "optimizer_backend: must be 'openai'"),
    ],
)
def test_bad_agent_config_is_one_line(tmp_path: Path, head: str, expected: str) -> None:
    assert expected in error_of(tmp_path, head)


def test_no_optimizer_model_for_an_openai_optimizer_is_a_usage_error(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "backend: command\nagent: codex\n"))
    with pytest.raises(UsageError, match="needs `optimizer_model:`"):
        config.models()


def test_routing_sends_answers_to_the_agent_and_the_rest_to_the_optimizer(
    tmp_path: Path,
) -> None:
    config = load_config(write(tmp_path, "backend: command\noptimizer_backend: offline\n"
                                         "agent: {command: [my-agent], env: {TOKEN_X: $MY_T}}\n"))
    with pytest.raises(UsageError, match=r"agent.env.TOKEN_X names \$MY_T, which is not set"):
        backend_for(config, {}, "brief-writer")
    routed = backend_for(config, {"MY_T": "secret-value-123"}, "brief-writer")
    assert isinstance(routed, RoutedBackend) and routed.name == "command+offline"
    agent = routed.by_purpose["answer"]
    assert isinstance(agent, AgentCliBackend)
    assert agent.env["TOKEN_X"] == "secret-value-123"
    assert routed.by_purpose["propose"] is routed.by_purpose["judge"]
    assert routed.by_purpose["propose"].name == "offline"


def project(tmp_path: Path, agent_line: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    config = (EXAMPLE / ".gitsleep.yml").read_text(encoding="utf-8")
    config = config.replace("backend: offline            # the deterministic simulator: "
                            "no key, no network", "backend: command\noptimizer_backend: offline\n"
                            + agent_line)
    (repo / ".gitsleep.yml").write_text(config, encoding="utf-8")
    return repo


def test_doctor_shows_what_the_agent_saw(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    program = install("good", tmp_path)
    repo = project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 0, result.err
    out = result.out
    assert f"command: {program}" in out
    assert "version: good-agent 1.2.3" in out
    assert "installed documents: AGENTS.md" in out
    assert "workspace:" not in out and "changed files" not in out  # a text task
    assert "backends: answer command, propose offline, judge offline" in out
    assert "    rules: ---" in out  # the installed skill, read back by the agent
    assert "judge: hard " in out and "tokens: null" in out
    assert "exit: 0" in out and "time: " in out


def test_doctor_exits_3_with_one_line_on_a_fatal_sign(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    program = install("auth_fail", tmp_path)
    repo = project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 3
    last = result.err.strip().splitlines()[-1]
    assert last.startswith("gitsleep: error: agent auth_fail failed with a fatal sign")
    assert "fix: log the agent in again" in last


def test_doctor_with_a_bad_agent_config_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    repo = project(tmp_path, "agent: {command: not-a-list}")
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "brief-writer")
    assert result.code == 2 and "agent.command: must be a list" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_an_epoch_through_an_agent_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Answers by the agent program, edits by the simulator: the whole epoch runs."""
    program = install("good", tmp_path)
    repo = project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")
    out = tmp_path / "out"
    result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json",
                     "--output-dir", str(out))
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["decision"] != "aborted"
    diagnostics = json.loads((out / "diagnostics.json").read_text())
    cost = diagnostics["cost"]
    assert cost["wall_seconds"] > 0 and cost["unmetered_calls"] > 0
    assert diagnostics["backend"] == "command+offline"


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("{preset: llm, install: '.'}", "agent.install: must name a file"),
        ("{preset: llm, install: 'docs/'}", "agent.install: must name a file"),
        ("{preset: llm, install: './'}", "agent.install: must name a file"),
        ("{preset: llm, memory_install: ./AGENTS.md}",
         "agent.memory_install and agent.install are one file"),
        ("{preset: llm, install: a//b/../AGENTS.md, memory_install: a/AGENTS.md}",
         "agent.install: must be a relative path inside the agent's workspace"),
        ("{preset: llm, install: docs/x/AGENTS.md, memory_install: ./docs/./x/AGENTS.md}",
         "agent.memory_install and agent.install are one file"),
        ("{preset: llm, install: agents.md, memory_install: AGENTS.md}",
         "agent.memory_install and agent.install are one file"),
        ("{preset: llm, install: docs, memory_install: docs/MEMORY.md}",
         "agent.install is a folder of agent.memory_install"),
        ("{preset: llm, answer: 'file:./AGENTS.md'}",
         "agent.answer is the installed agent.install"),
        ("{preset: claude, memory_install: ./CLAUDE.md, answer: 'file:CLAUDE.md'}",
         "agent.answer is the installed agent.memory_install"),
    ],
)
def test_agent_paths_are_compared_normalised_and_refused_in_one_line(
    tmp_path: Path, agent: str, expected: str
) -> None:
    """`install: "."` was a traceback (IsADirectoryError on the first
    call); `./AGENTS.md` beside `AGENTS.md` passed and the memory overwrote the skill; an
    answer file that is an installed document would score the document as the answer."""
    message = error_of(tmp_path, f"backend: command\noptimizer_backend: offline\nagent: {agent}\n")
    assert expected in message, message
    assert message.startswith(f"{tmp_path / '.gitsleep.yml'}:")


def test_install_dot_exits_2_with_one_line_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = project(tmp_path, "agent: {preset: llm, install: '.'}\n")
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err.count("\n") == 1 and "agent.install: must name a file" in result.err


def test_eval_through_an_agent_needs_no_optimizer_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`eval` with `backend: command` demanded `optimizer_model:`,
    which eval never uses (no edit is proposed). Rule judges need no model at all."""
    program = install("good", tmp_path)
    repo = project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")
    config = (repo / ".gitsleep.yml").read_text(encoding="utf-8")
    (repo / ".gitsleep.yml").write_text(config.replace("optimizer_backend: offline\n", ""),
                                        encoding="utf-8")
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    assert rows[0]["split"] == "val" and rows[0]["n"] > 0 and rows[0]["errors"] == 0
    consolidate = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run")
    assert consolidate.code == 2 and "needs `optimizer_model:`" in consolidate.err


def test_eval_with_a_rubric_judge_still_needs_the_judge_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = install("good", tmp_path)
    repo = project(tmp_path, f"agent: {{command: [{json.dumps(str(program))}]}}")
    config = (repo / ".gitsleep.yml").read_text(encoding="utf-8")
    (repo / ".gitsleep.yml").write_text(config.replace("optimizer_backend: offline\n", ""),
                                        encoding="utf-8")
    tasks = repo / "evals" / "brief-writer" / "tasks.jsonl"
    rubric = {"id": "r1", "prompt": "Write a brief.", "split": "val",
              "judge": {"kind": "rubric", "rubric": "Is it brief?"}}
    tasks.write_text(tasks.read_text(encoding="utf-8") + json.dumps(rubric) + "\n",
                     encoding="utf-8")
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert result.code == 2 and "needs `judge_model:`" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_prompt_modes_and_the_presets_that_take_the_task_as_an_argument(tmp_path: Path) -> None:
    """Gemini's prompt is the value of `-p`, so `-p -- <task>` would not
    work; it gets `--prompt=<task>`. opencode joins what follows `--` into its message."""
    gemini = load_config(write(tmp_path, "backend: command\noptimizer_backend: offline\n"
                                         "model: gemini-2.5-pro\nagent: gemini\n"))
    spec = gemini.agent_spec("x")
    assert spec.command == ("gemini", "-m", "gemini-2.5-pro") and spec.prompt == "option:--prompt"
    opencode = load_config(write(tmp_path, "backend: command\noptimizer_backend: offline\n"
                                           "agent: opencode\n")).agent_spec("x")
    assert opencode.command == ("opencode", "run") and opencode.prompt == "arg"
    aider = "agent: {command: [aider, --yes], prompt: 'option:--message'}\n"
    mine = load_config(write(tmp_path, "backend: command\noptimizer_backend: offline\n" + aider))
    assert mine.agent_spec("x").prompt == "option:--message"
    for bad in ("'option:message'", "args", "'option:--a b'"):
        message = error_of(tmp_path, "backend: command\noptimizer_backend: offline\n"
                                     f"agent: {{command: [x], prompt: {bad}}}\n")
        assert "agent.prompt: must be stdin, arg (the task after `--`) or option:--NAME" in message


def test_pass_env_names_the_forge_tokens_an_agent_may_see(tmp_path: Path) -> None:
    """The forge token went to every agent process; now only by name."""
    head = "backend: command\noptimizer_backend: offline\n"
    env = {"GITHUB_TOKEN": "ghp_" + "a" * 36, "GH_TOKEN": "gho_" + "b" * 36, "HOME": "/h"}
    config = load_config(write(tmp_path, head + "agent: {command: [my-agent]}\n"))
    agent = backend_for(config, env, "brief-writer")
    assert isinstance(agent, RoutedBackend)
    command = agent.by_purpose["answer"]
    assert isinstance(command, AgentCliBackend)
    assert "GITHUB_TOKEN" not in command.env and "GH_TOKEN" not in command.env
    assert command.env["HOME"] == "/h"
    named = load_config(write(tmp_path, head + "agent: {command: [a], pass_env: [GH_TOKEN]}\n"))
    assert named.agent_spec("x").pass_env == ("GH_TOKEN",)
    routed = backend_for(named, env, "brief-writer")
    assert isinstance(routed, RoutedBackend)
    answer = routed.by_purpose["answer"]
    assert isinstance(answer, AgentCliBackend)
    assert answer.env["GH_TOKEN"] == env["GH_TOKEN"] and "GITHUB_TOKEN" not in answer.env
    message = error_of(tmp_path, head + "agent: {command: [a], pass_env: ['gho_abc def']}\n")
    assert "agent.pass_env: entry 1 is not an environment variable name" in message
    assert "gho_abc" not in message
