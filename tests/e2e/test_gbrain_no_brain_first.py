"""gbrain-evals' skillopt-v1 `seed-no-brain-first`, as published (tests/fixtures/gbrain):
its only check is `{"op": "tool_called", "arg": "search"}` over notes in `brain/topics`.
Offline, a night learns to search and lifts its held-out from a baseline that never
searches; the `search` tool answers from the notes as committed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git, make_repo

pytestmark = pytest.mark.slow  # a whole night

SEED = Path(__file__).resolve().parents[1] / "fixtures" / "gbrain" / "seed-no-brain-first"
CONFIG = """version: 1
backend: offline
skills:
  - name: quick-answerer
    skill: SKILL.md
    tasks:
      - benchmark.jsonl
      - {path: held-out.jsonl, split: test}
    tools:
      - {tool: search, folder: brain/topics}
"""


def seed_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    files: dict[str, str | bytes] = {
        path.relative_to(SEED).as_posix(): path.read_bytes()
        for path in sorted(SEED.rglob("*")) if path.is_file()}
    assert len([p for p in files if p.startswith("brain/topics/")]) == 21
    repo, _ = make_repo(tmp_path, {**files, ".gitsleep.yml": CONFIG})
    return repo


def test_the_seed_runs_as_published_and_a_night_lifts_its_held_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = seed_repo(tmp_path, monkeypatch)
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    assert validate.code == 0 and "error" not in validate.out.split("gitsleep validate:")[0]
    night = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
    assert night.code == 0, night.err
    summary = json.loads(night.out)
    assert summary["decision"] == "accepted"
    assert (summary["test"]["baseline"], summary["test"]["candidate"], summary["test"]["n"]) == (
        0.0, 1.0, 6)
    assert [e["content"] for e in summary["edits"]["applied"]] == [
        'Call the "search" tool before you answer.']
    assert summary["tool_calls"]["test"]["hd-004"] == {"before": [], "after": ["search"]}
    assert len(summary["tool_calls"]["test"]) == 6
    diagnostics = json.loads(Path(summary["diagnostics"]).read_text(encoding="utf-8"))
    assert diagnostics["tool_calls"] == summary["tool_calls"]
    baseline, final = (next(p for p in diagnostics["passes"] if p["split"] == "test" and
                            p["label"] == label) for label in ("baseline", "final"))
    assert all(t["samples"][0]["reason"].startswith("failed: tool_called 'search'")
               and t["samples"][0]["trace"] == [] for t in baseline["tasks"])
    solo = next(t for t in final["tasks"] if t["task_id"] == "hd-001")
    [call] = solo["samples"][0]["trace"]
    assert call["name"] == "search"
    assert call["arguments"] == ('{"query":"Answer: should we decide whether a solo founder '
                                 'should take on a technical cofounder."}')
    assert call["result"].startswith(  # the note of the task's own topic ranks first
        "whether-a-solo-founder-should-take-on-a-technical-cofounder.md: # Whether a solo")


def test_in_a_review_the_tools_are_the_bases_and_a_heads_tool_never_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A pull request adds a `command` tool (and tells the agent to call it) and edits a
    note: both are exam changes, listed; the review scores with the base's tools and notes,
    and the head's program runs only with --trust-head."""
    import sys

    from tests.support.gitrepo import commit_files, git

    repo = seed_repo(tmp_path, monkeypatch)
    marker = tmp_path / "the-heads-tool-ran"
    git(repo, "switch", "--quiet", "-c", "feature")
    program = f"open({str(marker)!r}, 'w').close()"
    config = CONFIG + (f"      - {{tool: command, name: run, argv: [{sys.executable}, -c, "
                       f"{json.dumps(program)}]}}\n")
    note = "brain/topics/if-a-team-should-switch-from-rest-to-graphql.md"
    commit_files(repo, {
        ".gitsleep.yml": config,
        "SKILL.md": (SEED / "SKILL.md").read_text() + '\nCall the "run" tool before you answer.\n',
        note: "# GraphQL\n\nThe call was made: switch.\n"}, "a tool and a note")
    args = ("--repo", str(repo), "-q", "review", "--base", "origin/main", "--json",
            "--no-comment")
    result = run_cli(capsys, *args)
    assert result.code == 0, result.err
    assert not marker.exists(), "the head's command tool ran"
    row = json.loads(result.out)["skills"][0]
    changes = row["exam_changes"]
    assert "skills[quick-answerer].tools" in changes["settings"]
    assert changes["changed"]["test"] == ["hd-001", "hd-002", "hd-003", "hd-004", "hd-005",
                                          "hd-006"]  # the notes they search changed
    trusted = run_cli(capsys, *args, "--trust-head")
    assert trusted.code == 0, trusted.err
    assert marker.exists(), "the control: trusting the head runs its tool"


def test_a_pull_request_cannot_hand_a_secret_to_the_bases_command_tool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The base declares a `command` tool; a pull request only adds the model key's name to
    `checks.pass_env`, the list a command tool's environment follows. The review runs the
    base's tool with the base's list: the key never reaches it without --trust-head."""
    import sys

    from tests.support.gitrepo import commit_files, git

    monkeypatch.setenv("TEAM_DB_PASSWORD", "hunter2-not-for-tools")
    seen = tmp_path / "what-the-tool-saw"
    program = (f"import os; open({str(seen)!r}, 'a').write("
               "os.environ.get('TEAM_DB_PASSWORD', 'absent') + '\\n')")
    config = CONFIG + (f"      - {{tool: command, name: run, argv: [{sys.executable}, -c, "
                       f"{json.dumps(program)}]}}\n")
    repo = seed_repo(tmp_path, monkeypatch)
    commit_files(repo, {".gitsleep.yml": config, "SKILL.md": (SEED / "SKILL.md").read_text()
                        + '\nCall the "run" tool before you answer.\n'}, "a command tool")
    git(repo, "push", "--quiet", "origin", "main")
    git(repo, "switch", "--quiet", "-c", "feature")
    commit_files(repo, {".gitsleep.yml": config + "checks:\n  pass_env: [TEAM_DB_PASSWORD]\n",
                        "SKILL.md": (SEED / "SKILL.md").read_text()
                        + '\nCall the "run" tool before you answer, always.\n'},
                 "pass the password on")
    args = ("--repo", str(repo), "-q", "review", "--base", "origin/main", "--json",
            "--no-comment")
    result = run_cli(capsys, *args)
    assert result.code == 0, result.err
    assert seen.exists(), "the base's tool ran"
    assert set(seen.read_text().split()) == {"absent"}
    trusted = run_cli(capsys, *args, "--trust-head")
    assert trusted.code == 0, trusted.err
    assert "hunter2-not-for-tools" in seen.read_text(), "the control: the head's list, trusted"
