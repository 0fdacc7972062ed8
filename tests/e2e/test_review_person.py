"""`gitsleep review` judges a person's change on val and held-out together (it was tuned on
neither), and a change a gitsleep commit wrote on held-out alone (it was chosen on val): a
real repository, a bare origin, the offline simulator answering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo

SKILL_MD = "skills/notes/SKILL.md"
SKILL = ("# Incident notes\n\nWrite short incident notes.\n\n"
         "<!-- gitsleep:learned:start -->\n## Learned rules\n\n"
         "- Always include \"Owner:\"\n- Always include \"Severity:\"\n"
         "<!-- gitsleep:learned:end -->\n")
CONFIG = """version: 1
backend: offline
skills:
  - name: notes
    skill: skills/notes/SKILL.md
    tasks:
      - path: evals/notes.jsonl
gate:
  metric: hard
"""


def task(task_id: str, split: str, *needles: str) -> str:
    checks = [{"op": "contains", "arg": n} for n in needles]
    return json.dumps({"id": task_id, "split": split, "prompt": f"Write the note for {task_id}.",
                       "judge": {"kind": "rule", "checks": checks}})


def tasks() -> str:
    """Deleting the Severity rule fails 5 of 16 val tasks (1.000 -> 0.688) and 1 of 12
    held-out tasks (1.000 -> 0.917, its interval reaching zero)."""
    lines = [task(f"tr-{i}", "train", "Owner:") for i in range(3)]
    lines += [task(f"val-{i}", "val", "Owner:", *(["Severity:"] if i < 5 else []))
              for i in range(16)]
    lines += [task(f"test-{i}", "test", "Owner:", *(["Severity:"] if i < 1 else []))
              for i in range(12)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH",
                 "GITSLEEP_FAIL_ON_REGRESSION", "GITSLEEP_BACKEND", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    repo, _ = make_repo(tmp_path, {".gitsleep.yml": CONFIG, ".gitignore": ".gitsleep/\n",
                                   SKILL_MD: SKILL, "evals/notes.jsonl": tasks()})
    git(repo, "switch", "--quiet", "-c", "feature")
    return repo


def reviewed(capsys: pytest.CaptureFixture[str], work: Path) -> tuple[int, dict]:
    result = run_cli(capsys, "--repo", str(work), "-q", "review", "--base", "origin/main",
                     "--json", "--fail-on-regression")
    return result.code, json.loads(result.out)["skills"][0]


def test_a_hand_edit_that_deletes_a_rule_is_judged_on_val_and_held_out_together(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_files(work, {SKILL_MD: SKILL.replace('- Always include "Severity:"\n', "")},
                 "drop the severity rule")
    code, skill = reviewed(capsys, work)
    splits = skill["splits"]
    assert (splits["val"]["before"], splits["val"]["after"]) == (1.0, 0.688)
    assert (splits["test"]["before"], splits["test"]["after"]) == (1.0, 0.917)
    assert splits["test"]["ci_high"] >= 0, "held-out alone cannot tell the fall from noise"
    assert skill["decided_by"] == "both" and skill["verdict"] == "regressed"
    assert splits["both"]["n"] == 28 and splits["both"]["ci_high"] < 0
    assert any("a person's change" in note for note in skill["notes"])
    assert code == 7


def test_a_change_a_gitsleep_commit_wrote_keeps_held_out_alone(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit_files(work, {SKILL_MD: SKILL.replace('- Always include "Severity:"\n', "")},
                 "gitsleep(notes): val 1.000 -> 0.688, held-out 1.000 -> 0.917\n\n"
                 "Gitsleep-Skill: notes\nGitsleep-Decision: accepted\n")
    code, skill = reviewed(capsys, work)
    assert skill["decided_by"] == "test" and "both" not in skill["splits"]
    assert skill["verdict"] == "no clear change" and code == 0
    assert any("gitsleep commit" in note and "held-out alone" in note
               for note in skill["notes"])
