"""An agent may write in a workspace task's folder, and only there.

A preset gets the agent's own write mode (Codex `--sandbox workspace-write`, Claude Code
`--permission-mode acceptEdits`, Gemini `--approval-mode auto_edit`) for a task with a
workspace; a text task keeps today's read-only argv, word for word."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec, agent_argv
from gitsleep.backends.presets import PRESETS, WRITE_MODES
from gitsleep.core.ports import ModelCall
from gitsleep.git_forge.task_trees import WorkspaceCache, tree_id
from gitsleep.inputs.config import load_config
from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.gitrepo import isolate_git, make_repo

SKILLS = """\
skills:
  - name: notes
    skill: SKILL.md
    tasks: [evals/tasks.jsonl]
"""
AIDER_FLAGS = ("aider", "--yes-always", "--no-git", "--no-auto-commits", "--no-check-update",
               "--no-show-release-notes", "--no-analytics", "--no-show-model-warnings",
               "--no-pretty", "--no-stream", "--map-tokens", "0", "--no-detect-urls",
               "--disable-playwright", "--no-suggest-shell-commands", "--no-auto-lint",
               "--chat-history-file", os.devnull, "--input-history-file", os.devnull,
               "--read", "AGENTS.md")
# today's read-only argv of each preset (what text tasks must keep)
TEXT_ARGV = {
    "codex": ("codex", "exec", "--skip-git-repo-check", "--color", "never", "--sandbox",
              "read-only", "--json", "-o", ".gitsleep-answer.md", "-"),
    "claude": ("claude", "-p", "--output-format", "stream-json", "--verbose"),
    "gemini": ("gemini",),
    "opencode": ("opencode", "run"),
    "llm": ("llm", "prompt", "--no-stream", "--no-log", "-u", "--sf", "AGENTS.md"),
    "aider": (*AIDER_FLAGS, "--dry-run"),
}
# exactly what a workspace task changes, per preset
WRITE_ARGV = {
    "codex": ("codex", "exec", "--skip-git-repo-check", "--color", "never", "--sandbox",
              "workspace-write", "--json", "-o", ".gitsleep-answer.md", "-"),
    "claude": ("claude", "-p", "--output-format", "stream-json", "--verbose",
               "--permission-mode", "acceptEdits"),
    "gemini": ("gemini", "--approval-mode", "auto_edit"),
    "opencode": ("opencode", "run"),  # edits are allowed by its default permissions
    "llm": ("llm", "prompt", "--no-stream", "--no-log", "-u", "--sf", "AGENTS.md"),  # no edits
    "aider": AIDER_FLAGS,  # aider applies its edits unless told --dry-run
}


def spec_for(tmp_path: Path, agent: str) -> AgentSpec:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(f"backend: command\noptimizer_model: m\nagent: {agent}\n" + SKILLS)
    return load_config(path).agent_spec("notes")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_text_tasks_keep_the_read_only_argv_and_workspace_tasks_get_the_write_mode(
        tmp_path: Path, preset: str) -> None:
    spec = spec_for(tmp_path, preset)
    assert spec.command == TEXT_ARGV[preset]
    assert spec.workspace_command == WRITE_ARGV[preset]
    text = agent_argv(spec, "Summarise it.")
    write = agent_argv(spec, "Summarise it.", workspace=True)
    assert text[:len(TEXT_ARGV[preset])] == list(TEXT_ARGV[preset])
    assert write[:len(WRITE_ARGV[preset])] == list(WRITE_ARGV[preset])
    # the task goes in the same way in both modes (after the flags)
    assert text[len(TEXT_ARGV[preset]):] == write[len(WRITE_ARGV[preset]):]


def test_the_write_mode_follows_the_model_flag_and_only_changes_the_mode(
        tmp_path: Path) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_text("backend: command\nmodel: gpt-5\nagent: codex\n" + SKILLS)
    spec = load_config(path).agent_spec("notes")
    assert spec.command[2:4] == ("-m", "gpt-5") == spec.workspace_command[2:4]
    changed = [(a, b) for a, b in zip(spec.command, spec.workspace_command, strict=True)
               if a != b]
    assert changed == [("read-only", "workspace-write")]
    assert set(WRITE_MODES) <= set(PRESETS)


def test_an_own_command_runs_as_written_for_every_task(tmp_path: Path) -> None:
    spec = spec_for(tmp_path, "{command: [my-agent, --ro]}")
    assert spec.workspace_command is None
    assert agent_argv(spec, "x", workspace=True) == agent_argv(spec, "x") == ["my-agent", "--ro"]


def test_a_workspace_call_runs_the_write_argv_and_a_text_call_the_read_only_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    agent = install("editor", tmp_path)
    work, _ = make_repo(tmp_path, {"evals/fx/a.txt": "a\n"})
    tree = tree_id(work, "HEAD", "evals/fx")
    spec = AgentSpec(command=(str(agent), "--read-only"),
                     workspace_command=(str(agent), "--write"))
    backend = AgentCliBackend(spec, env={"PATH": "/usr/bin:/bin"}, trees=WorkspaceCache())
    base = {"documents": ["doc"], "skill": "doc", "memory": None}
    text_call = ModelCall("answer", "m", (("system", "doc"), ("user", "task")), context=base)
    ws_call = ModelCall("answer", "m", (("system", "doc"), ("user", "task")), context={
        **base, "workspace": {"folder": "evals/fx", "tree": tree, "repo": str(work),
                              "checks": []}})
    try:
        assert backend.run_once(text_call).argv == [str(agent), "--read-only"]
        assert backend.run_once(ws_call).argv == [str(agent), "--write"]
        # the two modes never share a cached answer
        assert backend.cache_salt(text_call) != backend.cache_salt(
            ModelCall("answer", "m", (("system", "doc"), ("user", "task")),
                      context={**base, "workspace": {"folder": "evals/fx", "tree": None,
                                                     "repo": str(work), "checks": []}}))
    finally:
        backend.close()


def test_doctor_shows_the_write_mode_argv_for_a_workspace_task(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install("editor", bin_dir).rename(bin_dir / "codex")  # a stand-in on PATH
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    task = {"id": "w1", "split": "val", "prompt": "Add --watch.", "workspace": "evals/fx",
            "judge": {"kind": "rule", "checks": [{"op": "changed_files_max", "arg": 1}]}}
    work, _ = make_repo(tmp_path, {
        ".gitsleep.yml": "backend: command\noptimizer_backend: offline\nagent: codex\n" + SKILLS,
        "SKILL.md": "---\nname: notes\ndescription: d\n---\n\n# Notes\n",
        "evals/fx/CHANGELOG.md": "# Changelog\n",
        "evals/tasks.jsonl": json.dumps(task) + "\n" + json.dumps(
            {**task, "id": "t1", "split": "train"}) + "\n"})
    result = run_cli(capsys, "--repo", str(work), "doctor", "--skill", "notes", "--task", "w1")
    assert "command: codex exec --skip-git-repo-check --color never --sandbox workspace-write" \
        in result.out, result.out + result.err


def test_doctor_shows_the_fixture_the_agent_saw_and_what_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Doctor on a workspace task listed `workspace files: AGENTS.md`
    while the agent saw the fixture too, and did not show what the agent changed."""
    isolate_git(monkeypatch, tmp_path)
    program = install("editor", tmp_path)
    task = {"id": "w1", "split": "val", "prompt": "Add --watch.", "workspace": "evals/fx",
            "judge": {"kind": "rule", "checks": [{"op": "changed_files_max", "arg": 1}]}}
    work, _ = make_repo(tmp_path, {
        ".gitsleep.yml": (f"backend: command\noptimizer_backend: offline\n"
                          f"agent: {{command: [{json.dumps(str(program))}]}}\n" + SKILLS),
        "SKILL.md": "---\nname: notes\ndescription: d\n---\n\n# Notes\n",
        "evals/fx/CHANGELOG.md": "# Changelog\n",
        "evals/tasks.jsonl": json.dumps(task) + "\n" + json.dumps(
            {**task, "id": "t1", "split": "train"}) + "\n"})
    result = run_cli(capsys, "--repo", str(work), "doctor", "--skill", "notes", "--task", "w1")
    assert result.code == 0, result.out + result.err
    assert "workspace: a copy of evals/fx as committed, where the agent runs" in result.out
    assert "installed documents: AGENTS.md" in result.out
    assert "changed files: CHANGELOG.md" in result.out
