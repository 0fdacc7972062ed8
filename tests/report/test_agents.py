"""Several agents: every place an epoch's scores are written shows each agent's,
names the aggregate, and says so when the change helps one agent by hurting another; a
night of one agent reads exactly as before."""

from __future__ import annotations

import json
from dataclasses import replace

from gitsleep import report
from gitsleep.base.redact import Redactor
from gitsleep.core.models import AgentSummary, EpochResult, SplitSummary
from gitsleep.core.outcome import PrResult, SkillSummary
from gitsleep.git_forge import record
from tests.report.test_report import TRAILERS, make_result, parsed_trailers

SMALL = AgentSummary("small", "qwen0.5b", "openai", SplitSummary(0.0, 0.5, 4),
                     SplitSummary(0.25, 0.5, 3), SplitSummary(0.0, 1.0, 2))
LARGE = AgentSummary("large", "qwen1.5b", "openai", SplitSummary(0.5, 0.5, 4),
                     SplitSummary(0.75, 0.5, 3), SplitSummary(0.5, 1.0, 2))


def two_agents(*agents: AgentSummary, gate: str = "mean") -> EpochResult:
    return replace(make_result(), agents=list(agents or (SMALL, LARGE)), agent_gate=gate)


def test_each_agent_gets_a_val_and_a_held_out_trailer_after_the_aggregate() -> None:
    message = report.commit_message(two_agents(), TRAILERS, Redactor())
    keys = [key for key, _ in parsed_trailers(message)]
    assert keys == ["Gitsleep-Skill", "Gitsleep-Decision", "Gitsleep-Metric", "Gitsleep-Val",
                    "Gitsleep-Test", "Gitsleep-Val-small", "Gitsleep-Test-small",
                    "Gitsleep-Val-large", "Gitsleep-Test-large", "Gitsleep-Base",
                    "Gitsleep-Tasks", "Gitsleep-Model", "Gitsleep-Inputs"]
    parsed = dict(parsed_trailers(message))
    assert parsed["Gitsleep-Val-small"] == "0.250 -> 0.500"
    assert parsed["Gitsleep-Test-large"] == "0.500 -> 1.000"


def test_an_agent_split_without_scores_reads_as_the_aggregate_does() -> None:
    unscored = replace(SMALL, test=SplitSummary(None, None, 0))
    parsed = dict(parsed_trailers(report.commit_message(two_agents(unscored), TRAILERS,
                                                        Redactor())))
    assert parsed["Gitsleep-Test-small"] == "n/a -> n/a"


def test_recorded_agent_scores_read_back_from_the_trailers_in_order() -> None:
    message = report.commit_message(two_agents(), TRAILERS, Redactor())
    found = record.agent_scores(dict(parsed_trailers(message)))
    assert found == [record.RecordedAgent("small", (0.25, 0.5), (0.0, 1.0)),
                     record.RecordedAgent("large", (0.75, 0.5), (0.5, 1.0))]
    assert record.agent_scores(dict(parsed_trailers(
        report.commit_message(make_result(), TRAILERS, Redactor())))) == []


def test_a_forged_agent_trailer_is_not_read_as_an_agent() -> None:
    forged = {"Gitsleep-Val-Not_An_Agent": "0.1 -> 0.2", "Gitsleep-Test-x": "nan -> inf",
              "Gitsleep-Valx": "0.1 -> 0.2"}
    assert record.agent_scores(forged) == [record.RecordedAgent("x", (None, None),
                                                                (None, None))]


def test_the_commit_body_lists_each_agent_and_names_a_trade_off() -> None:
    message = report.commit_message(two_agents(), TRAILERS, Redactor())
    body = message.split("\n\n", 1)[1]
    assert "Scores per agent (gate.agents: mean (the mean over agents)):" in body
    assert "  small (qwen0.5b): val 0.250 -> 0.500, held-out 0.000 -> 1.000" in body
    assert ("  Trade-off: the change helps small (val 0.250 -> 0.500) and hurts large "
            "(val 0.750 -> 0.500)") in body
    assert "Trade-off" not in report.commit_message(
        two_agents(SMALL, replace(LARGE, val=SplitSummary(0.5, 0.75, 3))), TRAILERS,
        Redactor())


def test_one_agent_renders_as_before() -> None:
    result = make_result()
    assert result.agents == []
    message = report.commit_message(result, TRAILERS, Redactor())
    assert "agent" not in message.split("\n\n", 1)[1].split("Gitsleep-Skill")[0].lower()
    data = report.diagnostics(result, {}, redactor=Redactor())
    assert "agents" not in data and "agent_gate" not in data
    body = report.pr_body(result, rerun="", redactor=Redactor())
    assert "per agent" not in body
    summary = report.json_summary(result, branch=None, commit=None, pr=PrResult(),
                                  diagnostics_path=None, redactor=Redactor())
    assert "agents" not in summary.to_json()


def test_diagnostics_and_the_note_carry_the_agents_and_the_aggregate() -> None:
    data = report.diagnostics(two_agents(gate="min"), {}, redactor=Redactor())
    assert data["agent_gate"] == "min"
    assert [a["name"] for a in data["agents"]] == ["small", "large"]
    assert data["agents"][0]["val"]["candidate"] == 0.5
    assert data["agent_tradeoffs"] == [
        "helps small (val 0.250 -> 0.500) and hurts large (val 0.750 -> 0.500)"]
    note = json.loads(report.Diagnostics(None, data).note_text("abc", "b"))  # type: ignore[arg-type]
    assert note["agents"] == data["agents"]


def test_the_pr_body_has_a_table_per_agent_after_the_scores() -> None:
    body = report.pr_body(two_agents(gate="min"), rerun="", redactor=Redactor())
    assert body.index("### Scores (") < body.index("### Scores per agent") < body.index(
        "### Learned block diff")
    assert "| agent | model | val | held-out (test) | n (val / held-out) |" in body
    assert "| `small` | `qwen0.5b` | 0.250 -> 0.500 | 0.000 -> 1.000 | 3 / 2 |" in body
    assert "`gate.agents: min`: the lowest agent's score" in body
    assert ("> - it helps small (val 0.250 -> 0.500) and hurts large (val 0.750 -> 0.500)"
            in body)


def test_the_pr_body_with_agents_still_fits_the_limit() -> None:
    result = two_agents()
    full = report.pr_body(result, rerun="", redactor=Redactor())
    cut = report.pr_body(result, rerun="", redactor=Redactor(), limit=len(full) - 300)
    assert len(cut) <= len(full) - 300 and "### Scores per agent" in cut


def test_a_held_out_trade_off_is_named_too() -> None:
    held_out = replace(LARGE, val=SplitSummary(0.5, 0.5, 3), test=SplitSummary(1.0, 0.5, 2))
    assert report.agent_tradeoffs(two_agents(SMALL, held_out)) == [
        "helps small (held-out 0.000 -> 1.000) and hurts large (held-out 1.000 -> 0.500)"]


def test_consolidate_json_lists_each_agent() -> None:
    summary = report.json_summary(two_agents(), branch="b", commit=None, pr=PrResult(),
                                  diagnostics_path=None, redactor=Redactor())
    agents = summary.to_json()["agents"]
    assert agents[0] == {"name": "small", "model": "qwen0.5b", "backend": "openai",
                         "val": {"baseline": 0.25, "candidate": 0.5, "n": 3},
                         "test": {"baseline": 0.0, "candidate": 1.0, "n": 2}}
    assert SkillSummary.from_json(summary.to_json()) == summary


def test_without_a_recorded_model_line_the_model_trailer_names_every_agents_model() -> None:
    assert record.trailer_values(two_agents(), {})[record.MODEL] == "qwen0.5b, qwen1.5b / gpt-4.1"
    assert record.trailer_values(make_result(), {})[record.MODEL] == "gpt-4.1-mini / gpt-4.1"
