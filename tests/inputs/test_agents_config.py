"""Several agents in `.gitsleep.yml`: `agents:` at the top level and per skill,
`gate.agents`, and what the core receives from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.core.models import AgentRef
from gitsleep.inputs.config import load_config

HEAD = """\
version: 1
backend: openai
"""
SKILLS = """\
skills:
  - name: brief-writer
    skill: SKILL.md
    tasks: [evals/t.jsonl]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str) -> str:
    with pytest.raises(UsageError) as info:
        load_config(write(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message and ".gitsleep.yml:" in message
    return message


def test_top_level_agents_reach_the_core_in_config_order(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + """\
agents:
  - {name: small, model: qwen0.5b}
  - {name: large, model: qwen1.5b}
  - {name: sim, backend: offline, model: offline-recent-2}
gate: {agents: min}
""" + SKILLS))
    settings = config.epoch_settings(skill="brief-writer")
    assert settings.agents == (AgentRef("small", "qwen0.5b", "openai"),
                               AgentRef("large", "qwen1.5b", "openai"),
                               AgentRef("sim", "offline-recent-2", "offline"))
    assert settings.model == "qwen0.5b"
    assert settings.optimizer_model == "qwen0.5b"  # no top-level model: the first agent's
    assert settings.gate.agents == "min"


def test_the_top_level_model_is_the_optimizers_and_no_agents(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + """\
model: big-optimizer
agents:
  - {name: small, model: qwen0.5b}
""" + SKILLS))
    settings = config.epoch_settings(skill="brief-writer")
    assert settings.agents == (AgentRef("small", "qwen0.5b", "openai"),)
    assert (settings.model, settings.optimizer_model) == ("qwen0.5b", "big-optimizer")


def test_a_skills_agents_replace_the_top_level_list(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + """\
optimizer_model: opt
agents:
  - {name: small, model: qwen0.5b}
skills:
  - name: brief-writer
    skill: SKILL.md
    tasks: [evals/t.jsonl]
    agents:
      - {name: sim, backend: offline, model: something}
      - {name: codex, backend: command, agent: codex}
  - name: other
    skill: OTHER.md
    tasks: [evals/o.jsonl]
"""))
    own = config.epoch_settings(skill="brief-writer")
    assert own.agents == (AgentRef("sim", "offline", "offline"),
                          AgentRef("codex", "codex", "command"))
    assert config.epoch_settings(skill="other").agents == (
        AgentRef("small", "qwen0.5b", "openai"),)


def test_the_single_model_form_has_no_agents(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + "model: m\n" + SKILLS))
    settings = config.epoch_settings(skill="brief-writer")
    assert settings.agents == () and settings.model == "m"
    assert settings.gate.agents == "mean"


@pytest.mark.parametrize(("agents", "expected"), [
    ("[{name: Big, model: m}]", ["agents[0].name", "lowercase"]),
    ("[{name: a@b, model: m}]", ["agents[0].name"]),
    ("[{name: " + "a" * 33 + ", model: m}]", ["agents[0].name", "32"]),
    ("[{name: a, model: m}, {name: a, model: n}]", ["agents", "used twice", "agents[0]",
                                                     "agents[1]"]),
    ("[{name: a, model: m, agent: codex}]", ["agents[0]", "agent", "command"]),
    ("[{name: a, backend: command}]", ["agents[0]", "agent:"]),
    ("[{name: a}]", ["agents[0]", "model"]),
    ("[{name: a, model: m, colour: red}]", ["agents[0].colour", "unknown key"]),
    ("[]", ["agents", "at least 1"]),
])
def test_bad_agents_name_the_file_the_key_and_the_fix(tmp_path: Path, agents: str,
                                                      expected: list[str]) -> None:
    message = error_of(tmp_path, HEAD + f"agents: {agents}\n" + SKILLS)
    for part in expected:
        assert part in message, message


def test_a_bad_agent_in_a_skill_names_its_line(tmp_path: Path) -> None:
    message = error_of(tmp_path, HEAD + """\
skills:
  - name: brief-writer
    skill: SKILL.md
    tasks: [evals/t.jsonl]
    agents:
      - {name: x, backend: command}
""")
    assert message.startswith(f"{tmp_path / '.gitsleep.yml'}:8:"), message
    assert "skills[0].agents[0]" in message


def test_gate_agents_is_mean_or_min(tmp_path: Path) -> None:
    message = error_of(tmp_path, HEAD + "model: m\ngate: {agents: median}\n" + SKILLS)
    assert "gate.agents" in message and "'mean' or 'min'" in message


def test_a_cost_cap_covers_every_agents_model(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + """\
agents:
  - {name: small, model: a}
  - {name: large, model: b}
budget: {max_cost: 1.0}
prices:
  a: {prompt: 1, completion: 1}
""" + SKILLS))
    with pytest.raises(UsageError, match="no price for model 'b'"):
        config.epoch_settings(skill="brief-writer")


def test_an_optimizer_without_a_model_is_one_clear_line(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, HEAD + """\
agents:
  - {name: codex, backend: command, agent: codex}
""" + SKILLS))
    with pytest.raises(UsageError, match="optimizer_model"):
        config.epoch_settings(skill="brief-writer")
    assert config.epoch_settings(roles=(), skill="brief-writer").model == "codex"


def test_the_schema_knows_agents_and_gate_agents() -> None:
    schema = json.loads((Path(__file__).resolve().parents[2] / "schemas"
                         / "gitsleep-config.schema.json").read_text(encoding="utf-8"))
    text = json.dumps(schema)
    assert '"agents"' in text and "AgentEntryConfig" in text


def test_each_configured_agent_gets_its_backend(tmp_path: Path) -> None:
    from gitsleep.backends.agent_cli import AgentCliBackend
    from gitsleep.backends.select import RoutedBackend
    from gitsleep.flows.prepare import backend_for

    config = load_config(write(tmp_path, """\
version: 1
backend: offline
agents:
  - {name: sim, model: offline-recent-2}
  - {name: cli, backend: command, agent: {command: [cat]}, model: m1}
""" + SKILLS))
    backend = backend_for(config, {"PATH": "/usr/bin:/bin"}, "brief-writer")
    try:
        assert isinstance(backend, RoutedBackend)
        assert backend.by_agent["sim"].name == "offline"
        assert isinstance(backend.by_agent["cli"], AgentCliBackend)
        assert backend.by_purpose["propose"] is backend.by_agent["sim"]
    finally:
        backend.close()


def test_the_budget_note_prices_answers_at_the_costliest_agent() -> None:
    from gitsleep.core.epoch import budget_note
    from gitsleep.core.models import EpochSettings, Judge, Task

    tasks = [Task(id="t", prompt="p" * 400, judge=Judge(kind="exact", answer="x"),
                  split="val")]
    prices = {"cheap": {"prompt": 1.0, "completion": 1.0},
              "dear": {"prompt": 100.0, "completion": 100.0}}
    one = EpochSettings(model="cheap", optimizer_model="cheap", judge_model="cheap",
                        max_cost=5.0, prices=prices)
    both = EpochSettings(model="cheap", optimizer_model="cheap", judge_model="cheap",
                         max_cost=5.0, prices=prices,
                         agents=(AgentRef("a", "cheap"), AgentRef("b", "dear")))
    def dollars(settings: EpochSettings) -> float:
        note = budget_note(settings, tasks, {"skill": "s"}, 100)
        return float(note.split("at most $")[1].split()[0])

    # 88 answer calls (100 minus 12 reflect calls) at the dear agent's price, not the first's
    assert dollars(both) > 50 * dollars(one)


def test_a_forge_token_never_goes_to_an_agents_own_server(tmp_path: Path) -> None:
    message = error_of(tmp_path, HEAD + """\
base_url: https://models.github.ai/inference
api_key_env: GITHUB_TOKEN
agents:
  - {name: a, model: m, base_url: "https://example.com/v1"}
""" + SKILLS)
    assert "forge token" in message and "GITHUB_TOKEN" in message
    assert "example.com" not in message


def test_model_overrides_set_the_optimizers_model_and_no_agents(tmp_path: Path) -> None:
    from gitsleep.inputs.config import apply_overrides

    config = load_config(write(tmp_path, HEAD + """\
agents:
  - {name: small, model: qwen0.5b}
""" + SKILLS))
    overridden = apply_overrides(config, {"GITSLEEP_MODEL": "from-env"})
    settings = overridden.epoch_settings(skill="brief-writer")
    assert settings.agents == (AgentRef("small", "qwen0.5b", "openai"),)
    assert (settings.model, settings.optimizer_model) == ("qwen0.5b", "from-env")
    flagged = apply_overrides(config, {}, model="from-flag").epoch_settings(skill="brief-writer")
    assert flagged.optimizer_model == "from-flag" and flagged.model == "qwen0.5b"
