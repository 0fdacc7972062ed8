"""The `agent:` section's checks, one plain function per key (gitsleep/inputs/agent_settings.py):
each returns what it was given or raises the one line the user sees."""

from __future__ import annotations

import pytest

from gitsleep.inputs import agent_settings


@pytest.mark.parametrize("check, value", [
    (agent_settings.command, ["codex", "exec", "-"]),
    (agent_settings.command, None),
    (agent_settings.prompt_mode, "option:--task"),
    (agent_settings.install_path, "AGENTS.md"),
    (agent_settings.answer_source, "stdout"),
    (agent_settings.answer_source, "file:out/answer.md"),
    (agent_settings.env_values, {"MODEL_URL": "$MY_URL", "MODE": "fast"}),
    (agent_settings.env_names, ["GH_TOKEN"]),
    (agent_settings.fatal_patterns, ["rate limit"]),
])
def test_a_good_value_comes_back_unchanged(check: object, value: object) -> None:
    assert check(value) == value  # type: ignore[operator]


@pytest.mark.parametrize("check, value, says", [
    (agent_settings.command, [], "non-empty list of arguments"),
    (agent_settings.command, ["codex", "a\0b"], "NUL"),
    (agent_settings.prompt_mode, "pipe", "stdin"),
    (agent_settings.install_path, "../AGENTS.md", "(got '../AGENTS.md')"),
    (agent_settings.answer_source, "answer.md", "must be `stdout` or `file:"),
    (agent_settings.answer_source, "file:../x", "must be `stdout` or `file:"),
    (agent_settings.env_values, {"1BAD": "x"}, "not an environment variable name"),
    (agent_settings.env_values, {"API_KEY": "literal"}, "never write a secret here"),
    (agent_settings.env_names, ["sk-abc def"], "entry 1 is not an environment variable"),
    (agent_settings.fatal_patterns, [" "], "must be non-empty text"),
])
def test_a_bad_value_is_refused_with_the_fix(check: object, value: object, says: str) -> None:
    with pytest.raises(ValueError) as refused:
        check(value)  # type: ignore[operator]
    assert says in str(refused.value)


def test_a_filled_section_names_a_command_and_documents_that_do_not_collide() -> None:
    with pytest.raises(ValueError, match="set `command`"):
        agent_settings.complete({"install": "AGENTS.md", "answer": "stdout"})
    with pytest.raises(ValueError):
        agent_settings.complete({"command": ["a"], "install": "AGENTS.md",
                                 "memory_install": "AGENTS.md", "answer": "stdout"})
    agent_settings.complete({"command": ["a"], "install": "AGENTS.md", "answer": "stdout"})


def test_env_reference_reads_both_spellings() -> None:
    assert agent_settings.env_reference("$NAME") == "NAME"
    assert agent_settings.env_reference("${NAME}") == "NAME"
    assert agent_settings.env_reference("literal") is None
