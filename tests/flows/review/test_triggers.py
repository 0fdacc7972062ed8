"""`gitsleep review` of a person's description change: trigger accuracy base against head,
with the base's catalog of siblings and the base's trigger tasks, by the night's noise rule.
The bundled scribe example in a real git repository with a bare origin, the offline
simulator's picks."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.core import description as desc
from gitsleep.flows.prepare import Setup
from gitsleep.flows.review import edges
from tests.support.gitrepo import example_repo

SCRIBE = ".claude/skills/scribe/SKILL.md"
RELEASE = ".claude/skills/release-notes/SKILL.md"
BETTER = "Writes the commit message for a staged diff."


def edit(work: Path, path: str, value: str) -> None:
    file = work / path
    file.write_text(desc.replace(file.read_text(encoding="utf-8"), value), encoding="utf-8")


def review(work: Path) -> edges.ReviewOutcome:
    setup = Setup.load(work, None, env={}, progress=lambda _line: None)
    return edges.run_review(setup, edges.ReviewOptions(base="origin/main", comment=False))


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return example_repo(tmp_path, monkeypatch, "scribe")[0]


def test_a_persons_better_description_is_scored_on_the_picks(work: Path) -> None:
    edit(work, SCRIBE, BETTER)
    outcome = review(work)
    [scribe] = outcome.reviews
    picks = scribe.triggers
    assert picks is not None and scribe.status == "scored"
    assert (picks.description_before, picks.description_after) == (
        "Helps with notes and text about project changes.", BETTER)
    assert picks.verdict == "improved" and scribe.verdict == "improved"
    assert (picks.val.before, picks.val.after, picks.test.before, picks.test.after) == (
        0.4, 1.0, 0.4, 1.0)
    assert picks.test_result.noisy is False  # the offline picker moves under no placebo
    row = ("notes about project changes in version 2.4 for users", "release-notes", "scribe",
           "release-notes")
    assert row in [(r.query, r.expected, r.before, r.after) for r in picks.rows]
    assert "| notes about project changes in version 2.4 for users | `release-notes` | " \
           "`scribe` | `release-notes` |" in outcome.body
    data = edges.to_json(outcome, edges.ReviewOptions(base="origin/main"))
    assert data["skills"][0]["triggers"]["verdict"] == "improved"
    assert data["skills"][0]["triggers"]["val"] == {"before": 0.4, "after": 1.0, "n": 5}


def test_a_siblings_description_edited_in_the_same_change_is_listed_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head rewrites scribe's description and also release-notes' (here so that it
    would take scribe's requests): the picks are scored with the base's description of
    every sibling, exactly as if the sibling had been left alone, and its edit is listed."""
    for name in ("alone", "both"):
        (tmp_path / name).mkdir()
    alone = example_repo(tmp_path / "alone", monkeypatch, "scribe")[0]
    edit(alone, SCRIBE, BETTER)
    expected = review(alone).reviews[0].triggers
    both = example_repo(tmp_path / "both", monkeypatch, "scribe")[0]
    edit(both, SCRIBE, BETTER)
    edit(both, RELEASE, "Writes commit messages for a staged diff.")
    outcome = review(both)
    picks = outcome.reviews[0].triggers
    assert picks is not None and expected is not None
    assert picks.siblings_edited == ["release-notes"] and expected.siblings_edited == []
    assert (picks.verdict, picks.rows, picks.val, picks.test) == (
        expected.verdict, expected.rows, expected.val, expected.test)
    assert ("the head changes the description of sibling release-notes "
            f"({RELEASE}): listed, not used") in outcome.body


def test_a_change_to_a_siblings_description_alone_is_listed_and_decides_nothing(
        work: Path) -> None:
    edit(work, RELEASE, "Formats tables.")
    outcome = review(work)
    [scribe] = outcome.reviews
    assert scribe.verdict != "improved"
    assert scribe.triggers is not None and scribe.triggers.verdict is None
    assert scribe.triggers.siblings_edited == ["release-notes"]
    assert "the head changes the description of sibling release-notes" in outcome.body


def test_a_description_a_gitsleep_night_committed_is_decided_by_held_out(work: Path) -> None:
    """A night chose its description on val: as for the body, held-out alone decides."""
    from tests.support.gitrepo import git

    edit(work, SCRIBE, BETTER)
    git(work, "commit", "--quiet", "-am", "gitsleep(scribe): description\n\n"
        "Gitsleep-Skill: scribe\nGitsleep-Decision: accepted")
    picks = review(work).reviews[0].triggers
    assert picks is not None and picks.verdict == "improved"
    assert (picks.test_result.split, picks.test_result.n) == ("held-out", 5)


def test_the_picks_count_in_the_reviews_call_estimate(work: Path) -> None:
    """A review that cannot keep the base's budget is refused before its first call, and
    the refusal counts the pick calls."""
    from tests.support.gitrepo import commit_files, git

    config = (work / ".gitsleep.yml").read_text(encoding="utf-8")
    commit_files(work, {".gitsleep.yml": config + "budget:\n  max_calls: 5\n"}, "small budget")
    git(work, "push", "--quiet", "origin", "main")
    edit(work, SCRIBE, BETTER)
    outcome = review(work)
    assert outcome.exit_code == 6 and outcome.error is not None
    assert "30 of them pick calls for its description: 10 trigger queries x 1 sample(s) x " \
           "3 sides" in outcome.error
