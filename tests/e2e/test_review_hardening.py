"""`gitsleep review` against pull requests that try to turn a regression into a green
check by shape rather than by content: a cache reached through a committed link, a renamed
skill, a package-only change, event payloads that do not say where the head lives. Real git
repositories with a bare origin and the offline simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_review_run import (
    NOTES_MD,
    review,
    without_rule,
)
from tests.e2e.test_review_run import (
    repo as repo,  # noqa: F401 - the fixture
)
from tests.e2e.test_review_trust import PASSING, forge_cache_entries
from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, git

WORSE = without_rule("- Always include \"Owner:\"\n")


def _move_cache_behind_a_link(work: Path, linked: str) -> None:
    """Forged answers in a tracked folder, `.gitsleep/cache` (or `.gitsleep`) a committed
    link to it: the tracked-entry check sees only the link."""
    written = forge_cache_entries(work)
    git(work, "rm", "-r", "--quiet", "--cached", ".gitsleep/cache")
    forged = work / "evals" / "forged"
    forged.mkdir(parents=True)
    if linked == ".gitsleep/cache":
        (work / ".gitsleep" / "cache").rename(forged / "cache")
        (work / ".gitsleep" / "cache").symlink_to("../evals/forged/cache")
    else:
        (work / ".gitsleep").rename(forged / "gitsleep")
        (work / ".gitsleep").symlink_to("evals/forged/gitsleep")
    git(work, "add", "-f", "--", "evals/forged", linked)
    git(work, "commit", "--quiet", "--no-verify", "-m", "cache through a link")
    assert written and json.loads((work / written[0]).read_text())["text"] == PASSING


@pytest.mark.parametrize("linked", [".gitsleep/cache", ".gitsleep"])
def test_a_cache_reached_through_a_committed_link_is_refused(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], linked: str) -> None:
    """Before: 12 cache hits, 0 calls, "no clear change", exit 0; validate said nothing."""
    work, _ = repo
    commit_files(work, {NOTES_MD: WORSE}, "worse")
    _move_cache_behind_a_link(work, linked)
    result = review(capsys, work, "--fail-on-regression")
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and f"'{linked}'" in lines[0], result.err
    assert "GS007" not in lines[0] and result.out == ""
    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert checked.code == 1
    assert any(" GS007 " in line and f"'{linked}'" in line
               for line in checked.out.splitlines()), checked.out
    night = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run")
    assert night.code == 2 and f"'{linked}'" in night.err
