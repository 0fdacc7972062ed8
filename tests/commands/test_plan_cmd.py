"""`gitsleep plan`: the skills as a GitHub Actions matrix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli

CONFIG = """\
skills:
  - {name: brief-writer, skill: skills/brief/SKILL.md, tasks: [evals/brief.jsonl]}
  - name: release-notes
    skill: skills/notes/SKILL.md
    memory: AGENTS.md
    tasks:
      - evals/notes.jsonl
      - {path: evals/notes-held-out.jsonl, split: test}
"""


def run(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    """The real CLI in-process: (exit code, stdout, stderr)."""
    result = run_cli(capsys, "--repo", str(repo), *args)
    return result.code, result.out, result.err


def test_json_matrix_is_one_compact_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".gitsleep.yml").write_text(CONFIG)
    code, out, _ = run(capsys, tmp_path, "plan", "--json")
    assert code == 0
    assert out == '{"include":[{"skill":"brief-writer"},{"skill":"release-notes"}]}\n'
    assert json.loads(out) == {"include": [{"skill": "brief-writer"},
                                           {"skill": "release-notes"}]}


def test_readable_listing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".gitsleep.yml").write_text(CONFIG)
    code, out, _ = run(capsys, tmp_path, "plan")
    assert code == 0
    assert out.splitlines() == [
        "brief-writer: skills/brief/SKILL.md; tasks evals/brief.jsonl (auto)",
        "release-notes: skills/notes/SKILL.md, memory AGENTS.md; tasks evals/notes.jsonl (auto), "
        "evals/notes-held-out.jsonl (test)",
    ]


def test_bad_or_missing_config_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, tmp_path, "plan", "--json")
    assert code == 2 and "not found" in err
    (tmp_path / ".gitsleep.yml").write_text(CONFIG.replace("brief-writer", "Brief Writer"))
    code, out, err = run(capsys, tmp_path, "plan", "--json")
    assert (code, out) == (2, "") and "skills[0].name" in err
