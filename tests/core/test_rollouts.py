"""Contrastive rollouts: K answers per train task, a better and a worse one shown together."""

from __future__ import annotations

import json
from dataclasses import replace

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core import documents as d
from gitsleep.core import rollouts
from gitsleep.core.epoch import call_ceiling, run_epoch
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall

IMPACT = Check("section_present", "Impact")
SEVERITY = Check("regex", "Severity:\\s*[1-4]\\b")
SKILL = "# Outage summary\n\nSummarise the outage.\n"


def tasks() -> list[Task]:
    judge = Judge("rule", (IMPACT, SEVERITY))
    out = [Task(f"train-{i}", f"Summarise outage number {i}.", "train", judge) for i in range(4)]
    out += [Task(f"val-{i}", f"Summarise incident number {i}.", "val", judge) for i in range(3)]
    return out


def settings(**overrides: object) -> EpochSettings:
    base = EpochSettings(model="agent", optimizer_model="optimizer", judge_model="optimizer",
                         rounds=1, proposals=1, workers=1)
    return replace(base, **overrides)


class SometimesBackend(Backend):
    """An agent that writes the Impact section in some sampled answers (seed-dependent),
    always once a rule asks for it; an optimizer that proposes that rule and keeps the
    prompts it was shown."""

    name = "scripted"

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []
        self.prompts: list[str] = []

    def complete(self, call: ModelCall) -> Answer:
        self.calls.append(call)
        if call.purpose == "propose":
            self.prompts.append(call.messages[-1][1])
            edit = {"op": "add", "content": 'Every answer must have a section headed "## Impact".',
                    "rationale": "the better answers have it"}
            return Answer(json.dumps({"edits": [edit]}), None, 10, 10)
        system = call.messages[0][1]
        lucky = call.temperature > 0 and (call.seed or 0) % 2 == 1
        if "## Impact" in system or lucky:
            return Answer("## Impact\nEveryone.\nSeverity: 2", None, 10, 10)
        return Answer("It broke and we fixed it.", None, 10, 10)


def test_disagreeing_samples_give_the_optimizer_a_better_and_a_worse_answer_side_by_side():
    backend = SometimesBackend()
    result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(rollouts=3), backend,
                       skill="outage")
    sampled = [c for c in backend.calls if c.purpose == "answer" and c.temperature > 0]
    # 4 train tasks x (3 - 1) sampled answers, each with its own seed, before the proposal
    assert len(sampled) == 8
    assert {c.seed for c in sampled} == {rollouts.SEED_BASE + 1, rollouts.SEED_BASE + 2}
    assert all(c.temperature == rollouts.TEMPERATURE for c in sampled)
    prompt = backend.prompts[0]
    assert "<<<BETTER_ANSWER" in prompt and "<<<WORSE_ANSWER" in prompt
    assert 'the answer must have a section headed "Impact"' in prompt.split("<<<BETTER_ANSWER")[0]
    assert result.proposals[0].contrasts >= 1
    assert any(p.split == "rollouts" for p in result.passes)
    assert result.decision == "accepted"
    assert result.cost.calls <= call_ceiling(settings(rollouts=3), tasks(), with_memory=False)


def test_without_rollouts_nothing_is_sampled_and_the_prompt_has_no_contrast():
    backend = SometimesBackend()
    run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(), backend, skill="outage")
    assert not [c for c in backend.calls if c.purpose == "answer" and c.temperature > 0]
    assert "BETTER_ANSWER" not in backend.prompts[0]


def test_where_every_sample_fails_alike_the_reflection_is_todays():
    backend = OfflineBackend()  # deterministic: every sample is the same answer
    on = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(rollouts=3), backend,
                   skill="outage")
    off = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(), OfflineBackend(),
                    skill="outage")
    assert [p.contrasts for p in on.proposals] == [0] * len(on.proposals)
    assert on.documents == off.documents and on.decision == off.decision
    assert on.cost.calls == off.cost.calls + 8  # the samples are counted like every answer


def test_rollouts_are_cached_like_every_answer():
    from gitsleep.core.cache import ResponseCache

    cache = ResponseCache()
    first = SometimesBackend()
    run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(rollouts=3), first,
              skill="outage", cache=cache)
    again = SometimesBackend()
    run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(rollouts=3), again,
              skill="outage", cache=cache)
    assert again.calls == []


def test_the_ceiling_counts_the_sampled_answers_of_every_round():
    base = call_ceiling(settings(rounds=2), tasks(), with_memory=False)
    assert call_ceiling(settings(rounds=2, rollouts=3), tasks(), with_memory=False) == \
        base + 2 * (3 - 1) * 4
    assert d.learned_rules(SKILL) == []


def test_the_benchmark_floor_counts_the_sampled_answers_so_calls_over_floor_stays_one():
    from benchmarks.bench_calls import floor_of

    for backend in (SometimesBackend(), OfflineBackend()):
        result = run_epoch(tasks(), {"skill": SKILL, "memory": None}, settings(rollouts=3),
                           backend, skill="outage")
        assert result.cost.calls == floor_of(result, tasks()).total


def test_a_sampled_answer_that_echoes_the_template_does_not_pass_as_the_better_one():
    """Integrity holds for sampled answers too: one that repeats the learned
    template's placeholder fails, as in replay, so it is never shown as the better answer."""
    from gitsleep.core.calls import CallRunner

    class Echo(Backend):
        name = "scripted"

        def complete(self, call: ModelCall) -> Answer:
            return Answer("## Impact\n<write the impact here>\nSeverity: 2", None, 10, 10)

    skill = d.apply_edits(SKILL, [d.Edit("template",
                                         "## Impact\n<write the impact here>\nSeverity: <1-4>")])[0]
    out = rollouts.sample(CallRunner(Echo()), tasks()[:1], {"skill": skill, "memory": None},
                          settings(rollouts=2))
    [sampled] = out["train-0"]
    assert sampled.score is not None and sampled.score.hard == 0.0
    assert sampled.score.reason.startswith("integrity:"), sampled.score.reason
