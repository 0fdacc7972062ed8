"""The backend an epoch uses, built from plain settings: one, or one per kind of call.

With `backend: command` the agent CLI answers tasks while `optimizer_backend` and
`judge_backend` (openai by default) propose edits and judge rubrics; the epoch still
sees one `Backend`, which sends each call to the one its purpose names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from gitsleep.backends import BACKENDS
from gitsleep.base.errors import BackendError, UsageError
from gitsleep.core.models import Answer
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.sandbox.trees import TreeSource

if TYPE_CHECKING:
    from gitsleep.backends.agent_cli import AgentSpec

PURPOSE_ORDER = ("answer", "propose", "judge")


class RoutedBackend(Backend):
    """Sends each call to the backend for its purpose (answer, propose, judge)."""

    def __init__(self, by_purpose: Mapping[str, Backend],
                 by_agent: Mapping[str, Backend] | None = None) -> None:
        self.by_purpose = dict(by_purpose)  # a command that never proposes leaves it out
        # several agents: an answer call naming its agent goes to that agent's
        self.by_agent = dict(by_agent or {})
        unique = list(dict.fromkeys([*self.by_agent.values(),
                                     *(self.by_purpose[p] for p in PURPOSE_ORDER
                                       if p in self.by_purpose)]))
        self.backends = unique
        self.name = "+".join(b.name for b in unique)
        self.simulated = any(b.simulated for b in unique)
        answering = list(self.by_agent.values()) or (
            [self.by_purpose["answer"]] if "answer" in self.by_purpose else [])
        self.workspaces = bool(answering) and all(b.workspaces for b in answering)
        self.traces = bool(answering) and all(b.traces for b in answering)

    def _for_call(self, call: ModelCall) -> Backend:
        if call.purpose == "answer" and call.agent:
            backend = self.by_agent.get(call.agent)
            if backend is None:
                raise BackendError(f"no backend was set up for agent {call.agent!r}")
            return backend
        return self._for(call.purpose)

    def _for(self, purpose: str) -> Backend:
        backend = self.by_purpose.get(purpose)
        if backend is None:
            raise BackendError(f"no backend was set up for {purpose} calls in this command")
        return backend

    def complete(self, call: ModelCall) -> Answer:
        return self._for_call(call).complete(call)

    def writes_free_values(self, purpose: str) -> bool:
        backend = self.by_purpose.get(purpose)
        return backend is not None and backend.writes_free_values(purpose)

    def cache_salt(self, call: ModelCall) -> str:
        return self._for_call(call).cache_salt(call)

    def close(self) -> None:
        for backend in self.backends:
            backend.close()

    def interrupt(self) -> None:
        for backend in self.backends:
            backend.interrupt()


@dataclass(frozen=True)
class AgentBackend:
    """One of several agents' backend: `backend` is openai, offline or command;
    `agent` (env resolved) for a command one, `base_url` and `api_key_env` for openai."""

    name: str
    backend: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    agent: AgentSpec | None = None


@dataclass(frozen=True)
class BackendSettings:
    """What building an epoch's backends needs, as plain values.

    The caller reads them from its configuration (`gitsleep.inputs.backend_settings`); the
    backends never import the config module. `names` are the backends of the answer,
    propose and judge calls; `agent` (its env already resolved) is needed only when one of
    the names a command uses is `command`.
    """

    names: tuple[str, str, str] = ("offline", "offline", "offline")
    api_key_env: str = "OPENAI_API_KEY"
    base_url: str | None = None
    timeout: float = 60.0
    max_retries: int = 4
    azure: Mapping[str, Any] | None = None
    agent: AgentSpec | None = None
    check_pass_env: tuple[str, ...] = ()  # `checks.pass_env`, for checks run in a workspace
    # several agents: each answers with its own backend; the answer name is then unused
    agents: tuple[AgentBackend, ...] = ()


def needs_agent(names: tuple[str, str, str], purposes: tuple[str, ...]) -> bool:
    """Whether the calls of `purposes` go to the agent CLI (`command`) at all."""
    return any(name == "command" for purpose, name in
               zip(PURPOSE_ORDER, names, strict=True) if purpose in purposes)


def server_of(base_url: str | None) -> str:
    """`host:port` of a base URL, never its credentials or path (either may hold a key)."""
    if not base_url:
        return "the default server"
    parsed = urlsplit(base_url)
    try:
        port = parsed.port
    except ValueError:
        port = None
    host = parsed.hostname or "an unnamed server"
    return f"{host}:{port}" if port else host


def backend_from_settings(
    settings: BackendSettings, env: Mapping[str, str],
    purposes: tuple[str, ...] = PURPOSE_ORDER,
    trees: Callable[[], TreeSource] | None = None,
) -> Backend:
    """The epoch's backend: one, or one per kind of call.

    Only the backends of `purposes` are built: `eval` makes no `propose` call, so an
    openai optimizer it never uses must not demand an API key. `trees` makes the task-tree
    source each backend that works in a workspace gets (the run's setup reads git; a
    backend never does).
    """
    built: dict[str, Backend] = {}
    by_spec: dict[AgentBackend, Backend] = {}

    def of_agent(agent: AgentBackend) -> Backend:
        """An agent's backend; agents that would build the same one share it."""
        if agent.backend != "command" and (agent.base_url, agent.api_key_env) == (
                settings.base_url, settings.api_key_env):
            return one(agent.backend)  # the optimizer's or judge's own, when it is the same
        key = AgentBackend("", agent.backend, agent.base_url, agent.api_key_env, agent.agent)
        if key not in by_spec:
            if agent.backend == "command":
                from gitsleep.backends.agent_cli import AgentCliBackend

                if agent.agent is None:
                    raise UsageError(f"agent {agent.name}: a `command` backend needs `agent:`")
                by_spec[key] = AgentCliBackend(agent.agent, env=env,
                                              check_pass_env=settings.check_pass_env,
                                              trees=trees() if trees else None)
            else:
                by_spec[key] = create_backend(
                    agent.backend, env=env, api_key_env=agent.api_key_env,
                    base_url=agent.base_url, timeout=settings.timeout,
                    max_retries=settings.max_retries, azure=settings.azure,
                    check_pass_env=settings.check_pass_env, trees=trees)
                if agent.backend == "openai":  # its refusals name the agent and server
                    from gitsleep.backends.openai_compat import OpenAIBackend

                    made = by_spec[key]
                    if isinstance(made, OpenAIBackend):
                        made.who = f"agent {agent.name} at {server_of(agent.base_url)}"
        return by_spec[key]

    def one(name: str) -> Backend:
        if name not in built:
            if name == "command":
                from gitsleep.backends.agent_cli import AgentCliBackend

                if settings.agent is None:
                    raise UsageError("a `command` backend needs an `agent:` section")
                built[name] = AgentCliBackend(settings.agent, env=env,
                                             check_pass_env=settings.check_pass_env,
                                             trees=trees() if trees else None)
            else:
                built[name] = create_backend(
                    name, env=env, api_key_env=settings.api_key_env,
                    base_url=settings.base_url, timeout=settings.timeout,
                    max_retries=settings.max_retries, azure=settings.azure,
                    check_pass_env=settings.check_pass_env, trees=trees,
                )
        return built[name]

    if settings.agents and "answer" in purposes:
        by_agent = {agent.name: of_agent(agent) for agent in settings.agents}
        others = {purpose: one(name) for purpose, name in
                  zip(PURPOSE_ORDER, settings.names, strict=True)
                  if purpose in purposes and purpose != "answer"}
        return RoutedBackend({"answer": by_agent[settings.agents[0].name], **others}, by_agent)

    by_purpose = {purpose: one(name)
                  for purpose, name in zip(PURPOSE_ORDER, settings.names, strict=True)
                  if purpose in purposes}
    if len(built) == 1 and len(by_purpose) == len(PURPOSE_ORDER):
        return next(iter(built.values()))
    return RoutedBackend(by_purpose)


def create_backend(
    name: str,
    *,
    env: Mapping[str, str],
    api_key_env: str = "OPENAI_API_KEY",
    base_url: str | None = None,
    timeout: float = 60.0,
    max_retries: int = 4,
    azure: Mapping[str, Any] | None = None,
    check_pass_env: Sequence[str] = (),
    trees: Callable[[], TreeSource] | None = None,
) -> Backend:
    """The backend a name stands for. An unknown name is an error, never a silent fallback.
    `check_pass_env`: what the checks a backend runs in a workspace see beyond the minimum;
    `trees`: makes the source of the task folders it copies (see `backend_from_settings`)."""
    if name == "offline":
        from gitsleep.backends.offline import OfflineBackend

        return OfflineBackend(check_pass_env, trees() if trees else None)
    if name == "openai":
        from gitsleep.backends.openai_compat import create_openai_backend

        return create_openai_backend(
            api_key_env=api_key_env,
            env=env,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            azure=dict(azure) if azure else None,
            check_pass_env=check_pass_env,
        )
    raise UsageError(f"unknown backend {name!r}: use one of {', '.join(BACKENDS)}")
