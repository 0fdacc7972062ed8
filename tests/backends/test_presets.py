"""The known agent CLIs: each preset's argv, its model flag, its write mode and the
variables it sets, read from the config's values."""

from __future__ import annotations

from gitsleep.backends.presets import (
    ANSWER_FILE,
    PRESETS,
    WRITE_MODES,
    preset_command,
    preset_env,
    write_command,
)


def test_the_model_goes_where_the_preset_says() -> None:
    base = preset_command("codex", None)
    assert base == PRESETS["codex"]["command"] and base is not PRESETS["codex"]["command"]
    with_model = preset_command("codex", "gpt-5")
    assert with_model[:4] == ["codex", "exec", "-m", "gpt-5"]
    assert with_model[4:] == base[2:]


def test_the_write_mode_replaces_read_only_flags_or_appends_its_own() -> None:
    codex = write_command("codex", preset_command("codex", None))
    assert "read-only" not in codex and codex.count("workspace-write") == 1
    claude = preset_command("claude", None)
    assert write_command("claude", claude) == [*claude, *WRITE_MODES["claude"][1]]
    aider = preset_command("aider", None)
    assert "--dry-run" in aider and "--dry-run" not in write_command("aider", aider)
    assert write_command("llm", ["llm"]) == ["llm"]  # no write mode: the argv as given


def test_every_preset_answers_where_gitsleep_reads() -> None:
    for name, entry in PRESETS.items():
        answer = entry.get("answer", "stdout")
        assert answer in ("stdout", f"file:{ANSWER_FILE}"), name


def test_aider_gets_the_server_and_key_from_the_config_and_environment() -> None:
    env = preset_env("aider", "http://127.0.0.1:8080/v1", "MY_KEY", {"MY_KEY": "k"})
    assert env["OPENAI_API_BASE"] == "http://127.0.0.1:8080/v1"
    assert env["OPENAI_API_KEY"] == "k" and env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert "OPENAI_API_KEY" not in preset_env("aider", None, "MY_KEY", {})
    assert preset_env(None, "http://x", "MY_KEY", {"MY_KEY": "k"}) == {}
    assert preset_env("codex", "http://x", "MY_KEY", {"MY_KEY": "k"}) == {}
