"""`validate` on tools and trajectory checks: a tool that cannot be given, a check naming a
tool the agent lacks, a backend that cannot say what its agent called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git, make_repo

SKILL = "---\nname: quick\ndescription: Answers questions.\n---\n# Quick\n\nAnswer.\n"


def tasks(check: dict[str, object]) -> str:
    return "".join(json.dumps({"task_id": f"{s}-{i}", "task": f"Answer {s} {i}.",
                               "split": s, "judge": {"kind": "rule", "checks": [check]}}) + "\n"
                   for s in ("train", "val") for i in range(2))


def repo_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, backend: str = "offline",
              tools: str = "    tools: [{tool: search, folder: brain/topics}]\n",
              check: dict[str, object] | None = None, extra: str = "") -> Path:
    isolate_git(monkeypatch, tmp_path)
    repo, _ = make_repo(tmp_path, {
        ".gitsleep.yml": (f"version: 1\nbackend: {backend}\nmodel: m\n{extra}skills:\n"
                          "  - name: quick\n    skill: SKILL.md\n"
                          f"    tasks: [evals/tasks.jsonl]\n{tools}"),
        "SKILL.md": SKILL,
        "brain/topics/pricing.md": "# Pricing\n\nSeat pricing notes.\n",
        "evals/tasks.jsonl": tasks(check or {"op": "tool_called", "arg": "search"}),
    })
    return repo


def test_a_declared_tool_with_a_committed_folder_is_clean(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, monkeypatch)
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert "GS16" not in done.out, done.out


def test_a_check_naming_an_undeclared_tool_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, monkeypatch, check={"op": "tool_called", "arg": "web_search"})
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert done.code == 1
    assert ("evals/tasks.jsonl:1: GS161 task 'train-0': a trajectory check names the "
            "tool 'web_search', and the agent is given no such tool (given: search)") in done.out


def test_no_tools_at_all_is_an_error_for_an_api_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, monkeypatch, tools="")
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert done.code == 1 and "GS161" in done.out and "(given: none)" in done.out


def test_a_missing_tool_folder_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, monkeypatch,
                     tools="    tools: [{tool: search, folder: brain/missing}]\n")
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert done.code == 1
    assert "GS160 tool 'search': folder 'brain/missing' does not exist" in done.out


def test_a_bad_tool_in_the_config_names_the_key(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = repo_with(tmp_path, monkeypatch, tools="    tools: [{tool: search}]\n")
    done = run_cli(capsys, "--repo", str(repo), "validate")
    assert done.code == 2 and "a search tool needs `folder:`" in done.err
