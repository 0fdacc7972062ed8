"""The checks of the `agent:` section of `.gitsleep.yml`, one plain function per key.

`config.AgentConfig` attaches them as its validators: each takes the value read from the
file and returns it, or raises ValueError with the one line the user sees. They live apart
from the config loader because they follow the command backend's rules (how a prompt is
passed, where a document is installed), which `backends/command.py` owns. What an
environment variable name is (`ENV_NAME_RE`, `env_names`, `env_reference`) is here too:
`agent.env` and `agent.pass_env` need it, and the config's other sections share it.
"""

from __future__ import annotations

import re
from typing import Any

from gitsleep.backends.agent_cli import (
    agent_path_conflict,
    install_path_problem,
    prompt_mode_problem,
)
from gitsleep.base.redact import Redactor, is_secret_name

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: whole, no final newline
_ENV_REF = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))\Z")


def env_reference(value: str) -> str | None:
    """`$NAME` or `${NAME}` -> NAME; None for a literal value."""
    match = _ENV_REF.match(value)
    return (match.group(1) or match.group(2)) if match else None


def env_names(value: list[str]) -> list[str]:
    """A list of environment variable names (`pass_env`), never values."""
    for index, name in enumerate(value):
        if not ENV_NAME_RE.match(name):  # never echoed: a pasted token would be shown
            raise ValueError(f"entry {index + 1} is not an environment variable name: "
                             "list names, e.g. [GH_TOKEN], never values")
    return value


def command(value: list[str] | None) -> list[str] | None:
    """`agent.command`: an argv list, never a shell string."""
    if value is not None and (not value or not all(part.strip() for part in value)):
        raise ValueError("must be a non-empty list of arguments (argv, never a shell "
                         "string), e.g. [codex, exec, -]")
    if value is not None and any("\0" in part for part in value):
        raise ValueError("must not contain NUL characters")
    return value


def prompt_mode(value: str | None) -> str | None:
    """`agent.prompt`: how the task reaches the agent (stdin, arg, option:--NAME)."""
    problem = None if value is None else prompt_mode_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def install_path(value: str | None) -> str | None:
    """`agent.install` and `agent.memory_install`: a path inside the workspace."""
    problem = None if value is None else install_path_problem(value)
    if problem:
        raise ValueError(f"{problem} (got {value!r})")
    return value


def answer_source(value: str | None) -> str | None:
    """`agent.answer`: `stdout`, or `file:` and a path inside the workspace."""
    if value is None or value == "stdout":
        return value
    path = value.removeprefix("file:")
    if not value.startswith("file:") or install_path_problem(path):
        raise ValueError(f"must be `stdout` or `file:<path inside the workspace>` "
                         f"(got {value!r})")
    return value


def env_values(value: dict[str, str]) -> dict[str, str]:
    """`agent.env`: variable names, each set to a literal or a `$NAME` reference; a
    secret is named by the variable that holds it, never written here."""
    for name, text in value.items():
        if not ENV_NAME_RE.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
        if env_reference(text) is None and (
            is_secret_name(name) or Redactor().redact(text) != text
        ):
            raise ValueError(f"{name}: never write a secret here; name the variable that "
                             f"holds it instead (e.g. {name}: $MY_{name.upper()})")
    return value


def fatal_patterns(value: list[str]) -> list[str]:
    """`agent.fatal_patterns`: non-empty texts to find in the agent's stderr."""
    if not all(p.strip() for p in value):
        raise ValueError("must be non-empty text (matched case-insensitively in stderr)")
    return value


def complete(filled: dict[str, Any]) -> None:
    """The section with its preset's values filled in: it names a command, and its
    documents and answer file do not land on one another."""
    if not filled.get("command"):
        raise ValueError("agent: set `command` (an argv list) or `preset` "
                         "(codex, claude, gemini, opencode, llm or aider)")
    conflict = agent_path_conflict(filled["install"], filled.get("memory_install"),
                                   filled["answer"])
    if conflict:
        raise ValueError(conflict)
