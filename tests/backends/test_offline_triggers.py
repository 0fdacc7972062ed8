"""The offline simulator's picks (word overlap) and description proposals."""

from __future__ import annotations

import json

from gitsleep.backends.offline_triggers import simulate_description, simulate_pick, words

CATALOG = [["notes", "Writes release notes."], ["sql-helper", "Fixes SQL queries."]]


def pick(query: str) -> str | None:
    value = json.loads(simulate_pick({"catalog": CATALOG, "query": query}))["skill"]
    return value if value is None else str(value)


def test_the_most_shared_words_win_and_none_shared_picks_no_skill() -> None:
    assert pick("write the release notes for 2.0") == "notes"
    assert pick("my SQL query is slow") == "sql-helper"
    assert pick("tell me a joke") is None
    assert words("The Queries, and NOTES!") == ["query", "note"]


def test_a_proposal_drops_words_of_taken_queries_and_adds_missed_ones_no_sibling_uses(
        ) -> None:
    reply = simulate_description({
        "skill": "notes", "description": "Writes release notes and SQL.",
        "missed": ["summarise the changelog"], "taken": ["fix this SQL"],
        "siblings": [["sql-helper", "Fixes SQL queries."]]})
    assert json.loads(reply) == {
        "description": "Notes. Use for write, release, note, summarise, changelog."}
