"""Several agents on mixed backends: an OpenAI-compatible model on the loopback
server beside an agent CLI, both answering in one `gitsleep eval` run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import isolate_git, make_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"


def example_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository of the brief-writer example, with an OpenAI key and no forge token."""
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "CI", "GITSLEEP_MODEL", "GITSLEEP_BACKEND"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-1234567890")
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
             for p in EXAMPLE.rglob("*") if p.is_file() and ".gitsleep" not in p.parts}
    work, _ = make_repo(tmp_path, {**files, ".gitignore": ".gitsleep/\n"})
    return work


def test_an_openai_model_and_an_agent_cli_both_answer_in_one_eval(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work = example_repo(tmp_path, monkeypatch)
    marker = tmp_path / "cli-ran"
    with FakeOpenAIServer() as server:
        config = work / ".gitsleep.yml"
        config.write_text(config.read_text(encoding="utf-8") + f"""
agents:
  - {{name: api, backend: openai, model: m-api, base_url: "{server.base_url}"}}
  - name: cli
    backend: command
    agent: {{command: [sh, -c, "cat >/dev/null; echo x >> {marker}; echo an answer"]}}
""", encoding="utf-8")
        result = run_cli(capsys, "--repo", str(work), "eval", "--split", "val")
        asked = [r for r in server.requests if r.body and r.body.get("model") == "m-api"]
    assert result.code == 0, result.err
    assert asked, "the openai agent answered"
    assert marker.exists(), "the agent CLI answered too"
    assert len(marker.read_text().splitlines()) == len(asked)  # each agent: every val task


def test_a_401_from_a_second_agents_own_server_names_the_agent_and_the_server(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `authentication failed (HTTP 401 ...)`, with no word of which agent or
    server refused the key."""
    work = example_repo(tmp_path, monkeypatch)
    with FakeOpenAIServer(api_key="another-key-0987654321") as server:
        config = work / ".gitsleep.yml"
        config.write_text(config.read_text(encoding="utf-8") + f"""
agents:
  - {{name: local, backend: offline}}
  - {{name: remote, backend: openai, model: m-api, base_url: "{server.base_url}"}}
""", encoding="utf-8")
        result = run_cli(capsys, "--repo", str(work), "eval", "--split", "val")
        host = f"127.0.0.1:{server.port}"
    assert result.code == 3, result.err
    line = next(ln for ln in result.err.splitlines() if "401" in ln)
    assert "agent remote" in line and host in line, line
