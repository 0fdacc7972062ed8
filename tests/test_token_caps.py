"""Completion-token caps: configured, sent with every call, and cut answers recorded.

Without a cap a small model that loops generates until the timeout, and on a serial server
every other call waits behind it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.base.errors import UsageError
from gitsleep.core.ports import ModelCall
from gitsleep.inputs.config import Config, load_config
from tests.e2e.test_model_server import configure, env, repo, scripted_model  # noqa: F401
from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAIServer

BASE = {"version": 1, "skills": [{"name": "a", "skill": "s.md", "tasks": ["t.jsonl"]}]}


def test_caps_have_defaults_and_reach_the_epoch_settings() -> None:
    config = Config.model_validate({**BASE, "model": "m"})
    assert (config.max_answer_tokens, config.max_reflect_tokens) == (1024, 2048)
    settings = Config.model_validate(
        {**BASE, "model": "m", "max_answer_tokens": 300, "max_reflect_tokens": None}
    ).epoch_settings()
    assert (settings.max_answer_tokens, settings.max_reflect_tokens) == (300, None)


@pytest.mark.parametrize(("value", "words"), [
    (8, "greater than or equal to 16"), ("512", "an integer"), (1.5, "an integer"),
    (True, "an integer"), (10**7, "less than or equal to 1000000"),
])
def test_a_bad_cap_is_one_line(tmp_path: Path, value: object, words: str) -> None:
    path = tmp_path / ".gitsleep.yml"
    path.write_text(yaml.safe_dump({**BASE, "max_answer_tokens": value}))
    with pytest.raises(UsageError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "max_answer_tokens" in message and words in message and "\n" not in message


def test_a_server_refusing_both_token_parameters_gets_no_cap() -> None:
    with FakeOpenAIServer(reject_params=("max_tokens", "max_completion_tokens")) as server:
        backend = OpenAIBackend(api_key="k" * 12, base_url=server.base_url, timeout=2,
                                max_retries=0)
        call = ModelCall("answer", "m", (("user", "hello there"),), max_tokens=64)
        assert backend.complete(call).ok
        assert backend.complete(call).ok
        backend.close()
    sent = [sorted(k for k in (r.body or {}) if "max" in k) for r in server.requests]
    assert sent == [["max_tokens"], ["max_completion_tokens"], [], []]
    assert "max_completion_tokens" in backend.dropped_parameters


def test_every_call_carries_its_cap_and_cut_answers_are_recorded_and_scored(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server, max_answer_tokens=20)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        requests = server.requests
    assert result.code == 0, result.err
    caps = {("response_format" in r.body, r.body.get("max_tokens")) for r in requests if r.body}
    assert caps == {(False, 20), (True, 2048)}, "answers 20, optimizer calls the default"
    data = json.loads(result.out)
    diagnostics = json.loads(Path(data["diagnostics"]).read_text())
    samples = [s for p in diagnostics["passes"] for t in p["tasks"] for s in t["samples"]]
    cut = [s for s in samples if s["finish_reason"] == "length"]
    assert cut and all(s["error"] is None and s["soft"] is not None for s in cut)
    assert sum(p["truncated"] for p in diagnostics["passes"]) == len(cut)
    assert {s["finish_reason"] for s in samples} <= {"length", "stop"}
