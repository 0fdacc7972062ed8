"""Model backends behind one interface: `offline` (the simulator) and `openai`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gitsleep.backends.base import Backend, ModelCall
from gitsleep.errors import UsageError

BACKENDS = ("offline", "openai")

__all__ = ["BACKENDS", "Backend", "ModelCall", "create_backend"]


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
) -> Backend:
    """The backend a name stands for. An unknown name is an error, never a silent fallback.
    `check_pass_env`: what the checks a backend runs in a workspace see beyond the minimum."""
    if name == "offline":
        from gitsleep.backends.offline import OfflineBackend

        return OfflineBackend(check_pass_env)
    if name == "openai":
        from gitsleep.backends.openai_compat import create_openai_backend

        return create_openai_backend(
            api_key_env=api_key_env,
            env=env,
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
            azure=dict(azure) if azure else None,
        )
    raise UsageError(f"unknown backend {name!r}: use one of {', '.join(BACKENDS)}")
