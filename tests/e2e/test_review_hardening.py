"""`gitsleep review` against pull requests that try to turn a regression into a green
check by shape rather than by content: a cache reached through a committed link, a renamed
skill, a package-only change, event payloads that do not say where the head lives. Real git
repositories with a bare origin and the offline simulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_review_run import (
    AGENTS_CONFIG,
    CONFIG,
    FILES,
    NOTES_MD,
    as_json,
    notes_tasks,
    on_base,
    review,
    task,
    without_rule,
)
from tests.e2e.test_review_run import (
    repo as repo,  # noqa: F401 - the fixture
)
from tests.e2e.test_review_trust import PASSING, forge_cache_entries
from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo

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


RENAMED = "skills/incident-notes/SKILL.md"


def _rename_notes(work: Path, document: str | None) -> None:
    """The head renames skill `notes` to `incident-notes`; its document moves to
    `document` with the learned Owner rule gone (None: the document is deleted)."""
    config = CONFIG.replace("  - name: notes\n    skill: skills/notes/SKILL.md\n",
                            "  - name: incident-notes\n    skill: "
                            f"{document or RENAMED}\n")
    git(work, "rm", "--quiet", NOTES_MD)
    files = {".gitsleep.yml": config}
    if document is not None:
        files[document] = WORSE
    commit_files(work, files, "rename the skill")


def test_a_renamed_skill_whose_document_moved_is_scored_against_the_base(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "new at the head" and "removed at the head", nothing to review, exit 0."""
    work, _ = repo
    _rename_notes(work, RENAMED)
    result = review(capsys, work, "--json", "--fail-on-regression")
    assert result.code == 7, result.err
    data = as_json(result)
    renamed = next(s for s in data["skills"] if s["skill"] == "incident-notes")
    assert (renamed["status"], renamed["verdict"]) == ("scored", "regressed")
    assert renamed["splits"]["test"]["n"] == 4  # the base's held-out tasks of `notes`
    assert any("renamed from notes" in note for note in renamed["notes"]), renamed
    assert [s["skill"] for s in data["skills"]].count("notes") == 0


def test_a_base_skill_whose_document_is_gone_is_unscored(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    other = "skills/brand-new/SKILL.md"  # a new document: nothing to compare it with
    _rename_notes(work, other)
    (work / other).write_text("# Something else entirely\n\nNew text.\n")
    commit_files(work, {other: "# Something else entirely\n\nNew text.\n"}, "unrelated")
    result = review(capsys, work, "--json", "--fail-on-regression")
    assert result.code == 8, result.err
    data = as_json(result)
    gone = next(s for s in data["skills"] if s["skill"] == "notes")
    assert gone["status"] == "unscored" and NOTES_MD in gone["reason"]
    new = next(s for s in data["skills"] if s["skill"] == "incident-notes")
    assert new["status"] == "skipped" and "new at the head" in new["reason"]
    assert review(capsys, work, "--fail-on-regression", "--allow-unscored").code == 0


SCRIPT = "skills/notes/scripts/format.sh"


def _with_package(work: Path) -> None:
    """The base gives `notes` a package: its folder, with a script beside SKILL.md."""
    config = CONFIG.replace("    skill: skills/notes/SKILL.md\n",
                            "    skill: skills/notes/SKILL.md\n    package: skills/notes\n")
    on_base(work, {".gitsleep.yml": config, SCRIPT: "#!/bin/sh\necho Owner: me\n"}, "package")


def test_a_package_only_change_has_no_verdict_unless_the_head_is_trusted(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "nothing changed", exit 0: the head's package was silently unused."""
    work, _ = repo
    _with_package(work)
    commit_files(work, {SCRIPT: "#!/bin/sh\necho nothing\n"}, "the package only")
    result = review(capsys, work, "--json", "--fail-on-regression")
    assert result.code == 8, result.err
    notes = as_json(result)["skills"][0]
    assert notes["status"] == "unscored" and "package" in notes["reason"]
    assert notes["exam_changes"]["package"] == [SCRIPT]
    trusted = review(capsys, work, "--json", "--fail-on-regression", "--trust-head")
    assert trusted.code == 0, trusted.err
    assert as_json(trusted)["skills"][0]["status"] == "scored"


def test_a_package_change_beside_a_worse_document_is_listed_and_not_used(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    _with_package(work)
    commit_files(work, {SCRIPT: "#!/bin/sh\necho nothing\n", NOTES_MD: WORSE}, "both")
    result = review(capsys, work, "--fail-on-regression")
    assert result.code == 7, result.err
    assert (f"  exam: the head changes the skill's package, not used: {SCRIPT}"
            in result.out), result.out


def test_the_budget_refusal_counts_each_agent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `7 val and held-out tasks x 1 sample(s) x 2 sides` for 28 calls."""
    isolate_git(monkeypatch, tmp_path)
    config = AGENTS_CONFIG + "budget:\n  max_calls: 10\n"
    work, _ = make_repo(tmp_path, {**FILES, ".gitsleep.yml": config})
    git(work, "switch", "--quiet", "-c", "feature")
    commit_files(work, {NOTES_MD: WORSE}, "worse")
    result = review(capsys, work, "--skill", "notes")
    assert result.code == 6, result.err
    assert ("needs 42 model calls (7 val and held-out tasks x 2 agents x 1 sample(s) x "
            "3 sides" in result.err), result.err


def test_a_heads_fixture_link_error_never_quotes_the_runners_paths(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A guard: the shapes tried here quote the link as committed, never a path of the
    machine the review runs on."""
    work, _ = repo
    summary = tmp_path / "summary.md"
    held = task("test-fx", "test", "Owner:")
    fixture = json.dumps(json.loads(held) | {"workspace": "evals/fx"}) + "\n"
    (work / "evals/fx").mkdir(parents=True)
    (work / "evals/fx/up").symlink_to("../../..")
    commit_files(work, {NOTES_MD: WORSE, "evals/fx/a.txt": "a\n",
                        "evals/notes.jsonl": notes_tasks() + fixture}, "a fixture link")
    result = review(capsys, work, "--json", "--fail-on-regression")
    data = as_json(result)
    error = data["skills"][0]["exam_changes"]["head_tasks_error"]
    assert error and "symlink" in error, data["skills"][0]
    trusted = review(capsys, work, "--json", "--trust-head")
    assert trusted.code == 2 and "holds the symlink up -> ../../.." in trusted.err
    for text in (result.out, result.err, summary.read_text() if summary.exists() else "",
                 trusted.out, trusted.err):
        assert str(work) not in text and str(tmp_path) not in text, text
