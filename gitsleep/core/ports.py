"""The one small interface every model backend implements.

A backend turns a `ModelCall` into an `Answer`. It retries transient failures itself
and returns `Answer(error=...)` when a call still fails; it raises `BackendError` for
failures that must stop the epoch at once (bad key, unknown model). It never returns an
error as if it were a model's text.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gitsleep.core.models import Answer

PURPOSES = ("answer", "propose", "judge")
# every backend a config may name: the model API, the offline simulator, an agent CLI
BACKENDS = ("openai", "offline", "command")


@dataclass(frozen=True)
class ModelCall:
    """A chat request, complete enough that its reply is a pure function of it.

    `context` carries the same request in structured form for simulators (the offline
    backend reads failed checks from it); it is not part of the cache key, because the
    messages already say everything a real model sees.
    """

    purpose: str  # answer | propose | judge
    model: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.0
    seed: int | None = 0
    sample: int = 0
    max_tokens: int | None = None
    json_schema: str | None = None  # canonical JSON of the schema asked for, if any
    # several agents: the agent an answer call is for; the routing backend sends
    # it to that agent's backend, and its cache entry is its own ("": one agent)
    agent: str = ""
    # the tools the agent may call, as canonical JSON of their declarations (each folder's
    # git tree id standing for its files); "" for none. The specs themselves, files and
    # all, ride in `context["tools"]` for the backend that runs the tool loop.
    tools: str = ""
    context: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    def cache_key(self) -> str:
        fields: list[Any] = [
            self.purpose,
            self.model,
            self.messages,
            self.temperature,
            self.seed,
            self.sample,
            self.max_tokens,
            self.json_schema,
        ]
        if self.agent:  # a night of one agent keeps the keys it always had
            fields.append(self.agent)
        if self.tools:  # so does a call without tools
            fields.append(["tools", self.tools])
        payload = json.dumps(fields, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Backend(ABC):
    """Answers tasks, proposes edits and judges rubrics, all as `complete` calls."""

    name: str = "base"
    simulated: bool = False
    # answers a workspace task in its folder (an agent CLI that edits files) and judges the
    # folder's checks after the agent ran; only such a backend may answer one
    workspaces: bool = False
    # says which tools its agent called (`Answer.trace`): only such a backend can answer a
    # task with trajectory checks
    traces: bool = False

    @abstractmethod
    def complete(self, call: ModelCall) -> Answer:
        """Return the reply, or an Answer with `error` set; raise BackendError if fatal."""

    def writes_free_values(self, purpose: str) -> bool:
        """Whether this backend's replies of `purpose`, by its own specification, write a
        literal for a label a check asks no value for (`Confidence: medium`); hygiene lets
        that one kind of line through for it, never for a model."""
        return False

    def cache_salt(self, call: ModelCall) -> str:
        """What else decides a reply besides the call (an agent's command and version);
        mixed into the cache key. Empty for model APIs, where the call says it all."""
        return ""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; called once at the end of an epoch."""

    def interrupt(self) -> None:  # noqa: B027 - optional hook
        """Ctrl-C or a signal: stop the calls under way at once and retry nothing. Called
        from the main thread while workers may still be inside `complete`."""
