"""Several agents per night: every pass scores each agent, and the gate refuses
an edit that lifts one agent by breaking another.

The two simulated agents disagree by design: `offline` reads every directive, while
`offline-recent-3` (a gitsleep addition to the simulator) keeps only the last three, so a
rule appended to the learned block pushes the first hand-written one out of its reach.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from gitsleep import report
from gitsleep.backends.offline import OfflineBackend, recent_only
from gitsleep.base.errors import BackendError
from gitsleep.core import agents, gate, reflect
from gitsleep.core.calls import CallRunner
from gitsleep.core.epoch import budget_note, call_ceiling, run_epoch
from gitsleep.core.models import (
    AgentRef,
    Answer,
    Check,
    EpochSettings,
    GateSettings,
    Judge,
    PassResult,
    Task,
    TaskResult,
)
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.replay import score_split
from tests.core.test_epoch import SpyBackend
from tests.core.test_learning_judgment import DOC, PROMPTS, TASKS, example

# Hand-written: three directives; the first gives two of the checks (heading and its text).
SKILL = ('# Release notes\n\nUse the heading "## Decision"\nAlways include "Owner:"\n'
         'Always include "Deadline:"\n')
CHECKS = (Check("section_present", "Decision"), Check("contains", "## Decision"),
          Check("contains", "Owner:"), Check("contains", "Deadline:"), Check("contains", "Risk:"))
BOTH = (AgentRef("full", "offline", "offline"), AgentRef("short", "offline-recent-3", "offline"))


def tasks() -> list[Task]:
    splits = ["train"] * 4 + ["val"] * 4 + ["test"] * 4
    return [Task(f"t{i}", f"Write the note for change number {i}.", split,
                 Judge("rule", CHECKS)) for i, split in enumerate(splits)]


def settings(*refs: AgentRef, how: str = "mean", **more: object) -> EpochSettings:
    base = EpochSettings(model=refs[0].model if refs else "offline", optimizer_model="offline",
                         judge_model="offline", agents=tuple(refs),
                         gate=GateSettings(agents=how), rounds=1, proposals=1)
    return replace(base, **more)


def night(*refs: AgentRef, how: str = "mean", **more: object):  # type: ignore[no-untyped-def]
    backend = SpyBackend()
    result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(*refs, how=how, **more),
                       backend, skill="notes")
    return result, backend


def test_the_recent_agent_keeps_only_the_last_directives() -> None:
    doc = SKILL + '\n- Always include "Risk: none"\n'
    kept = recent_only([doc], "offline-recent-3")[0]
    assert '## Decision' not in kept and 'Always include "Risk: none"' in kept
    assert recent_only([doc], "offline") == [doc]


def test_one_agent_alone_accepts_the_edit_the_other_agent_regresses_on() -> None:
    alone, _ = night(BOTH[0])
    assert alone.decision == "accepted" and alone.pr_eligible
    assert [a.name for a in alone.agents] == ["full"]
    learned = alone.documents["skill"][1]
    # the other agent, under the documents the one-agent gate accepted: worse on held-out
    short = settings(BOTH[1])
    base, final = (run_epoch_scores(doc, short) for doc in (SKILL, learned))
    assert final < base


def run_epoch_scores(document: str, chosen: EpochSettings) -> float:
    """The held-out mean of one agent under `document` (a night with no train failure
    to learn from would do too; scoring directly keeps it short)."""
    test = agents.expand([t for t in tasks() if t.split == "test"], chosen.agents)
    result = score_split(CallRunner(OfflineBackend()), test, {"skill": document}, chosen,
                         label="x", split="test")
    assert result.mean is not None
    return result.mean


def test_two_agents_refuse_an_edit_that_lifts_one_by_breaking_the_other() -> None:
    result, backend = night(*BOTH)
    assert result.decision == "rejected" and not result.changed
    trial = next(t for t in result.trials if t.candidate is not None)
    assert not trial.accepted
    assert "hurts agent short" in trial.reason and "helps full" in trial.reason
    assert "the best rose val 0.400 -> 0.650, but it hurts agent short" in result.reason
    # the mean of the two rose: only the per-agent rule refused it
    assert trial.baseline is not None and trial.candidate > trial.baseline
    assert {c.agent for c in backend.calls if c.purpose == "answer"} == {"full", "short"}
    assert {(c.agent, c.model) for c in backend.calls if c.purpose == "answer"} == {
        ("full", "offline"), ("short", "offline-recent-3")}


def test_min_aggregate_refuses_on_the_weakest_agent() -> None:
    result, _ = night(*BOTH, how="min")
    trial = next(t for t in result.trials if t.candidate is not None)
    assert not trial.accepted and "min of 2 agents" in trial.reason
    assert trial.candidate is not None and trial.baseline is not None
    assert trial.candidate < trial.baseline  # the weakest agent's mean fell
    assert result.agent_gate == "min"


def test_each_agent_is_scored_and_summarised_on_every_split() -> None:
    result, _ = night(*BOTH)
    assert [(a.name, a.model) for a in result.agents] == [("full", "offline"),
                                                         ("short", "offline-recent-3")]
    for summary in result.agents:
        assert summary.val.n == 4 and summary.test.n == 4
        assert summary.val.baseline is not None and summary.test.baseline is not None
    assert result.val.n == 4  # tasks, not answers
    assert result.agent_model == "offline, offline-recent-3"
    every_pass = [p for p in result.passes if p.split in ("val", "test")]
    assert all({t.task_id.rsplit("@", 1)[1] for t in p.tasks} == {"full", "short"}
               for p in every_pass if p.stopped_after is None)


def test_agreeing_agents_accept_together_and_each_gains() -> None:
    same = (AgentRef("a", "offline", "offline"), AgentRef("b", "offline", "offline"))
    result, backend = night(*same)
    assert result.decision == "accepted" and result.pr_eligible
    assert all(a.test.candidate is not None and a.test.baseline is not None
               and a.test.candidate > a.test.baseline for a in result.agents)
    keys = {c.cache_key() for c in backend.calls if c.purpose == "answer"}
    # the same model answers for both, but each agent's answers are its own cache entries
    assert len(keys) == len([c for c in backend.calls if c.purpose == "answer"])


def test_a_night_of_one_agent_is_unchanged() -> None:
    result, backend = night()
    assert result.agents == [] and result.agent_model == "offline"
    assert all(c.agent == "" and "@" not in str(c.messages) for c in backend.calls)
    assert all("@" not in t.task_id for p in result.passes for t in p.tasks)


def test_the_call_ceiling_counts_every_agent() -> None:
    one = call_ceiling(settings(BOTH[0]), tasks(), False)
    two = call_ceiling(settings(*BOTH), tasks(), False)
    reflects = 2 * 1 * 1  # each proposal's reflect call and its retry: not per agent
    assert two - reflects == 2 * (one - reflects)
    assert call_ceiling(settings(*BOTH), agents.expand(tasks(), BOTH), False) == two


def _pass(values: dict[str, float]) -> PassResult:
    return PassResult("x", "val", "v", [TaskResult(i, "val", [], value=v, hard=v, soft=v)
                                        for i, v in values.items()])


def test_an_agent_falling_within_noise_does_not_refuse() -> None:
    ids = {"a": [f"t{i}@a" for i in range(6)], "b": [f"t{i}@b" for i in range(6)]}
    before = _pass({**{i: 0.0 for i in ids["a"]}, **{i: 1.0 for i in ids["b"]}})
    # b loses one task of six: the interval of its paired change reaches zero
    after = _pass({**{i: 1.0 for i in ids["a"]}, **{i: 1.0 for i in ids["b"][1:]},
                   ids["b"][0]: 0.0})
    accepted, why, _, _ = gate.judge_trial(before, after, GateSettings(), None, ids)
    assert accepted, why
    assert gate.agent_fell(gate.paired(before, after), ids) == ""
    # b loses every task: beyond noise, refused, naming both
    worse = _pass({**{i: 1.0 for i in ids["a"]}, **{i: 0.5 for i in ids["b"]}})
    accepted, why, _, _ = gate.judge_trial(before, worse, GateSettings(), None, ids)
    assert not accepted and "hurts agent b 1.000 -> 0.500" in why and "helps a" in why


def test_reflection_says_which_agent_failed_which_task() -> None:
    both = agents.expand(tasks(), BOTH)
    by_id = {t.id: t for t in both}
    failed = TaskResult("t0@short", "train", [], hard=0.0, soft=0.5, value=0.25)
    passed = TaskResult("t0@full", "train", [], hard=1.0, soft=1.0, value=1.0)
    prompt = reflect.build_prompt(reflect.Evidence("skill", SKILL, [failed], [passed], by_id, []),
                                  2)
    assert "Failed by: short; passed by: full" in prompt
    assert "<<<TASK t0\n" in prompt and "t0@" not in prompt


def test_thrifty_screens_with_the_cheapest_agent_first() -> None:
    priced = settings(*BOTH, search="thrifty",
                      prices={"offline": {"prompt": 5.0, "completion": 5.0},
                              "offline-recent-3": {"prompt": 0.1, "completion": 0.1}})
    assert agents.cheapest_first(priced) == ["short", "full"]
    assert agents.cheapest_first(settings(*BOTH)) == ["full", "short"]
    backend = SpyBackend()
    run_epoch(tasks(), {"skill": SKILL, "memory": None}, priced, backend, skill="notes")
    answers = [c for c in backend.calls if c.purpose == "answer"]
    first_candidate = next(i for i, c in enumerate(answers) if "Risk" in str(c.messages))
    assert answers[first_candidate].agent == "short"  # the screen, before any val pass


class Scripted(Backend):
    """An optimizer that always replies with the same edits."""

    name = "scripted"

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def complete(self, call: ModelCall) -> Answer:
        return Answer(self.reply)


def test_a_worked_example_from_a_train_task_is_kept_when_several_agents_answer_it() -> None:
    both = agents.expand(list(TASKS.values()), BOTH)
    line = example(PROMPTS["t1"], "Verdict: reject")
    reply = json.dumps({"edits": [{"op": "add", "content": line, "rationale": "a case"}]})
    failing = [TaskResult(f"t1@{a.name}", "train", [], hard=0.0, soft=0.5, value=0.25)
               for a in BOTH]
    evidence = reflect.Evidence("skill", DOC, failing, [], {t.id: t for t in both}, [])
    proposal = reflect.propose(CallRunner(Scripted(reply)), settings(*BOTH), evidence,
                               round_no=1, index=0)
    assert [e.content for e in proposal.edits] == [line], proposal.dropped


def test_progress_counts_tasks_and_agents() -> None:
    lines: list[str] = []
    run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(*BOTH), OfflineBackend(),
              skill="notes", progress=lines.append)
    assert "notes: scoring val (baseline, 4 tasks x 2 agents)" in lines


def test_no_pull_request_when_an_agent_falls_beyond_noise_on_held_out() -> None:
    """Val does not check the heading the short agent loses; held-out does: val accepts,
    held-out's aggregate rises, but one agent fell there, so no PR opens."""
    loose = (Check("contains", "Owner:"), Check("contains", "Risk:"))
    mixed = [replace(t, judge=Judge("rule", loose)) if t.split != "test" else t for t in tasks()]
    result = run_epoch(mixed, {"skill": SKILL, "memory": None}, settings(*BOTH), SpyBackend(),
                       skill="notes")
    assert result.decision == "accepted"
    assert result.test.baseline is not None and result.test.candidate is not None
    assert result.test.candidate > result.test.baseline  # the mean of both rose
    assert not result.pr_eligible
    assert "held-out: it hurts agent short" in result.reason
    assert result.reason.endswith("; an agent fell beyond noise on held-out, so no PR")
    assert report.agent_tradeoffs(result) == [
        "helps full (held-out 0.400 -> 1.000) and hurts short (held-out 0.400 -> 0.300)"]
    short = next(a for a in result.agents if a.name == "short")
    assert short.test.candidate is not None and short.test.baseline is not None
    assert short.test.candidate < short.test.baseline


def test_the_cost_estimate_reads_each_train_prompt_once_whoever_answers_it() -> None:
    """The optimizer reads each train task once, however many agents answer it."""
    priced = settings(*BOTH, max_cost=1.0, prices={m: {"prompt": 1.0, "completion": 1.0}
                                                   for m in ("offline", "offline-recent-3")})
    docs = {"skill": SKILL, "memory": None}
    assert (budget_note(priced, agents.expand(tasks(), BOTH), docs, 100)
            == budget_note(priced, tasks(), docs, 100))


class OneAgentDown(Backend):
    """Every call of one agent fails; the others are answered by the simulator."""

    name = "one-down"

    def __init__(self, dead: str) -> None:
        self.dead = dead
        self.alive = OfflineBackend()

    def complete(self, call: ModelCall) -> Answer:
        if call.agent == self.dead:
            return Answer(None, error="HTTP 500: down")
        return self.alive.complete(call)


def test_max_error_rate_applies_to_each_agents_calls() -> None:
    """Before: half the pass's calls failed under a tolerant max_error_rate of 0.6, all
    of them one agent's, and the pass went on as if that agent were not there."""
    val = agents.expand([t for t in tasks() if t.split == "val"], BOTH)
    tolerant = settings(*BOTH, max_error_rate=0.6)
    with pytest.raises(BackendError, match="agent short"):
        score_split(CallRunner(OneAgentDown("short")), val, {"skill": SKILL, "memory": None},
                    tolerant, label="baseline", split="val")
