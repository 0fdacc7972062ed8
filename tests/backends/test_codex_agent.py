"""The real Codex CLI (npm `@openai/codex`) as the agent, offline against the loopback server.

Opt-in: it runs when a `codex` program is on PATH or named by `GITSLEEP_TEST_CODEX`, and
skips cleanly otherwise (CI has no node). Codex speaks only the Responses API with
streamed events; `tests/support/fake_openai.py` serves a minimal `/v1/responses` for it.
The `codex` preset is used exactly as the README documents it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from gitsleep.core.models import Judge, Task
from gitsleep.core.replay import answer_call
from gitsleep.flows.prepare import backend_for
from gitsleep.inputs.config import load_config
from tests.support.fake_openai import FakeOpenAIServer


def codex_program() -> str | None:
    named = os.environ.get("GITSLEEP_TEST_CODEX")
    return named if named and Path(named).exists() else shutil.which("codex")


pytestmark = pytest.mark.skipif(
    codex_program() is None or shutil.which("node") is None,
    reason="the codex CLI (npm @openai/codex) or node is not installed",
)

SKILL = "# Brief writer\nAlways end with a line `Confidence: high|medium|low`."
TASK = Task(id="t1", prompt="Should we cache product pages?", split="val",
            judge=Judge(kind="rule"))


def texts(body: dict[str, Any]) -> list[str]:
    return [str(part.get("text", "")) for item in body.get("input") or []
            for part in item.get("content") or [] if isinstance(part, dict)]


def obeys_agents_md(body: dict[str, Any]) -> str:
    seen = "\n".join(texts(body))
    tail = "\nConfidence: medium" if "Confidence: high|medium|low" in seen else ""
    return f"Answer to: {texts(body)[-1].strip()}{tail}"


def test_codex_preset_answers_with_the_installed_agents_md(tmp_path: Path) -> None:
    with FakeOpenAIServer(obeys_agents_md, api_key="loopback-key-1234") as server:
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(
            'model_provider = "loopback"\nmodel = "tiny"\n\n[model_providers.loopback]\n'
            f'name = "loopback"\nbase_url = "{server.base_url}"\nenv_key = "LOOPBACK_KEY"\n'
            'wire_api = "responses"\n', encoding="utf-8")
        config_file = tmp_path / ".gitsleep.yml"
        config_file.write_text(
            "backend: command\noptimizer_backend: offline\n"
            f"agent:\n  preset: codex\n  timeout: 120\n"
            f"  env: {{CODEX_HOME: {str(home)!r}, LOOPBACK_KEY: $FAKE_CODEX_KEY}}\n"
            "skills:\n  - name: brief-writer\n    skill: SKILL.md\n    tasks: [tasks.jsonl]\n",
            encoding="utf-8")
        folder = str(Path(codex_program() or "codex").parent)
        env = {**os.environ, "FAKE_CODEX_KEY": "loopback-key-1234",
               "PATH": folder + os.pathsep + os.environ.get("PATH", "")}
        backend = backend_for(load_config(config_file), env, "brief-writer")
        agent = backend.by_purpose["answer"]
        assert agent.version().startswith("codex-cli")
        answer = agent.complete(answer_call({"skill": SKILL, "memory": None}, TASK, "x", 0))
        assert answer.ok, answer.error
        assert answer.text == "Answer to: Should we cache product pages?\nConfidence: medium"
        assert answer.tokens_known and answer.completion_tokens == len(answer.text.split())
        request = next(r for r in server.requests if r.path == "/v1/responses")
        assert request.body is not None and request.body["stream"] is True
        assert any("Always end with a line" in t for t in texts(request.body))
