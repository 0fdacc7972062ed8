"""Why a night learned nothing: the agent ignored the rules, or the rules did not help."""

from __future__ import annotations

import json
from dataclasses import replace

from gitsleep import report
from gitsleep.base.redact import Redactor
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall

IMPACT = Check("section_present", "Impact")
SEVERITY = Check("regex", "Severity:\\s*[1-4]\\b")
SKILL = "# Outage summary\n\nSummarise the outage.\n"


def tasks() -> list[Task]:
    judge = Judge("rule", (IMPACT, SEVERITY))
    return ([Task(f"train-{i}", f"Summarise outage {i}.", "train", judge) for i in range(3)]
            + [Task(f"val-{i}", f"Summarise incident {i}.", "val", judge) for i in range(3)])


def settings() -> EpochSettings:
    return replace(EpochSettings(model="a", optimizer_model="o", judge_model="o"),
                   rounds=1, proposals=1, workers=1)


class Agent(Backend):
    """Proposes one rule; answers either ignore the documents or react to the rule
    without ever writing what the checks want."""

    name = "scripted"

    def __init__(self, reacts: bool) -> None:
        self.reacts = reacts

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            edit = {"op": "add", "content": 'Every answer must have a section headed "## Impact".'}
            return Answer(json.dumps({"edits": [edit]}), None, 1, 1)
        system = call.messages[0][1]
        if self.reacts and "## Impact" in system:
            return Answer("People were affected, and it was bad.", None, 1, 1)
        return Answer("It broke and we fixed it.", None, 1, 1)


def test_answers_unchanged_under_every_candidate_read_as_the_agent_ignoring_the_rules():
    result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(), Agent(False),
                       skill="outage")
    assert result.decision == "rejected"
    verdicts = {v["check"]: v["verdict"] for v in result.diagnosis}
    assert verdicts == {IMPACT.label(): "ignored", SEVERITY.label(): "ignored"}
    assert "agent ignored the rules" in result.reason
    assert "unchanged under all 1 candidate(s)" in result.diagnosis[0]["detail"]


def test_changed_answers_that_still_fail_read_as_the_rules_not_helping():
    result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(), Agent(True),
                       skill="outage")
    verdicts = {v["check"]: v["verdict"] for v in result.diagnosis}
    assert verdicts == {IMPACT.label(): "did_not_help", SEVERITY.label(): "did_not_help"}
    assert "rules did not help" in result.reason
    text = report.commit_message(result, {}, Redactor([]))
    assert "Every candidate tied; per failing check:" in text
    assert "the check still failed on all of them" in text
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    assert "Why no candidate beat the baseline" in body
    assert report.diagnostics(result, {}, redactor=Redactor([]))["diagnosis"] == result.diagnosis


def test_an_accepted_night_has_no_tie_diagnosis():
    from gitsleep.backends.offline import OfflineBackend

    result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(), OfflineBackend(),
                       skill="outage")
    assert result.decision == "accepted" and result.diagnosis == []
