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
    diagnostics = json.loads(Path(summary["diagnostics"]).read_text(encoding="utf-8"))
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
