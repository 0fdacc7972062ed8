"""Backends built from plain settings: `gitsleep.backends` never reads the config.

The caller (`gitsleep.inputs.backend_settings`, from a loaded config) fills in a `BackendSettings`;
a test, a benchmark or another front end can build the same backends without a config file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
from gitsleep.backends.select import BackendSettings, RoutedBackend, backend_from_settings
from gitsleep.base.errors import UsageError

BACKENDS = Path(__file__).resolve().parents[2] / "gitsleep" / "backends"


def test_offline_from_default_settings() -> None:
    backend = backend_from_settings(BackendSettings(), {})
    assert (backend.name, backend.simulated) == ("offline", True)


def test_an_agent_answers_and_the_simulator_proposes_without_any_config() -> None:
    settings = BackendSettings(names=("command", "offline", "offline"),
                               agent=AgentSpec(command=("cat",)))
    backend = backend_from_settings(settings, {"PATH": "/usr/bin:/bin"})
    try:
        assert isinstance(backend, RoutedBackend)
        assert isinstance(backend.by_purpose["answer"], AgentCliBackend)
        assert backend.by_purpose["propose"].name == "offline"
    finally:
        backend.close()


def test_only_the_purposes_asked_for_are_built() -> None:
    settings = BackendSettings(names=("offline", "command", "command"))  # no agent given
    assert set(backend_from_settings(settings, {}, ("answer",)).by_purpose) == {"answer"}
    with pytest.raises(UsageError, match="agent"):
        backend_from_settings(settings, {})


@pytest.mark.parametrize("module", sorted(p.name for p in BACKENDS.glob("*.py")))
def test_no_backend_imports_the_config(module: str) -> None:
    tree = ast.parse((BACKENDS / module).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert not {name for name in imported if name and name.startswith("gitsleep.inputs.config")}


def test_each_agents_answer_calls_go_to_its_own_backend() -> None:
    from gitsleep.backends.select import AgentBackend
    from gitsleep.core.ports import ModelCall

    settings = BackendSettings(
        names=("offline", "offline", "offline"),
        agents=(AgentBackend("sim", "offline"),
                AgentBackend("cli", "command", agent=AgentSpec(command=("cat",)))))
    backend = backend_from_settings(settings, {"PATH": "/usr/bin:/bin"})
    try:
        assert isinstance(backend, RoutedBackend)
        assert isinstance(backend.by_agent["cli"], AgentCliBackend)
        assert backend.by_agent["sim"].name == "offline"
        call = ModelCall("answer", "m", (("user", "hi"),))
        assert backend._for_call(ModelCall("answer", "m", (("user", "hi"),), agent="cli")) \
            is backend.by_agent["cli"]
        assert backend._for_call(call) is backend.by_agent["sim"]  # "": the first agent's
        assert backend.workspaces is True  # both can answer in a task's folder
        assert len(backend.backends) == 2  # the offline one is shared with propose and judge
    finally:
        backend.close()


def test_workspaces_only_when_every_agent_can_work_in_a_folder() -> None:
    from gitsleep.backends.select import AgentBackend

    settings = BackendSettings(
        names=("offline", "offline", "offline"),
        agents=(AgentBackend("sim", "offline"),
                AgentBackend("api", "openai", base_url="http://127.0.0.1:9/v1")))
    backend = backend_from_settings(settings, {"OPENAI_API_KEY": "k"})
    try:
        assert backend.by_agent["api"].name != "offline"
        assert backend.workspaces is False
    finally:
        backend.close()
