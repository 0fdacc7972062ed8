"""What `agent: {preset: NAME}` fills in: how each known agent CLI runs one task.

How the task reaches each CLI, so that a task can never become one of its flags
(issue 24): codex (`exec ... -`), claude (`-p`) and llm (`prompt`) read it from stdin;
opencode takes it after `--`; gemini takes it as `--prompt=<task>`. For aider, which is
not a preset, use `prompt: "option:--message"`.

Each preset runs the agent non-interactively in the per-call workspace, with the skill
installed where that agent reads instructions. `model:` in .gitsleep.yml, when set, is
passed with the agent's own model flag. Keys written under `agent:` win over the preset.

A task with a workspace (issue 26) is a change to files, so for it the preset runs the
agent in its own write mode (`WRITE_MODES`), and only for it: a text task keeps the
read-only argv. With your own `agent.command` the argv runs as written for every task.
"""

from __future__ import annotations

from typing import Any

ANSWER_FILE = ".gitsleep-answer.md"

PRESETS: dict[str, dict[str, Any]] = {
    # Codex reads AGENTS.md from its working directory; -o writes only the last message,
    # and --json puts the events (with token usage) on stdout.
    "codex": {
        "command": ["codex", "exec", "--skip-git-repo-check", "--color", "never",
                    "--sandbox", "read-only", "--json", "-o", ANSWER_FILE, "-"],
        "prompt": "stdin",
        "install": "AGENTS.md",
        "answer": f"file:{ANSWER_FILE}",
        "model_flag": "-m",
        "model_at": 2,
    },
    # Claude Code finds a skill by its frontmatter under .claude/skills/<name>/.
    "claude": {
        "command": ["claude", "-p", "--output-format", "text"],
        "prompt": "stdin",
        "install": ".claude/skills/{skill}/SKILL.md",
        "memory_install": "CLAUDE.md",
        "answer": "stdout",
        "model_flag": "--model",
        "model_at": 1,
    },
    # Gemini's headless prompt is the value of -p/--prompt, so `-p -- <task>` would leave
    # -p empty: the task goes glued to the option, `--prompt=<task>`, which its parser
    # (yargs) never reads as another flag. stdin stays empty (DEVNULL).
    "gemini": {
        "command": ["gemini"],
        "prompt": "option:--prompt",
        "install": "GEMINI.md",
        "answer": "stdout",
        "model_flag": "-m",
        "model_at": 1,
    },
    # `opencode run` joins its positional words and everything after `--` into the
    # message (`[...args.message, ...args["--"]]`), so the task goes after `--`.
    "opencode": {
        "command": ["opencode", "run"],
        "prompt": "arg",
        "install": "AGENTS.md",
        "answer": "stdout",
        "model_flag": "-m",
        "model_at": 2,
    },
    # simonw's llm: the installed file is the system prompt; --no-stream because the
    # streaming mode printed nothing against a llama.cpp server; -u reports tokens.
    "llm": {
        "command": ["llm", "prompt", "--no-stream", "--no-log", "-u", "--sf", "AGENTS.md"],
        "prompt": "stdin",
        "install": "AGENTS.md",
        "answer": "stdout",
        "model_flag": "-m",
        "model_at": 2,
    },
}


# preset -> (flags of the read-only argv replaced, flags put in their place or appended):
# the agent's own documented mode for editing files in its working folder.
WRITE_MODES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # `codex exec --sandbox workspace-write`: writes inside the working folder only
    "codex": (("--sandbox", "read-only"), ("--sandbox", "workspace-write")),
    # Claude Code's permission mode that accepts file edits without asking
    "claude": ((), ("--permission-mode", "acceptEdits")),
    # Gemini CLI: file edits approved automatically, shell commands still asked for
    "gemini": ((), ("--approval-mode", "auto_edit")),
    # opencode allows edits by its default permissions and `llm` cannot edit files:
    # both run as for a text task
}


def write_command(preset: str, command: list[str]) -> list[str]:
    """The preset's argv in the agent's write mode (see `WRITE_MODES`): the read-only
    flags replaced where the argv has them, else the write flags appended."""
    if preset not in WRITE_MODES:
        return list(command)
    old, new = WRITE_MODES[preset]
    for at in range(len(command) - len(old) + 1 if old else 0):
        if tuple(command[at:at + len(old)]) == old:
            return [*command[:at], *new, *command[at + len(old):]]
    return [*command, *new]


def preset_command(preset: str, model: str | None) -> list[str]:
    """The preset's argv, with `model` passed by the agent's model flag when given."""
    entry = PRESETS[preset]
    command = list(entry["command"])
    if model:  # right after the (sub)command, where no other flag expects a value
        at = entry["model_at"]
        command[at:at] = [entry["model_flag"], model]
    return command
