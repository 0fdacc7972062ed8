"""A whole night of the notes-first example with an API agent: the real `openai` client
against the loopback server playing a model that calls `search` once its skill tells it
to. gitsleep runs the tool loop, judges the trace, and held-out lifts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAIServer, ToolCalls
from tests.support.gitrepo import commit_files, example_files, isolate_git, make_repo

pytestmark = pytest.mark.slow  # a whole night against a server
KEY = "sk-test-e2e-0123456789abcdefghijklmnop"
RULE = 'Call the "search" tool before you answer.'


def model(request: dict[str, Any]) -> str | ToolCalls:
    """The optimizer proposes the rule; the agent searches (once) when its skill says so."""
    if request.get("response_format"):
        return json.dumps({"edits": [{"op": "add", "content": RULE,
                                      "rationale": "the tasks check that it searched"}]})
    messages = request["messages"]
    system = " ".join(m["content"] for m in messages if m["role"] == "system")
    question = " ".join(m["content"] for m in messages if m["role"] == "user")
    searched = any(m["role"] == "tool" for m in messages)
    if RULE in system and not searched and request.get("tools"):
        return ToolCalls((("search", {"query": question}),))
    return f"From the team's decisions: {question}"


def test_an_api_agent_learns_to_search_through_the_tool_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.setenv("GITSLEEP_E2E_KEY", KEY)
    for name in ("OPENAI_API_KEY", "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    repo, _ = make_repo(tmp_path, example_files("notes-first"))
    with FakeOpenAIServer(model) as server:
        config = yaml.safe_load((repo / ".gitsleep.yml").read_text())
        config.update(backend="openai", model="agent-model", optimizer_model="opt-model",
                      base_url=server.base_url, api_key_env="GITSLEEP_E2E_KEY", timeout=5,
                      max_retries=0, proposals=1, rounds=1)
        commit_files(repo, {".gitsleep.yml": yaml.safe_dump(config)}, "against the server")
        night = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        assert night.code == 0, night.err
        summary = json.loads(night.out)
        tool_requests = [r for r in server.requests if (r.body or {}).get("tools")]
    assert summary["decision"] == "accepted"
    assert (summary["test"]["baseline"], summary["test"]["candidate"]) == (0.25, 1.0)
    assert summary["tool_calls"]["test"]["h-mobile"] == {"before": [], "after": ["search"]}
    # every answer offered the declared tools; every turn was a counted call
    assert {t["function"]["name"] for r in tool_requests for t in r.body["tools"]} == {
        "search", "read_file"}
    assert summary["cost"]["calls"] == len(server.requests)
