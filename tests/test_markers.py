"""What a learned-block marker is, as every reader sees it: `validate`, the pre-commit hook
mode, `consolidate` (read before any model call, written byte-exactly) and the block diff.

Whole runs use the bundled example in a real git repository with a bare `origin`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.core import documents as d
from gitsleep.core.models import Edit
from gitsleep.report import block_diff
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


# --- B: markers inside a fenced or indented code block are text --------------------------

EXAMPLE_SKILL = f"""\
# Brief writer

Write plainly. gitsleep keeps its rules in a block like this one:

```markdown
{START}
- an example rule
{END}
```

Final hand-written line.
"""
REAL_BLOCK = f"\n{START}\n## Learned rules\n\n- Keep it short\n{END}\n"


def test_consolidate_leaves_a_fenced_example_alone_and_appends_the_block(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    put_skill(work, EXAMPLE_SKILL)
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--no-push")
    assert result.code == 0, result
    assert json.loads(result.out)["decision"] == "accepted"
    after = git(work, "show", f"{BRANCH}:{SKILL_MD}") + "\n"
    assert after.startswith(EXAMPLE_SKILL), "every byte outside the block is kept"
    assert after.count(START) == 2 and after.endswith(END + "\n")
    assert d.learned_rules(after) and "an example rule" not in d.learned_rules(after)


def test_validate_and_the_hook_take_a_fenced_example_beside_the_block(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    put_skill(work, EXAMPLE_SKILL + REAL_BLOCK)
    result = run_cli(capsys, "--repo", str(work), "validate")
    assert result.code == 0 and "GS210" not in result.out, result
    result = run_cli(capsys, "--repo", str(work), "validate", "--learned-block-only",
                     str(work / SKILL_MD))
    assert (result.code, result.out) == (0, ""), result


def test_the_block_diff_shows_the_real_block_only() -> None:
    # what review and the PR body show: never the user's example
    before = EXAMPLE_SKILL + REAL_BLOCK
    after, _ = d.apply_edits(before, [Edit("add", content="Name the owner")])
    diff = block_diff(before, after, SKILL_MD)
    assert "+- Name the owner" in diff
    assert "an example rule" not in diff and "Final hand-written line" not in diff
