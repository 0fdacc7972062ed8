"""The LLM miner's candidates: those that cannot measure the skill are dropped."""

from __future__ import annotations

from pathlib import Path

from gitsleep.base.redact import Redactor
from gitsleep.flows.harvest.privacy import Masker


def test_llm_candidates_that_cannot_measure_the_skill_are_dropped(tmp_path: Path) -> None:
    """Replies the 1.5B model gave on the harvest fixtures (benchmarks/real_model/results.md):
    each parses and names valid ops, yet none is a task that measures the skill."""
    from gitsleep.flows.harvest.mine import Candidate, to_record
    from gitsleep.flows.harvest.sessions import Session, Turn

    session = Session("claude", "s", tmp_path, turns=[
        Turn("Write a decision brief on moving the search index to OpenSearch 2.", "Draft."),
        Turn("No, add a Key Risks section.", "Done.")])
    rule = lambda *checks: {"kind": "rule", "checks": [  # noqa: E731
        {"op": op, "arg": arg} for op, arg in checks]}
    cases = {
        "Write a decision brief on moving the search index to OpenSearch 2. Add a Key Risks "
        "section.": (rule(("section_present", "Key Risks")),
                     "the prompt repeats the person's correction (it would give the check "
                     "away)"),
        "Draft.": (rule(("section_present", "Key Risks")),
                   "the prompt is not a request (too short)"),
        "Write a decision brief on moving the search index to OpenSearch 2 for the team.": (
            rule(("not_contains", "Key Risks")),
            "no valid judge (its checks ask for one answer verbatim or contradict the "
            "person's correction)"),
        "Write a decision brief on moving search to OpenSearch 2, for the support leads.": (
            rule(("equals", "Draft")),
            "no valid judge (its checks ask for one answer verbatim or contradict the "
            "person's correction)"),
    }
    for prompt, (judge, reason) in cases.items():
        record, why = to_record(Candidate(prompt, judge, session, "llm"), Masker(Redactor()))
        assert (record, why) == (None, reason), prompt
    record, why = to_record(Candidate(
        "Write a decision brief on moving search to OpenSearch 2, for the support leads.",
        rule(("section_present", "Key Risks"), ("equals", "Draft")), session, "llm"),
        Masker(Redactor()))
    assert why == "" and record["judge"]["checks"] == [
        {"op": "section_present", "arg": "Key Risks"}]
