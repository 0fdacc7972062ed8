"""What a learned-block marker is, as every reader sees it: `validate`, the pre-commit hook
mode, `consolidate` (read before any model call, written byte-exactly) and the block diff.

Whole runs use the bundled example in a real git repository with a bare `origin`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, example_repo, git

SKILL_MD = "skills/brief-writer/SKILL.md"
BRANCH = "gitsleep/brief-writer"
START = "<!-- gitsleep:learned:start -->"
END = "<!-- gitsleep:learned:end -->"

# A 7-line document whose markers are misspelled (no spaces): lines 5 and 7.
MISSPELLED = ("# Brief writer\n\nWrite plainly.\n\n"
              "<!--gitsleep:learned:start-->\n- Be brief.\n<!--gitsleep:learned:end-->\n")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    return example_repo(tmp_path, monkeypatch)


def put_skill(work: Path, text: str) -> None:
    commit_files(work, {SKILL_MD: text}, "hand-written skill")
    git(work, "push", "--quiet", "origin", "main")


# --- A: a near-miss marker is reported up front, by every reader alike ---------------------


@pytest.mark.parametrize("text", [
    MISSPELLED,
    MISSPELLED.replace("gitsleep:learned", "GITSLEEP:LEARNED").replace("start", "START")
    .replace("end-->", "END-->"),
])
def test_validate_reports_each_misspelled_marker_with_its_fix(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], text: str
) -> None:
    work, _ = repo
    put_skill(work, text)
    result = run_cli(capsys, "--repo", str(work), "validate")
    assert result.code == 1, result
    lines = [line for line in result.out.splitlines() if "GS210" in line]
    assert lines == [
        f"{SKILL_MD}:5: GS210 learned-block marker is not written exactly (spacing or case): "
        f"write it exactly as `{START}`",
        f"{SKILL_MD}:7: GS210 learned-block marker is not written exactly (spacing or case): "
        f"write it exactly as `{END}`",
    ]


def test_consolidate_refuses_a_misspelled_marker_before_any_model_call(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    put_skill(work, MISSPELLED)
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--json")
    assert result.code == 2, result
    assert f"{SKILL_MD}:5: learned-block marker is not written exactly" in result.err
    assert f"write it exactly as `{START}`" in result.err
    assert "document:" not in result.err
    assert "scoring" not in result.err and "optimizer" not in result.err, result.err
    assert git(work, "branch", "--list", BRANCH) == ""


def test_the_hook_mode_reports_a_misspelled_marker(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    put_skill(work, MISSPELLED)
    result = run_cli(capsys, "--repo", str(work), "validate", "--learned-block-only",
                     str(work / SKILL_MD))
    assert result.code == 1 and result.out.startswith(f"{SKILL_MD}:5: GS210 "), result
