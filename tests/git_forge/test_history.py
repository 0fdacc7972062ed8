"""Reading a skill's recorded epochs back: a note parsed as data anyone could have written,
dates to the minute in UTC, and the held-out points of a chart."""

from __future__ import annotations

import json

from gitsleep.git_forge.history import diagnostics_note, utc_minute


def test_a_note_is_read_as_typed_facts_and_garbage_as_none() -> None:
    facts = diagnostics_note(json.dumps({"skill": "brief-writer", "decision": "accepted"})
                             .encode())
    assert facts is not None and (facts.skill, facts.decision) == ("brief-writer", "accepted")
    assert diagnostics_note(b"not json") is None and diagnostics_note(None) is None
    assert diagnostics_note(b"[1, 2]") is None


def test_a_field_of_the_wrong_type_reads_as_unknown() -> None:
    facts = diagnostics_note(json.dumps({"skill": "s", "decision": 3}).encode())
    assert facts is not None and facts.skill == "s" and facts.decision is None


def test_a_commit_date_is_shown_in_utc_to_the_minute() -> None:
    assert utc_minute("2026-11-28T16:45:12+01:00") == "2026-11-28 15:45"
