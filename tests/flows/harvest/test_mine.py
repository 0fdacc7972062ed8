"""The rule miner: a correction becomes a checked task, or says why not."""

from __future__ import annotations

from pathlib import Path

from gitsleep.flows.harvest.mine import checks_from, task_id
from tests.support.harvest import BRIEF, FIX, harvest
from tests.support.transcripts import (
    claude_file,
)


def test_corrections_map_onto_ops_or_say_why_not() -> None:
    assert checks_from(FIX) == ([{"op": "section_present", "arg": "Key Risks"},
                                 {"op": "max_chars", "arg": 300}], [])
    assert checks_from('You forgot to include "Internal only" at the top.')[0] == [
        {"op": "contains", "arg": "Internal only"}]
    assert checks_from("don't mention pricing")[0] == [{"op": "not_contains", "arg": "pricing"}]
    assert checks_from("it is missing the Timeline section")[0] == [
        {"op": "section_present", "arg": "Timeline"}]
    assert checks_from("Thanks, looks great!") == ([], [])
    assert checks_from("can you add more detail?") == (
        [], ["the correction does not name what was wrong"])
    assert checks_from("keep it under 100 words") == (
        [], ["a word limit has no rule op (max_chars counts characters)"])


def test_harvest_mines_one_checked_task_per_corrected_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    claude_file(home, repo, [(BRIEF, "Draft."), (FIX, "Fixed.")], session_id="s-1")
    claude_file(home, repo, [("Write a decision brief on retiring the v1 API.", "Draft."),
                             ("Thanks!", "You're welcome.")])
    claude_file(home, repo, [("Fix the flaky login test in CI please.", "Done.")])
    result = harvest(tmp_path, "claude", [home / ".claude" / "projects"])
    (record,) = result.records
    assert record == {
        "id": task_id(BRIEF), "prompt": BRIEF,
        "judge": {"kind": "rule", "checks": [{"op": "section_present", "arg": "Key Risks"},
                                             {"op": "max_chars", "arg": 300}]},
        "review": "pending",
        "source": {"tool": "claude", "session": "s-1", "time": record["source"]["time"],
                   "miner": "rules"},
    }
    assert record["source"]["time"].startswith("2026-11-20T09:")
    assert result.kept_sessions == 2
    assert result.session_drops == {"not about the skill": 1}
    assert result.task_drops == {"rules: no correction that maps onto a rule check": 1}


def test_the_id_is_a_stable_hash_of_the_normalised_prompt() -> None:
    assert task_id(BRIEF) == task_id("  " + BRIEF.upper().replace(" ", "\n  "))
    assert task_id(BRIEF) != task_id(BRIEF + "!")
    assert task_id(BRIEF).startswith("h-") and len(task_id(BRIEF)) == 14
