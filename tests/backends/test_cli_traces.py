"""Traces from agent CLIs: Claude Code's stream-json and Codex's exec --json read into
the trace trajectory checks judge, the CLI's tool names mapped to the declared ones.
Real processes: fake CLIs that print what the real ones print."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
from gitsleep.backends.cli_traces import claude_stream, codex_json
from gitsleep.backends.presets import PRESETS
from gitsleep.base.errors import UsageError
from gitsleep.core import replay
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Check, EpochSettings, Judge, Task
from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.gitrepo import isolate_git, make_repo

TASK = Task("t1", "Should we move to seat pricing?", "val",
            Judge("rule", (Check("tool_called", "search"),)))
SETTINGS = EpochSettings(model="agent", optimizer_model="m", judge_model="m")


def backend(tmp_path: Path, style: str, **spec: object) -> AgentCliBackend:
    program = install("tool_caller", tmp_path)
    base = AgentSpec(command=(str(program),), timeout=20.0, kill_grace=0.5, retries=0,
                     trace=style)
    env = {**os.environ, "FAKE_AGENT_TRACE": style,
           "FAKE_AGENT_ANSWER_FILE": ".gitsleep-answer.md"}
    return AgentCliBackend(replace(base, **spec), env=env)


def scored(agent: AgentCliBackend, skill: str) -> tuple[float | None, list[str]]:
    result = replay.score_split(CallRunner(agent), [TASK], {"skill": skill}, SETTINGS,
                                label="t", split="val")
    sample = result.tasks[0].samples[0]
    return result.mean, [c.name for c in sample.trace or ()]


def test_claude_stream_json_is_read_into_the_trace_and_grep_is_search(tmp_path: Path) -> None:
    agent = backend(tmp_path, "claude", tool_names=(("Grep", "search"),))
    assert scored(agent, "Search the notes first.") == (1.0, ["search"])
    assert scored(agent, "Answer from memory.") == (0.0, [])
    answer = agent.complete(replay.answer_call({"skill": "Search."}, TASK, "agent", 0))
    assert answer.text == "Answer to: Should we move to seat pricing?"  # the result line
    assert (answer.prompt_tokens, answer.completion_tokens) == (12, 4)
    [call] = answer.trace or ()
    assert (call.arguments, call.result) == ('{"path":".","pattern":"pricing"}',
                                             "notes/pricing.md:1:# Pricing")


def test_codex_exec_json_is_read_into_the_trace(tmp_path: Path) -> None:
    agent = backend(tmp_path, "codex", answer="file:.gitsleep-answer.md",
                    tool_names=(("command_execution", "search"),))
    assert scored(agent, "Search before answering.") == (1.0, ["search"])
    (tmp_path / "u").mkdir()
    unmapped = backend(tmp_path / "u", "codex", answer="file:.gitsleep-answer.md")
    assert scored(unmapped, "Search.") == (0.0, ["command_execution"])


def test_a_cli_that_gives_no_trace_is_refused_never_scored_zero(tmp_path: Path) -> None:
    agent = backend(tmp_path, "")
    assert not agent.traces
    with pytest.raises(UsageError, match="command backend gave no tool trace"):
        scored(agent, "Search.")


def test_the_presets_that_give_traces() -> None:
    assert {name for name, p in PRESETS.items() if p.get("trace")} == {"claude", "codex"}
    assert PRESETS["claude"]["command"][-3:] == ["--output-format", "stream-json", "--verbose"]


def test_readers_skip_what_they_do_not_know() -> None:
    stream = b"\n".join([
        b"not json", b'{"type":"stream_event"}', b"[1,2]",
        json.dumps({"type": "assistant", "message": {"content": [
            {"type": "tool_use", "id": "a", "name": "Read", "input": {"file_path": "x"}}]}}
                   ).encode(),
        json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "a", "is_error": True,
             "content": "File does not exist."}]}}).encode()])
    trace, answer = claude_stream(stream)
    assert answer is None and [(c.name, c.error) for c in trace] == [
        ("Read", "File does not exist.")]
    events = b"\n".join(json.dumps(e).encode() for e in [
        {"type": "item.started", "item": {"type": "command_execution", "command": "ls"}},
        {"type": "item.completed", "item": {"type": "command_execution", "command": "false",
                                            "aggregated_output": "", "exit_code": 1}},
        {"type": "item.completed", "item": {"type": "mcp_tool_call", "server": "s",
                                            "tool": "lookup", "arguments": {"q": 1},
                                            "result": {"content": []}}},
        {"type": "item.completed", "item": {"type": "reasoning", "text": "hm"}}])
    assert [(c.name, c.error) for c in codex_json(events)] == [
        ("command_execution", "exit 1"), ("lookup", None)]


def test_validate_says_when_the_agent_cli_gives_no_trace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    line = json.dumps({"task_id": "a", "task": "Q?", "split": "val",
                       "judge": {"kind": "rule", "checks": [{"op": "tool_called",
                                                             "arg": "search"}]}})
    config = ("version: 1\nbackend: command\nagent: {preset: gemini}\nskills:\n"
              "  - name: quick\n    skill: SKILL.md\n    tasks: [t.jsonl]\n")
    repo, _ = make_repo(tmp_path, {".gitsleep.yml": config, "t.jsonl": line + "\n",
                                   "SKILL.md": "---\nname: quick\ndescription: Q.\n---\n# Q\n"})
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert done.code == 1 and "GS162" in done.out and "does not report them" in done.out
