"""The Action's outputs from saved `consolidate --json` results: the first skill's values,
every result handed on as saved (floats rounded), multi-line values fenced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.report.action_outputs import github_output_lines, load_results, outputs_for

RESULT = {"skill": "brief-writer", "decision": "accepted", "reason": "r", "metric": "mixed",
          "val": {"baseline": 0.25, "candidate": 0.1 + 0.2, "n": 6},
          "test": {"baseline": 0.25, "candidate": 1.0, "n": 6},
          "pr": {"operation": "created", "number": 7, "url": "https://example.test/pr/7"},
          "commit": "abc123"}


def test_the_saved_results_become_the_step_outputs(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(RESULT))
    (tmp_path / "b.json").write_text("")  # an empty file is skipped
    (saved,) = load_results(tmp_path)
    outputs = outputs_for([saved.summary], [saved.saved])
    assert outputs["decision"] == "accepted" and outputs["val-candidate"] == "0.3"
    assert outputs["pr-number"] == "7" and outputs["commit"] == "abc123"
    assert json.loads(outputs["results"])[0]["val"]["candidate"] == 0.3
    assert outputs_for([])["decision"] == ""


def test_a_file_that_is_not_a_result_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{oops")
    with pytest.raises(ValueError, match="bad.json: not JSON"):
        load_results(tmp_path)
    (tmp_path / "bad.json").write_text('{"no": "skill"}')
    with pytest.raises(ValueError, match="bad.json: not a gitsleep consolidate result"):
        load_results(tmp_path)
    assert load_results(tmp_path / "missing") == []


def test_multi_line_values_get_a_delimiter_no_value_can_hold() -> None:
    text = github_output_lines({"one": "x", "many": "a\nmany=injected"})
    lines = text.splitlines()
    assert lines[0] == "one=x"
    start, end = lines[1], lines[-1]
    assert start.startswith("many<<gitsleep_") and end == start.split("<<", 1)[1]
    assert lines[2:4] == ["a", "many=injected"]


def test_a_nights_trigger_pass_gives_the_trigger_outputs() -> None:
    """The first skill's trigger accuracy as scalar outputs shaped like the score outputs,
    and every skill whose night ran a trigger pass in `triggers`."""
    from gitsleep.core.outcome import SkillSummary

    scribe = {**RESULT, "skill": "scribe", "triggers": {
        "decision": "accepted", "pr_eligible": True,
        "val": {"baseline": 0.4, "candidate": 1.0, "n": 5},
        "test": {"baseline": 0.4, "candidate": 0.1 + 0.7, "n": 5}}}
    outputs = outputs_for([SkillSummary.from_json(scribe), SkillSummary.from_json(RESULT)])
    assert (outputs["trigger-val-baseline"], outputs["trigger-val-candidate"],
            outputs["trigger-test-baseline"], outputs["trigger-test-candidate"]) == (
        "0.4", "1.0", "0.4", "0.8")
    assert json.loads(outputs["triggers"]) == [{
        "skill": "scribe", "decision": "accepted", "pr_eligible": True,
        "val": {"baseline": 0.4, "candidate": 1.0, "n": 5},
        "test": {"baseline": 0.4, "candidate": 0.8, "n": 5}}]
    plain = outputs_for([SkillSummary.from_json(RESULT)])
    assert plain["trigger-val-baseline"] == plain["trigger-test-candidate"] == ""
    assert plain["triggers"] == "[]"
