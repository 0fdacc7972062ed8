"""The real aider CLI (PyPI `aider-chat`) as the agent of a workspace task.

Opt-in: it runs when `GITSLEEP_TEST_AIDER` names an aider program (`.ci/run` installs
aider-chat in its own venv, `.venv-aider`, and exports it) or `aider` is on PATH, and
skips cleanly otherwise. aider runs through the `aider` preset exactly as a user writes
it (`agent: aider`, `model:`, `base_url:`, `api_key_env:`) against the loopback
OpenAI-compatible server, which plays a model that answers in aider's `whole` edit format
(the default for a model aider does not know). aider applies the edit in the per-call
copy of the fixture and gitsleep's checks judge the folder afterwards.

The agent is another process, so the suite's socket guard does not reach it: its proxy
variables point at a loopback proxy that forwards nothing and records every attempt, and
the test asserts there was none (the model server is reached directly, by NO_PROXY).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from gitsleep.inputs.config import load_config
from tests.support.cli import run_cli
from tests.support.dead_proxy import DeadProxy
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import isolate_git, make_repo
from tests.support.skills import CHANGELOG_SKILL

pytestmark = pytest.mark.slow  # the real aider agent


def aider_program() -> str | None:
    named = os.environ.get("GITSLEEP_TEST_AIDER")
    return named if named and Path(named).exists() else shutil.which("aider")


needs_aider = pytest.mark.skipif(
    aider_program() is None, reason="aider (PyPI aider-chat) is not installed"
)

KEY = "loopback-aider-key-1234"
RULE = "Put every new entry under a `## [Unreleased]` heading."
SKILL = CHANGELOG_SKILL
FIXTURE = "# Changelog\n\n## 1.0.0\n- first release\n"
TASK = {
    "id": "v1",
    "split": "val",
    "workspace": "evals/fx",
    "prompt": "Add a changelog entry for the new --watch flag.",
    "judge": {
        "kind": "rule",
        "checks": [
            {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "## [Unreleased]"}},
            {"op": "file_contains", "arg": {"path": "CHANGELOG.md", "text": "--watch"}},
            {"op": "changed_files_max", "arg": 1},
        ],
    },
}


def texts(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body.get("messages") or [])


def changelog_editor(body: dict[str, Any]) -> str:
    """A model that obeys the skill aider read (`--read AGENTS.md`) when it holds the rule;
    otherwise it files the entry under a heading of its own. The reply is a whole-file
    listing, aider's `whole` edit format."""
    heading = "## [Unreleased]" if RULE in texts(body) else "## Next"
    listing = f"# Changelog\n\n{heading}\n- Add the --watch flag.\n\n## 1.0.0\n- first release\n"
    return f"I added the entry.\n\nCHANGELOG.md\n```\n{listing}```\n"


def aider_repo(
    tmp_path: Path, server: FakeOpenAIServer, rules: str, metadata_file: bool = True
) -> Path:
    """A repository whose night runs aider through the preset, as the docs show it; with
    `metadata_file`, aider is told the model's limits and so fetches none."""
    metadata = tmp_path / "aider-models.json"  # what aider would otherwise download
    metadata.write_text(
        json.dumps(
            {
                "openai/tiny": {
                    "max_input_tokens": 8192,
                    "max_output_tokens": 1024,
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "litellm_provider": "openai",
                    "mode": "chat",
                }
            }
        )
    )
    env_line = f"  env: {{AIDER_MODEL_METADATA_FILE: {str(metadata)!r}}}\n" if metadata_file else ""
    work, _ = make_repo(
        tmp_path,
        {
            ".gitsleep.yml": (
                "version: 1\nbackend: command\noptimizer_backend: offline\nmodel: tiny\n"
                f"base_url: {server.base_url}\napi_key_env: FAKE_AIDER_KEY\n"
                "agent:\n  preset: aider\n  timeout: 120\n"
                f"{env_line}"
                "skills:\n  - name: changelog\n    skill: SKILL.md\n"
                "    tasks: [evals/tasks.jsonl]\n"
            ),
            "SKILL.md": SKILL.format(rules=rules),
            "evals/fx/CHANGELOG.md": FIXTURE,
            "evals/tasks.jsonl": json.dumps(TASK) + "\n",
        },
    )
    return work


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An empty HOME, aider on PATH, the key in its variable and every proxy dead."""
    isolate_git(monkeypatch, tmp_path)
    folder = str(Path(aider_program() or "aider").parent)
    monkeypatch.setenv("PATH", folder + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_AIDER_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    with DeadProxy() as proxy:
        for name, value in proxy.env(no_proxy="127.0.0.1,localhost").items():
            monkeypatch.setenv(name, value)
        yield proxy


def only_task(out: str) -> dict[str, Any]:
    rows = [t for row in json.loads(out) for t in row["tasks"]]
    assert len(rows) == 1, rows
    return rows[0]


def test_the_aider_preset_reads_the_server_from_the_config(tmp_path: Path) -> None:
    """No aider needed: the argv and variables the preset gives a text and a workspace
    task (read-only `--dry-run` for text, edits for a workspace)."""
    from gitsleep.inputs.backend_settings import backend_settings

    config_file = tmp_path / ".gitsleep.yml"
    config_file.write_text(
        "backend: command\noptimizer_backend: offline\nmodel: tiny\n"
        "base_url: http://127.0.0.1:9/v1\napi_key_env: MY_LOCAL_KEY\nagent: aider\n"
        "skills:\n  - name: s\n    skill: SKILL.md\n    tasks: [t.jsonl]\n",
        encoding="utf-8",
    )
    spec = backend_settings(load_config(config_file), {"MY_LOCAL_KEY": KEY}, "s").agent
    assert spec is not None and spec.workspace_command is not None
    assert spec.command[:3] == ("aider", "--model", "openai/tiny")
    assert spec.prompt == "option:--message" and spec.install == "AGENTS.md"
    assert "--dry-run" in spec.command and "--dry-run" not in spec.workspace_command
    assert [*spec.workspace_command, "--dry-run"] == list(spec.command)
    for flag in (
        "--yes-always",
        "--no-git",
        "--no-auto-commits",
        "--no-check-update",
        "--no-analytics",
        "--no-stream",
        "--no-detect-urls",
        "--no-suggest-shell-commands",
        "--no-auto-lint",
    ):
        assert flag in spec.command
    assert spec.command[spec.command.index("--read") + 1] == "AGENTS.md"
    assert spec.command[spec.command.index("--map-tokens") + 1] == "0"
    env = dict(spec.env)
    assert env == {
        "OPENAI_API_BASE": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    assert KEY not in " ".join(spec.command)  # the key travels in the environment only


def test_agent_env_wins_over_the_preset_and_an_unset_key_is_left_out(tmp_path: Path) -> None:
    from gitsleep.inputs.backend_settings import backend_settings

    config_file = tmp_path / ".gitsleep.yml"
    config_file.write_text(
        "backend: command\noptimizer_backend: offline\nmodel: openai/tiny\n"
        "base_url: http://127.0.0.1:9/v1\n"
        "agent: {preset: aider, env: {OPENAI_API_BASE: 'http://127.0.0.1:7/v1'}}\n"
        "skills:\n  - name: s\n    skill: SKILL.md\n    tasks: [t.jsonl]\n",
        encoding="utf-8",
    )
    spec = backend_settings(load_config(config_file), {}, "s").agent
    assert spec is not None
    assert spec.command[:3] == ("aider", "--model", "openai/tiny")  # no second prefix
    assert dict(spec.env) == {
        "OPENAI_API_BASE": "http://127.0.0.1:7/v1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


@needs_aider
def test_aider_edits_the_workspace_and_the_file_check_passes(
    tmp_path: Path, guarded: DeadProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(changelog_editor, api_key=KEY) as server:
        repo = aider_repo(tmp_path, server, rules=f"- {RULE}")
        result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
        assert result.code == 0, result.err
        task = only_task(result.out)
        assert (task["hard"], task["soft"]) == (1.0, 1.0), task
        chat = [r for r in server.requests if r.path == "/v1/chat/completions"]
        assert len(chat) == 1 and chat[0].body is not None
        assert chat[0].body["model"] == "tiny"
        assert chat[0].headers["authorization"] == f"Bearer {KEY}"
        assert RULE in texts(chat[0].body)  # the installed skill reached the model
        assert "Add a changelog entry for the new --watch flag." in texts(chat[0].body)
    assert guarded.attempts == []  # nothing but the loopback model server was asked
    assert (repo / "evals/fx/CHANGELOG.md").read_text() == FIXTURE  # aider had a copy
    assert not list((tmp_path / "home").glob(".aider/caches/*.json"))  # no price list fetched


@needs_aider
def test_a_wrong_edit_fails_the_check_with_a_reason(
    tmp_path: Path, guarded: DeadProxy, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(changelog_editor, api_key=KEY) as server:
        repo = aider_repo(tmp_path, server, rules="- Keep entries short.")
        result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
        assert result.code == 0, result.err
        task = only_task(result.out)
        assert task["hard"] == 0.0 and task["soft"] == pytest.approx(2 / 3, abs=1e-3), task
        assert task["reason"].startswith('failed: file_contains {"path": "CHANGELOG.md"')
        assert "[CHANGELOG.md does not contain '## [Unreleased]']" in task["reason"]
        assert server.request_count == 1
    assert guarded.attempts == []


def text_answer(repo: Path) -> Any:
    """One text task answered by aider through the preset (`--dry-run`)."""
    from gitsleep.core.models import Judge, Task
    from gitsleep.core.replay import answer_call
    from gitsleep.flows.prepare import backend_for

    backend = backend_for(
        load_config(repo / ".gitsleep.yml"), dict(os.environ), "changelog"
    ).by_purpose["answer"]
    assert backend.version() == "aider 0.86.2"
    task = Task(
        id="t1", prompt="Add a changelog entry for --watch.", split="val", judge=Judge(kind="rule")
    )
    return backend.complete(
        answer_call({"skill": f"# Changelog\n{RULE}\n", "memory": None}, task, "tiny", 0)
    )


@needs_aider
def test_the_guard_sees_what_aider_fetches_without_a_metadata_file(
    tmp_path: Path, guarded: DeadProxy
) -> None:
    """The empty `attempts` above is not vacuous: left without the model's limits, aider
    asks the proxy for litellm's price list on GitHub (refused) and still answers."""
    with FakeOpenAIServer(changelog_editor, api_key=KEY) as server:
        answer = text_answer(aider_repo(tmp_path, server, f"- {RULE}", metadata_file=False))
        assert answer.ok, answer.error
        assert server.request_count == 1
        # aider prints the failed fetch to stdout, so it lands in the answer: the reason
        # the docs tell a night to set AIDER_MODEL_METADATA_FILE
        assert "raw.githubusercontent.com" in answer.text
    assert [line.rsplit(" ", 1)[0] for line in guarded.attempts] == [
        "CONNECT raw.githubusercontent.com:443"
    ]


@needs_aider
def test_a_text_task_runs_aider_read_only(tmp_path: Path, guarded: DeadProxy) -> None:
    """A text task has no folder to change: the preset's `--dry-run` argv answers it, and
    aider says so instead of writing the file its reply lists. The answer is its stdout."""
    with FakeOpenAIServer(changelog_editor, api_key=KEY) as server:
        answer = text_answer(aider_repo(tmp_path, server, rules=f"- {RULE}"))
        assert answer.ok, answer.error
        assert "I added the entry." in answer.text and "## [Unreleased]" in answer.text
        assert "Did not apply edit to CHANGELOG.md (--dry-run)" in answer.text
        assert server.request_count == 1
    assert guarded.attempts == []
