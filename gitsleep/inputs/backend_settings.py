"""The backends' plain settings, read from the config: the one place that knows both.

`gitsleep.backends` takes a `BackendSettings` and never imports the config module; this
edge fills one in from a loaded `Config` (resolving `agent.env`'s `$NAME` references from
the environment); the run's setup (`gitsleep.flows.prepare.backend_for`) builds the backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from gitsleep.backends.presets import preset_env
from gitsleep.backends.select import (
    PURPOSE_ORDER,
    AgentBackend,
    BackendSettings,
    needs_agent,
)
from gitsleep.base.errors import UsageError
from gitsleep.inputs.agent_settings import env_reference

if TYPE_CHECKING:
    from gitsleep.backends.agent_cli import AgentSpec
    from gitsleep.inputs.config import AgentConfig, AgentEntryConfig, Config


def resolve_env(
    agent_env: Mapping[str, str], env: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """`agent.env` with `$NAME` references read from the environment (exit 2 if unset)."""
    resolved = []
    for name, value in agent_env.items():
        ref = env_reference(value)
        if ref is not None:
            if ref not in env:
                raise UsageError(f"agent.env.{name} names ${ref}, which is not set: export "
                                 f"{ref} or change agent.env in .gitsleep.yml")
            value = env[ref]
        resolved.append((name, value))
    return tuple(resolved)


def backend_settings(config: Config, env: Mapping[str, str], skill: str,
                     purposes: tuple[str, ...] = PURPOSE_ORDER) -> BackendSettings:
    """The settings for `config` and one skill; the agent's only when `purposes` use it."""
    names = config.backends()
    agent = None
    entries = config.agent_entries(skill or None) if "answer" in purposes else []
    others = purposes if not entries else tuple(p for p in purposes if p != "answer")
    if needs_agent(names, others) or not entries and needs_agent(names, purposes):
        assert config.agent is not None  # the config refuses a command backend without it
        agent = _resolved(config, config.agent_spec(skill), config.agent, config.base_url, env)
    return BackendSettings(
        names=names, api_key_env=config.api_key_env, base_url=config.base_url,
        timeout=config.timeout, max_retries=config.max_retries,
        azure=config.azure.model_dump() if config.azure else None, agent=agent,
        check_pass_env=tuple(config.checks.pass_env),
        agents=tuple(_agent_backend(config, entry, skill, env) for entry in entries),
    )


def _resolved(config: Config, spec: AgentSpec, section: AgentConfig, base_url: str | None,
              env: Mapping[str, str]) -> AgentSpec:
    """The spec with its environment: the preset's variables (aider: the server and key),
    `agent.env` over them."""
    server = preset_env(section.preset, base_url, config.api_key_env, env)
    own = dict(resolve_env(section.env, env))
    return replace(spec, env=tuple({**server, **own}.items()))


def _agent_backend(config: Config, entry: AgentEntryConfig, skill: str,
                   env: Mapping[str, str]) -> AgentBackend:
    """One of several agents' backend settings, its top-level defaults filled in."""
    backend = entry.backend_in(config)
    base_url = entry.base_url or config.base_url
    spec = None
    if backend == "command":
        section = entry.agent or config.agent
        assert section is not None  # the config refuses a command agent without it
        spec = _resolved(config, config.agent_spec(skill, entry), section, base_url, env)
    return AgentBackend(entry.name, backend, base_url, config.api_key_env, spec)
