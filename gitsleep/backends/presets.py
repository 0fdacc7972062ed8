"""What `agent: {preset: NAME}` fills in: how each known agent CLI runs one task.

How the task reaches each CLI, so that a task can never become one of its flags
: codex (`exec ... -`), claude (`-p`) and llm (`prompt`) read it from stdin;
opencode takes it after `--`; gemini takes it as `--prompt=<task>`, aider as
`--message=<task>`.

Each preset runs the agent non-interactively in the per-call workspace, with the skill
installed where that agent reads instructions. `model:` in .gitsleep.yml, when set, is
passed with the agent's own model flag. Keys written under `agent:` win over the preset.

A task with a workspace is a change to files, so for it the preset runs the
agent in its own write mode (`WRITE_MODES`), and only for it: a text task keeps the
read-only argv. With your own `agent.command` the argv runs as written for every task.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

ANSWER_FILE = ".gitsleep-answer.md"

PRESETS: dict[str, dict[str, Any]] = {
    # Codex reads AGENTS.md from its working directory; -o writes only the last message,
    # and --json puts the events (with token usage) on stdout.
    # Its events are the trace of what it called (`cli_traces.codex_json`).
    "codex": {
        "command": ["codex", "exec", "--skip-git-repo-check", "--color", "never",
                    "--sandbox", "read-only", "--json", "-o", ANSWER_FILE, "-"],
        "prompt": "stdin",
        "install": "AGENTS.md",
        "answer": f"file:{ANSWER_FILE}",
        "model_flag": "-m",
        "model_at": 2,
        "trace": "codex",
    },
    # Claude Code finds a skill by its frontmatter under .claude/skills/<name>/. Its
    # stream-json output (which `-p` gives only with --verbose) holds the calls it made
    # and, in its `result` line, the answer (`cli_traces.claude_stream`); its own tools
    # `Grep` and `Read` are the declared `search` and `read_file`.
    "claude": {
        "command": ["claude", "-p", "--output-format", "stream-json", "--verbose"],
        "prompt": "stdin",
        "install": ".claude/skills/{skill}/SKILL.md",
        "memory_install": "CLAUDE.md",
        "answer": "stdout",
        "model_flag": "--model",
        "model_at": 1,
        "trace": "claude",
        "tool_names": {"Grep": "search", "Read": "read_file"},
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
    # aider (PyPI aider-chat) against the OpenAI-compatible server of the config:
    # `--model openai/<model>` is its route to such a server, which it finds in
    # OPENAI_API_BASE / OPENAI_API_KEY (`SERVER_ENV`). It reads no instruction file by
    # itself, so `--read` hands it the installed skill. The rest keeps it
    # non-interactive and local: no git (the workspace is no repository), no commits,
    # no update check, no release notes, analytics off for this session only (not
    # `--analytics-disable`, which rewrites the user's ~/.aider), no URL scraping or
    # shell commands suggested (--yes-always would run them), no lint-and-fix rounds,
    # no repository map, plain non-streamed output, and its history files written
    # nowhere (in the workspace they would count as the agent's changes). A text task
    # runs with `--dry-run` (aider edits nothing); a workspace task without it.
    "aider": {
        "command": ["aider", "--yes-always", "--no-git", "--no-auto-commits",
                    "--no-check-update", "--no-show-release-notes", "--no-analytics",
                    "--no-show-model-warnings", "--no-pretty", "--no-stream",
                    "--map-tokens", "0", "--no-detect-urls", "--disable-playwright",
                    "--no-suggest-shell-commands", "--no-auto-lint",
                    "--chat-history-file", os.devnull, "--input-history-file", os.devnull,
                    "--read", "AGENTS.md", "--dry-run"],
        "prompt": "option:--message",
        "install": "AGENTS.md",
        "answer": "stdout",
        "model_flag": "--model",
        "model_at": 1,
        "model_prefix": "openai/",
    },
}

# preset -> variables set for the agent from the config's model server: the value of
# `base_url`, and the key read from the variable `api_key_env` names (left out when
# either is unset); plus fixed ones. `agent.env` wins over both.
SERVER_ENV: dict[str, dict[str, str]] = {
    "aider": {"OPENAI_API_BASE": "base_url", "OPENAI_API_KEY": "api_key_env"},
}
FIXED_ENV: dict[str, dict[str, str]] = {
    # litellm (inside aider) would otherwise download its model price list at start
    "aider": {"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
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
    # aider applies its edit blocks unless told `--dry-run`
    "aider": (("--dry-run",), ()),
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
        prefix = entry.get("model_prefix", "")
        command[at:at] = [entry["model_flag"], model if model.startswith(prefix)
                          else prefix + model]
    return command


def preset_env(preset: str | None, base_url: str | None, api_key_env: str,
               env: Mapping[str, str]) -> dict[str, str]:
    """The variables the preset sets for its agent (`SERVER_ENV`, `FIXED_ENV`), resolved
    from the config's server and the environment; `agent.env` is laid over them."""
    if preset is None:
        return {}
    values = {"base_url": base_url, "api_key_env": env.get(api_key_env)}
    resolved = {name: value for name, key in SERVER_ENV.get(preset, {}).items()
                if (value := values[key])}
    return {**resolved, **FIXED_ENV.get(preset, {})}
