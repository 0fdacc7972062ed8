"""Whole `gitsleep` runs against a loopback OpenAI-compatible server playing a model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitsleep.backends.offline import simulate_answer
from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAIServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
KEY = "sk-test-e2e-0123456789abcdefghijklmnop"
LEARNED = [
    'Use the heading "## Key Risks"',
    'Always include "Confidence: medium"',
    "Keep answers under 300 characters",
]


def scripted_model(request: dict[str, Any]) -> str:
    """Agent calls obey the document's directives; optimizer calls propose fixed rules."""
    if request.get("response_format"):  # reflection (and rubric) calls ask for JSON
        return "Here you go:\n```json\n" + json.dumps(
            {"edits": [{"op": "add", "content": rule, "rationale": "train tasks need it"}
                       for rule in LEARNED]}
        ) + "\n```"
    system = [m["content"] for m in request["messages"] if m["role"] == "system"]
    user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
    return simulate_answer(system, user)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    return root


def configure(root: Path, server: FakeOpenAIServer, **extra: Any) -> None:
    path = root / ".gitsleep.yml"
    cfg = yaml.safe_load(path.read_text())
    cfg.update(backend="openai", model="agent-model", optimizer_model="optimizer-model",
               base_url=server.base_url, api_key_env="GITSLEEP_E2E_KEY", timeout=2,
               max_retries=1, **extra)
    path.write_text(yaml.safe_dump(cfg))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITSLEEP_E2E_KEY", KEY)
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "AZURE_OPENAI_ENDPOINT",
                 "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def all_output(root: Path, *texts: str) -> str:
    files = [p.read_text(errors="replace") for p in root.rglob("*.json")]
    return "\n".join([*texts, *files])


def test_dry_run_learns_with_a_scripted_model_and_never_leaks_the_key(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        requests = server.requests
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["decision"] == "accepted"
    assert data["test"]["candidate"] > data["test"]["baseline"]
    assert data["commit"] is None and data["pr"]["operation"] == "none"
    assert {r.body["model"] for r in requests} == {"agent-model", "optimizer-model"}
    assert data["cost"]["calls"] == len(requests)
    assert data["cost"]["prompt_tokens"] > 0 and data["cost"]["completion_tokens"] > 0
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in requests)
    assert KEY not in all_output(repo, result.out, result.err)
    diagnostics = json.loads(Path(data["diagnostics"]).read_text())
    assert diagnostics["proposals"], "the optimizer's raw replies are kept"


def test_second_run_on_unchanged_inputs_sends_no_request(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server)
        first = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        sent = server.request_count
        second = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        assert server.request_count == sent > 0
    assert first.code == second.code == 0
    again = json.loads(second.out)
    assert again["cost"]["calls"] == 0 and again["cost"]["cache_hits"] > 0
    assert again["decision"] == json.loads(first.out)["decision"]


def test_bad_key_stops_at_once_with_exit_3(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=scripted_model, api_key="sk-the-right-key-000000") as server:
        configure(repo, server)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        count = server.request_count
    assert result.code == 3
    data = json.loads(result.out)
    assert data["decision"] == "aborted"
    assert "GITSLEEP_E2E_KEY" in data["reason"]
    assert data["val"]["candidate"] is None  # nothing was scored as a zero
    assert count <= 4  # at most the requests already in flight on the 4 workers
    assert KEY not in all_output(repo, result.out, result.err)


def test_bad_key_with_one_worker_sends_exactly_one_request(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=scripted_model, api_key="sk-the-right-key-000000") as server:
        configure(repo, server, workers=1)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run")
        assert server.request_count == 1
    assert result.code == 3


def test_unknown_model_is_exit_3(repo: Path, env: None,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(responder=scripted_model, models=["some-other-model"]) as server:
        configure(repo, server)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
    assert result.code == 3
    assert "model" in json.loads(result.out)["reason"].lower()


def test_failing_server_aborts_instead_of_scoring_zero(
    repo: Path, env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server)
        server.inject(*["500"] * 200)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
    assert result.code == 3
    data = json.loads(result.out)
    assert data["decision"] == "aborted"
    assert "model calls failed" in data["reason"]
    diagnostics = json.loads(Path(data["diagnostics"]).read_text())
    assert diagnostics["call_errors"], "the failed calls are in the diagnostics"


def test_missing_key_is_exit_3_never_a_silent_fallback(
    repo: Path, env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITSLEEP_E2E_KEY")
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server)
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run")
        assert server.request_count == 0
    assert result.code == 3
    assert "GITSLEEP_E2E_KEY" in result.err


def test_budget_exhausted_is_exit_6(repo: Path, env: None,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server, budget={"max_calls": 10, "max_tokens": 2_000_000})
        result = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
        assert server.request_count == 10
    assert result.code == 6
    assert "max_calls (10)" in json.loads(result.out)["reason"]


def test_eval_scores_each_split(repo: Path, env: None,
                                capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(responder=scripted_model) as server:
        configure(repo, server)
        result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
        assert server.request_count == 6
    assert result.code == 0, result.err
    rows = json.loads(result.out)
    assert [(r["split"], r["n"]) for r in rows] == [("val", 6)]
    assert rows[0]["score"] == pytest.approx(0.25)
