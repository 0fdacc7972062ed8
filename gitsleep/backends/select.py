"""The backend an epoch uses, built from the config: one, or one per kind of call.

With `backend: command` the agent CLI answers tasks while `optimizer_backend` and
`judge_backend` (openai by default) propose edits and judge rubrics; the epoch still
sees one `Backend`, which sends each call to the one its purpose names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from gitsleep.backends import create_backend
from gitsleep.backends.base import Backend, ModelCall
from gitsleep.errors import BackendError, UsageError
from gitsleep.models import Answer

PURPOSE_ORDER = ("answer", "propose", "judge")


class RoutedBackend(Backend):
    """Sends each call to the backend for its purpose (answer, propose, judge)."""

    def __init__(self, by_purpose: Mapping[str, Backend]) -> None:
        self.by_purpose = dict(by_purpose)  # a command that never proposes leaves it out
        unique = list(dict.fromkeys(self.by_purpose[p] for p in PURPOSE_ORDER
                                    if p in self.by_purpose))
        self.backends = unique
        self.name = "+".join(b.name for b in unique)
        self.simulated = any(b.simulated for b in unique)
        answering = self.by_purpose.get("answer")
        self.workspaces = answering is not None and answering.workspaces

    def _for(self, purpose: str) -> Backend:
        backend = self.by_purpose.get(purpose)
        if backend is None:
            raise BackendError(f"no backend was set up for {purpose} calls in this command")
        return backend

    def complete(self, call: ModelCall) -> Answer:
        return self._for(call.purpose).complete(call)

    def cache_salt(self, call: ModelCall) -> str:
        return self._for(call.purpose).cache_salt(call)

    def close(self) -> None:
        for backend in self.backends:
            backend.close()

    def interrupt(self) -> None:
        for backend in self.backends:
            backend.interrupt()


def resolve_env(
    agent_env: Mapping[str, str], env: Mapping[str, str]
) -> tuple[tuple[str, str], ...]:
    """`agent.env` with `$NAME` references read from the environment (exit 2 if unset)."""
    from gitsleep.config import env_reference

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


def command_backend(config: Any, env: Mapping[str, str], skill: str) -> Backend:
    from gitsleep.backends.command import CommandBackend

    spec = config.agent_spec(skill)
    assert config.agent is not None  # agent_spec raised otherwise
    spec = replace(spec, env=resolve_env(config.agent.env, env))
    return CommandBackend(spec, env=env)


def backend_from_config(
    config: Any, env: Mapping[str, str], skill: str,
    purposes: tuple[str, ...] = PURPOSE_ORDER,
) -> Backend:
    """The epoch's backend for `config` (a gitsleep.config.Config) and one skill.

    Only the backends of `purposes` are built: `eval` makes no `propose` call, so an
    openai optimizer it never uses must not demand an API key.
    """
    built: dict[str, Backend] = {}

    def one(name: str) -> Backend:
        if name not in built:
            if name == "command":
                built[name] = command_backend(config, env, skill)
            else:
                built[name] = create_backend(
                    name, env=env, api_key_env=config.api_key_env, base_url=config.base_url,
                    timeout=config.timeout, max_retries=config.max_retries,
                    azure=config.azure.model_dump() if config.azure else None,
                )
        return built[name]

    names = config.backends()
    by_purpose = {purpose: one(name) for purpose, name in zip(PURPOSE_ORDER, names, strict=True)
                  if purpose in purposes}
    if len(built) == 1 and len(by_purpose) == len(PURPOSE_ORDER):
        return next(iter(built.values()))
    return RoutedBackend(by_purpose)
