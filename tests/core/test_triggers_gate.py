"""The trigger gate covers the siblings: a description that wins val by taking a sibling's
requests is refused, naming the sibling and the requests."""

from __future__ import annotations

import json

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core import triggers as tr
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Answer, EpochSettings, Judge, Task, Trigger
from gitsleep.core.ports import ModelCall

SETTINGS = EpochSettings(model="m", optimizer_model="m", judge_model="m", rounds=1,
                         proposals=1)
SKILL = ("---\nname: scribe\ndescription: Helps with text.\n---\n# Scribe\n")
CATALOG = [tr.Listing("scribe", "Helps with text."),
           tr.Listing("release-notes", "Writes release notes for a version.")]
GREEDY = "Commit messages for a staged diff, and release notes for a version."


def task(tid: str, query: str, split: str, should: bool, expect: str | None = None) -> Task:
    return Task(tid, query, split, Judge("trigger"),  # type: ignore[arg-type]
                trigger=Trigger(should, expect))


TASKS = [
    task("c1", "commit message for my staged diff", "train", True),
    task("c2", "commit message for this diff", "val", True),
    task("c3", "staged diff commit message please", "val", True),
    task("c4", "a commit message for the staged diff", "val", True),
    task("r1", "release notes for version 2", "val", False, "release-notes"),
    task("c5", "commit the staged diff with a message", "test", True),
    task("r2", "release notes for the version 3", "test", False, "release-notes"),
]


class GreedyOptimizer(OfflineBackend):
    """The offline simulator, except that it proposes a description that also claims the
    sibling's requests (a real optimizer can write one)."""

    def complete(self, call: ModelCall) -> Answer:
        if call.context and "trigger_propose" in call.context:
            return Answer(text=json.dumps({"description": GREEDY}))
        return super().complete(call)


def test_a_candidate_that_takes_a_siblings_queries_is_refused_though_val_rises() -> None:
    picker = tr.Picker(CallRunner(OfflineBackend()), CATALOG, "scribe", SETTINGS)
    val = [t for t in TASKS if t.split == "val"]
    before = picker.score(val, "Helps with text.", "baseline", "val")
    after = picker.score(val, GREEDY, "candidate", "val")
    assert (before.accuracy("scribe"), after.accuracy("scribe")) == (0.25, 0.75)  # it rises
    trial = tr.judge("scribe", before, after, 0.0)
    assert not trial.accepted
    assert trial.reason == ("val 0.250 -> 0.750, but it takes a sibling's queries: sibling "
                            "release-notes would lose 'release notes for version 2'")


def test_a_night_with_only_a_greedy_candidate_opens_nothing() -> None:
    night, text = tr.run_triggers(TASKS, CATALOG, SKILL, SETTINGS, GreedyOptimizer(),
                                  skill="scribe")
    assert night.decision == "rejected" and text == SKILL
    assert [t.accepted for t in night.trials] == [False]
    assert "sibling release-notes would lose 'release notes for version 2'" in \
        night.trials[0].reason


def test_the_offline_night_raises_held_out_with_no_sibling_falling() -> None:
    night, text = tr.run_triggers(TASKS, CATALOG, SKILL, SETTINGS, OfflineBackend(),
                                  skill="scribe")
    assert night.decision == "accepted" and night.pr_eligible, night.reason
    assert night.siblings_fell == ""
    assert [(r.query, r.expected, r.before, r.after) for r in night.rows] == [
        ("commit the staged diff with a message", "scribe", "(no skill)", "scribe"),
        ("release notes for the version 3", "release-notes", "release-notes", "release-notes")]
    assert tr.desc.read(text) == night.description_after


def test_a_sibling_whose_requests_go_elsewhere_falls_too() -> None:
    """Not taken by this skill, but no longer picked for its own request: it lost it."""
    def one(picked: str | None) -> tr.TriggerPass:
        return tr.TriggerPass("p", "test", "d", (tr.QueryPicks(
            "r", "release notes", False, "release-notes", "test", (picked,)),))

    lost = tr.siblings_lost("scribe", one("release-notes"), one("sql-helper"), 0.0)
    assert lost == {"release-notes": ["release notes"]}
    assert tr.siblings_lost("scribe", one("sql-helper"), one("release-notes"), 0.0) == {}


def test_a_description_that_would_write_a_secret_is_refused() -> None:
    secret = "sk-live-0123456789abcdef"

    class Leaky(OfflineBackend):
        def complete(self, call: ModelCall) -> Answer:
            if call.context and "trigger_propose" in call.context:
                return Answer(text=json.dumps({"description": f"Commit messages {secret}"}))
            return super().complete(call)

    night, text = tr.run_triggers(TASKS, CATALOG, SKILL, SETTINGS, Leaky(), skill="scribe",
                                  redact=lambda v: v.replace(secret, "[REDACTED]"))
    assert night.decision == "rejected" and text == SKILL
    assert night.trials[0].reason == "the description would write a secret"


def test_a_night_that_changed_both_surfaces_opens_a_pr_only_if_both_held_outs_rose() -> None:
    from gitsleep.core.models import EpochResult, SplitSummary

    def body(eligible: bool) -> EpochResult:
        split = SplitSummary(0.5, 1.0, 4)
        return EpochResult("scribe", "accepted", "1 edit(s) accepted", "mixed", "offline",
                           "m", "m", "m", split, split, split,
                           {"skill": (SKILL, SKILL + "\n- rule\n")}, pr_eligible=eligible)

    def night(eligible: bool) -> tr.TriggerNight:
        return tr.TriggerNight("scribe", "accepted", "description accepted", "Helps with text.",
                               "Commit messages.", pr_eligible=eligible)

    text = tr.desc.replace(SKILL + "\n- rule\n", "Commit messages.")
    assert tr.fold(body(True), night(True), text).pr_eligible
    assert not tr.fold(body(True), night(False), text).pr_eligible  # a sibling fell
    assert not tr.fold(body(False), night(True), text).pr_eligible
    folded = tr.fold(body(True), night(True), text)
    assert folded.documents["skill"][1] == text and folded.decision == "accepted"


def test_a_description_that_makes_the_body_tasks_fall_is_refused() -> None:
    """The agent reads the frontmatter too: a description that carries an instruction the
    body tasks fail is caught by re-scoring them before and after."""
    from gitsleep.core.models import Check

    body = [Task("b1", "write the commit message for the login fix", "test",
                 Judge("rule", (Check("not_contains", "TODO"),)))]
    harmful = tr.desc.replace(SKILL, 'Commit messages. Always include "TODO"')
    fell = tr.body_fell(body, {"skill": SKILL, "memory": None}, harmful, SETTINGS,
                        OfflineBackend())
    assert fell == "with the new description the body tasks fell on held-out 1.000 -> 0.000"
    assert tr.body_fell(body, {"skill": SKILL, "memory": None},
                        tr.desc.replace(SKILL, "Commit messages."), SETTINGS,
                        OfflineBackend()) == ""
    night = tr.TriggerNight("scribe", "accepted", "description accepted", "Helps with text.",
                            "Commit messages. Always include \"TODO\"", pr_eligible=True)
    undone = tr.refused(night, fell)
    assert (undone.decision, undone.pr_eligible, undone.description_after) == (
        "rejected", False, "Helps with text.")
    assert undone.reason.startswith("description refused: with the new description the body")


def test_proposals_that_give_no_description_are_said_so_not_called_a_perfect_train() -> None:
    class Chatty(OfflineBackend):
        def complete(self, call: ModelCall) -> Answer:
            if call.context and "trigger_propose" in call.context:
                return Answer(text="Sure! A better description would mention commits.")
            return super().complete(call)

    night, _ = tr.run_triggers(TASKS, CATALOG, SKILL, SETTINGS, Chatty(), skill="scribe")
    assert night.decision == "no_edits"
    assert night.reason == ('1 proposal(s) gave no new description (0 failed; a reply must be '
                            'JSON {"description": ...})')


def test_a_night_of_the_trigger_pass_alone_says_the_pass_decision() -> None:
    from gitsleep.core.models import EpochResult, SplitSummary

    none = SplitSummary(None, None, 0)
    alone = EpochResult("scribe", "no_edits", "no body tasks: the trigger pass decides",
                        "mixed", "offline", "m", "m", "m", none, none, none,
                        {"skill": (SKILL, SKILL)})
    night = tr.TriggerNight("scribe", "rejected", "1 description(s) tried; none was accepted",
                            "Helps with text.", "Helps with text.")
    folded = tr.fold(alone, night, SKILL)
    assert (folded.decision, folded.reason) == ("rejected", night.reason)
