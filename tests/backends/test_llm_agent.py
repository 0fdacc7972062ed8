"""A real third-party agent CLI: simonw's `llm`, against the loopback OpenAI server.

`llm` is in the test extras, so CI drives it for real; without it these tests skip.
The skill reaches the model only through the file the backend installs (`--sf
AGENTS.md`), so a reply that obeys it proves the whole path: config preset -> argv ->
workspace -> llm -> HTTP -> answer and token usage.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from gitsleep.base.errors import BackendError
from gitsleep.core.models import Judge, Task
from gitsleep.core.replay import answer_call
from gitsleep.flows.prepare import backend_for
from gitsleep.inputs.config import load_config
from tests.support.fake_openai import FakeOpenAIServer


def llm_program() -> str | None:
    beside = Path(sys.executable).parent / "llm"
    return str(beside) if beside.exists() else shutil.which("llm")


pytestmark = [pytest.mark.slow,  # the real llm CLI
              pytest.mark.skipif(llm_program() is None, reason="the `llm` CLI is not installed")]

TASK = Task(id="t1", prompt="Should we cache product pages?", split="val",
            judge=Judge(kind="rule"))
SKILL = "# Brief writer\nAlways end with a line `Confidence: high|medium|low`."


def obeys_the_system_prompt(body: dict[str, Any]) -> str:
    messages = body["messages"]
    system = " ".join(m["content"] for m in messages if m["role"] == "system")
    user = messages[-1]["content"]
    tail = "\nConfidence: medium" if "Confidence:" in system else ""
    return f"Answer to: {user}{tail}"


def configure(tmp_path: Path, server: FakeOpenAIServer) -> Any:
    """The llm preset as a user would write it: `agent: llm` and `model:`."""
    home = tmp_path / "llm-home"
    home.mkdir()
    (home / "extra-openai-models.yaml").write_text(
        f"- model_id: loopback\n  model_name: tiny\n  api_base: \"{server.base_url}\"\n"
        "  api_key_name: loopback\n",
        encoding="utf-8",
    )
    config = tmp_path / ".gitsleep.yml"
    config.write_text(
        "backend: command\nmodel: loopback\noptimizer_backend: offline\n"
        "agent:\n  preset: llm\n"
        f"  env: {{LLM_USER_PATH: {str(home)!r}, OPENAI_API_KEY: $FAKE_LLM_KEY}}\n"
        "skills:\n  - name: brief-writer\n    skill: SKILL.md\n    tasks: [tasks.jsonl]\n",
        encoding="utf-8",
    )
    return load_config(config)


def with_llm_on_path(extra: dict[str, str]) -> dict[str, str]:
    folder = str(Path(llm_program() or "llm").parent)
    return {**os.environ, **extra, "PATH": folder + os.pathsep + os.environ.get("PATH", "")}


def test_llm_answers_with_the_installed_skill_and_reports_tokens(tmp_path: Path) -> None:
    with FakeOpenAIServer(obeys_the_system_prompt, api_key="loopback-key-1234") as server:
        config = configure(tmp_path, server)
        env = with_llm_on_path({"FAKE_LLM_KEY": "loopback-key-1234"})
        backend = backend_for(config, env, "brief-writer").by_purpose["answer"]
        assert backend.spec.command[:4] == ("llm", "prompt", "-m", "loopback")
        assert backend.version().startswith("llm, version")
        answer = backend.complete(answer_call({"skill": SKILL, "memory": None}, TASK,
                                              "loopback", 0))
        assert answer.ok, answer.error
        assert answer.text == "Answer to: Should we cache product pages?\nConfidence: medium"
        sent = server.requests[-1].body
        assert sent["model"] == "tiny"
        assert sent["messages"][0] == {"role": "system", "content": SKILL}
        assert answer.tokens_known and answer.completion_tokens == len(answer.text.split())
        assert answer.prompt_tokens == sum(len(m["content"].split()) for m in sent["messages"])


def test_llm_with_a_bad_key_stops_the_epoch(tmp_path: Path) -> None:
    with FakeOpenAIServer(api_key="the-right-key-1234") as server:
        config = configure(tmp_path, server)
        env = with_llm_on_path({"FAKE_LLM_KEY": "the-wrong-key-1234"})
        backend = backend_for(config, env, "brief-writer").by_purpose["answer"]
        with pytest.raises(BackendError) as caught:
            backend.complete(answer_call({"skill": SKILL, "memory": None}, TASK, "x", 0))
        message = str(caught.value)
        assert "fatal sign" in message and "the-wrong-key-1234" not in message
        assert server.request_count == 1  # not retried
