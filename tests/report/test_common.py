"""What the report's parts share: the per-group scores, typed, with their JSON shape."""

from __future__ import annotations

from gitsleep.report.common import GroupScore, plural, simulated


def test_a_group_score_writes_the_keys_diagnostics_json_has_always_had() -> None:
    row = GroupScore("val", "format=json", 3, 0.25, 1.0)
    assert list(row.to_json().items()) == [("split", "val"), ("group", "format=json"), ("n", 3),
                                           ("baseline", 0.25), ("candidate", 1.0),
                                           ("wrong_baseline", 0), ("wrong_candidate", 0)]


def test_plural_and_simulated() -> None:
    assert (plural(1, "task"), plural(2, "task")) == ("1 task", "2 tasks")
    assert simulated("command+offline") and not simulated("openai")
