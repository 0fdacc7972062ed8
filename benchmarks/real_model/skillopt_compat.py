"""Run SkillOpt-Sleep 0.2.0 (PyPI `skillopt`) against an OpenAI-compatible server.

Run with the python of the separate environment that has `skillopt` installed, with the
arguments of `python -m skillopt_sleep`. Version 0.2.0's `azure_openai` backend always
signs in with Azure managed identity and sends requests to built-in Azure hosts; later
versions add an `openai_compatible` mode (`AZURE_OPENAI_AUTH_MODE`). This shim gives
0.2.0 that transport and nothing else: the backend's client becomes a plain OpenAI client
for `AZURE_OPENAI_ENDPOINT` with `AZURE_OPENAI_API_KEY`, and each request's completion
cap is `SKILLOPT_SLEEP_COMPAT_MAX_TOKENS` (0.2.0 asks for 16384, which lets a 0.5B model
ramble for minutes on a CPU). Prompts, parsing, reflection and the gate are SkillOpt-Sleep's.
"""

from __future__ import annotations

import os
import runpy
import sys
from typing import Any


class _Completions:
    def __init__(self, inner: Any, cap: int) -> None:
        self.inner = inner
        self.cap = cap

    def create(self, **request: Any) -> Any:
        request.pop("max_completion_tokens", None)
        request["max_tokens"] = self.cap
        return self.inner.create(**request)


class _Chat:
    def __init__(self, inner: Any, cap: int) -> None:
        self.completions = _Completions(inner.completions, cap)


class _Client:
    def __init__(self, inner: Any, cap: int) -> None:
        self.chat = _Chat(inner.chat, cap)


def _get_client(self: Any) -> Any:
    if self._client is None:
        from openai import OpenAI

        inner = OpenAI(base_url=os.environ["AZURE_OPENAI_ENDPOINT"].rstrip("/"),
                       api_key=os.environ.get("AZURE_OPENAI_API_KEY", "x"), max_retries=4)
        cap = int(os.environ.get("SKILLOPT_SLEEP_COMPAT_MAX_TOKENS", "512"))
        self._client = _Client(inner, cap)
    return self._client


def main() -> None:
    from skillopt_sleep import backend

    backend.AzureOpenAIBackend._get_client = _get_client
    sys.argv = ["skillopt_sleep", *sys.argv[1:]]
    runpy.run_module("skillopt_sleep", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
