from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep.backends.offline import OfflineBackend
from gitsleep.base.errors import BackendError, UsageError
from gitsleep.core import documents as d
from gitsleep.core.cache import ResponseCache
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import (
    Answer,
    Check,
    EpochResult,
    EpochSettings,
    GateSettings,
    Judge,
    PassResult,
    Task,
    to_dict,
)
from gitsleep.core.ports import Backend, ModelCall
from tests.support.nights import FollowsExceptOnHeldOut, pinned_on_held_out_night

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
SKILL = "# Brief writer\n\nWrite plainly.\n"


def rule(*checks: tuple) -> Judge:
    return Judge("rule", tuple(Check(*c) for c in checks))


def example_tasks() -> list[Task]:
    """The bundled demo's tasks, read directly (the loader is tested elsewhere)."""
    tasks = []
    for name, default in (("tasks.jsonl", None), ("held-out.jsonl", "test")):
        for line in (EXAMPLE / "evals" / "brief-writer" / name).read_text().splitlines():
            raw = json.loads(line)
            checks = tuple(Check(c["op"], c.get("arg")) for c in raw["judge"]["checks"])
            tasks.append(Task(raw["id"], raw["prompt"], default or raw["split"],
                              Judge("rule", checks)))
    return tasks


def settings(**overrides: object) -> EpochSettings:
    base = EpochSettings(model="offline", optimizer_model="offline", judge_model="offline")
    return replace(base, **overrides)


def skill_text() -> str:
    return (EXAMPLE / "skills" / "brief-writer" / "SKILL.md").read_text()


class SpyBackend(Backend):
    """The offline simulator, recording every call it is asked to make."""

    name = "offline"
    simulated = True

    def writes_free_values(self, purpose: str) -> bool:  # as the simulator it wraps
        return self.inner.writes_free_values(purpose)

    def __init__(self, inner: Backend | None = None) -> None:
        self.inner = inner or OfflineBackend()
        self.calls: list[ModelCall] = []
        self._lock = threading.Lock()

    def complete(self, call: ModelCall) -> Answer:
        with self._lock:
            self.calls.append(call)
        return self.inner.complete(call)


def test_demo_example_gains_on_held_out_and_rejects_a_train_only_edit() -> None:
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                       settings(), OfflineBackend(), skill="brief-writer")
    assert result.decision == "accepted", result.reason
    assert result.val.candidate > result.val.baseline
    assert result.test.baseline < 0.5 and result.test.candidate == 1.0
    assert result.pr_eligible
    rules = d.learned_rules(result.documents["skill"][1])
    assert 'Use the heading "## Key Risks"' in rules
    assert 'Always include "Internal only"' not in rules
    rejected = [o for o in result.rejected if "Internal only" in o.edit.content]
    # the train-only edit's val scoring stopped once it could no longer beat the gate
    assert rejected and "cannot beat the gate" in rejected[0].reason
    assert result.documents["skill"][1].startswith(skill_text())
    json.dumps(to_dict(result))  # diagnostics are JSON-ready
    full = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                     settings(early_stop=False), OfflineBackend(), skill="brief-writer")
    rejected = [o for o in full.rejected if "Internal only" in o.edit.content]
    assert rejected and "worse than the current best" in rejected[0].reason


def test_test_split_is_never_shown_to_the_optimizer_nor_used_to_choose() -> None:
    tasks = example_tasks()
    spy = SpyBackend()
    result = run_epoch(tasks, {"skill": skill_text(), "memory": None}, settings(), spy,
                       skill="brief-writer")
    test_tasks = [t for t in tasks if t.split == "test"]
    proposals = [c for c in spy.calls if c.purpose == "propose"]
    assert proposals
    for call in proposals:
        blob = json.dumps([call.messages, dict(call.context or {})])
        for task in test_tasks:
            assert task.id not in blob and task.prompt not in blob
    # Changing every held-out task changes no decision about edits.
    altered = [
        replace(t, judge=rule(("contains", "zzz-unreachable"))) if t.split == "test" else t
        for t in tasks
    ]
    again = run_epoch(altered, {"skill": skill_text(), "memory": None}, settings(),
                      OfflineBackend(), skill="brief-writer")
    assert again.documents == result.documents
    assert [t.reason for t in again.trials] == [t.reason for t in result.trials]
    assert again.test.candidate == 0.0 and not again.pr_eligible


def test_second_epoch_on_unchanged_inputs_makes_no_backend_call() -> None:
    cache = ResponseCache()
    first = SpyBackend()
    run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(), first,
              skill="brief-writer", cache=cache)
    second = SpyBackend()
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(),
                       second, skill="brief-writer", cache=cache)
    assert first.calls and second.calls == []
    assert result.cost.calls == 0 and result.cost.cache_hits > 0


def test_every_answer_call_is_distinct_within_an_epoch() -> None:
    spy = SpyBackend()
    run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(), spy,
              skill="brief-writer")
    keys = [c.cache_key() for c in spy.calls]
    assert len(keys) == len(set(keys))


def test_repeats_sample_each_task_and_average() -> None:
    spy = SpyBackend()
    tasks = [
        Task("t1", "p1", "train", rule(("contains", "Confidence"))),
        Task("v1", "p2", "val", rule(("contains", "Confidence"))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(gate=GateSettings(repeats=3), proposals=1), spy, skill="s")
    baseline = [p for p in result.passes if p.label == "baseline"]
    assert all(len(t.samples) == 3 for p in baseline for t in p.tasks)
    samples = {c.sample for c in spy.calls if c.purpose == "answer"}
    assert samples == {0, 1, 2}


def test_no_train_failure_means_no_edits_and_no_optimizer_call() -> None:
    spy = SpyBackend()
    tasks = [
        Task("t1", "p", "train", rule(("min_chars", 1))),
        Task("v1", "p", "val", rule(("min_chars", 1))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None}, settings(), spy, skill="s")
    assert result.decision == "no_edits"
    assert "nothing to learn" in result.reason
    assert not [c for c in spy.calls if c.purpose == "propose"]


def test_unfixable_failures_give_no_edits_with_an_explanation() -> None:
    tasks = [
        Task("t1", "p", "train", rule(("min_chars", 10_000))),
        Task("v1", "p", "val", rule(("min_chars", 10_000))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None}, settings(), OfflineBackend(),
                       skill="s")
    assert result.decision == "no_edits"
    assert "gave no applicable edit" in result.reason
    assert result.documents["skill"] == (SKILL, SKILL)


def test_edit_that_does_not_help_val_is_rejected_and_not_proposed_again() -> None:
    spy = SpyBackend()
    tasks = [
        Task("t1", "p", "train", rule(("contains", "Only for train"))),
        Task("v1", "p", "val", rule(("contains", "Something else"))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(rounds=3, proposals=1), spy, skill="s")
    assert result.decision == "rejected"
    assert "tie" in result.trials[0].reason
    assert len(result.trials) == 1  # rounds 2 and 3 did not retry the rejected edit
    assert [o.edit.content for o in result.rejected] == ['Always include "Only for train"']
    assert result.documents["skill"] == (SKILL, SKILL)


def test_memory_is_consolidated_after_the_skill() -> None:
    tasks = [
        Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"))),
        Task("t2", "q", "train", rule(("contains", "Alpha"))),
        Task("v1", "p", "val", rule(("contains", "Alpha"), ("contains", "Beta"))),
    ]
    memory = "# Team memory\n"
    result = run_epoch(tasks, {"skill": SKILL, "memory": memory},
                       settings(rounds=1, proposals=1, edit_budget=1), OfflineBackend(),
                       skill="s")
    assert result.decision == "accepted"
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']
    assert d.learned_rules(result.documents["memory"][1]) == ['Always include "Beta"']
    assert [t.target for t in result.trials] == ["skill", "memory"]


def test_several_proposals_best_one_wins_ties_to_smaller_change() -> None:
    tasks = [Task(f"t{i}", f"p{i}", "train",
                  rule(("contains", "Alpha"), ("contains", "Gamma") if i % 2 else
                       ("contains", "Alpha"))) for i in range(4)]
    tasks.append(Task("v1", "p", "val", rule(("contains", "Alpha"))))
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=3), OfflineBackend(), skill="s")
    # proposal 1 (all failures) adds Alpha and Gamma; proposal 2 (even tasks) adds Alpha only:
    # both reach val 1.0, the smaller change wins.
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']
    chosen = [t for t in result.trials if t.accepted]
    assert len(chosen) == 1 and chosen[0].proposal == 1
    assert any("another candidate scored higher" in t.reason for t in result.trials)


class ScriptedOptimizer(SpyBackend):
    """Offline answers; proposal k (by its seed) gets the k-th scripted reply."""

    def __init__(self, *replies: list[str]) -> None:
        super().__init__()
        self.replies = replies

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose != "propose":
            return super().complete(call)
        contents = self.replies[(call.seed or 0) % 1000]
        edits = [{"op": "add", "content": c, "anchor": "", "rationale": "r"} for c in contents]
        return Answer(json.dumps({"edits": edits}), None, 10, 10)


def test_candidates_that_fix_different_checks_are_merged_when_together_they_score_higher():
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"))),
             Task("v1", "p", "val", rule(("contains", "Alpha"))),
             Task("v2", "p", "val", rule(("contains", "Beta")))]
    backend = ScriptedOptimizer(['Always include "Alpha"'], ['Always include "Beta"'], [])
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=3, edit_budget=4), backend, skill="s")
    # the union lists the best candidate's edits first; at equal scores, the smaller one
    assert d.learned_rules(result.documents["skill"][1]) == [
        'Always include "Beta"', 'Always include "Alpha"']
    assert [(t.candidate, t.accepted) for t in result.trials] == [
        (0.5, False), (0.5, False), (1.0, True)]
    assert result.val.candidate == 1.0


def test_a_merge_that_does_not_score_higher_loses_to_the_smaller_single_candidate():
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"))),
             Task("v1", "p", "val", rule(("contains", "Alpha")))]
    backend = ScriptedOptimizer(['Always include "Alpha"'], ['Always include "Alpha."'], [])
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=3), backend, skill="s")
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']
    merged = result.trials[-1]
    assert len(merged.applied) == 2 and merged.candidate == 1.0 and not merged.accepted


class FailingBackend(SpyBackend):
    def __init__(self, fail: str, fatal: bool = False) -> None:
        super().__init__()
        self.fail, self.fatal = fail, fatal

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "answer" and self.fail in call.messages[-1][1]:
            if self.fatal:
                raise BackendError("authentication failed (HTTP 401): check OPENAI_API_KEY")
            return Answer(text=None, error="HTTP 500: server error after 4 retries")
        return super().complete(call)


def test_failed_calls_are_errors_not_zero_scores() -> None:
    tasks = [Task(f"v{i}", f"prompt {i}", "val", rule(("contains", "x"))) for i in range(10)]
    tasks.append(Task("t1", "other", "train", rule(("contains", "x"))))
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(proposals=1, rounds=1),
                       FailingBackend("prompt 1"), skill="s")  # matches only "prompt 1" of 10
    assert result.decision != "aborted"
    baseline = next(p for p in result.passes if p.split == "val")
    failed = baseline.by_id()["v1"]
    assert failed.value is None and failed.errors == 1
    assert failed.samples[0].score is None
    assert "HTTP 500" in failed.samples[0].error
    assert len(baseline.scored) == 9


def test_too_many_failed_calls_abort_with_exit_3_and_change_nothing() -> None:
    tasks = [Task(f"v{i}", f"prompt {i}", "val", rule(("contains", "x"))) for i in range(3)]
    tasks.append(Task("t1", "other", "train", rule(("contains", "x"))))
    result = run_epoch(tasks, {"skill": SKILL, "memory": None}, settings(),
                       FailingBackend("prompt"), skill="s")
    assert result.decision == "aborted" and result.abort_code == 3
    assert "3 of 3 model calls failed" in result.reason
    assert result.documents["skill"] == (SKILL, SKILL)


def test_fatal_backend_error_aborts_at_once() -> None:
    backend = FailingBackend("Write", fatal=True)
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(),
                       backend, skill="brief-writer")
    assert result.decision == "aborted" and result.abort_code == 3
    assert "401" in result.reason
    assert not result.applied and not result.pr_eligible


def test_budget_exhausted_aborts_with_exit_6() -> None:
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                       settings(max_calls=30), OfflineBackend(), skill="brief-writer")
    assert result.decision == "aborted" and result.abort_code == 6
    assert "max_calls (30)" in result.reason
    assert result.cost.calls == 30
    assert result.documents["skill"][0] == result.documents["skill"][1]


def test_empty_val_split_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no task is in the val split"):
        run_epoch([Task("t", "p", "train", rule(("contains", "x")))],
                  {"skill": SKILL, "memory": None}, settings(), OfflineBackend(), skill="s")


def test_without_test_tasks_val_decides() -> None:
    tasks = [t for t in example_tasks() if t.split != "test"]
    result = run_epoch(tasks, {"skill": skill_text(), "memory": None}, settings(),
                       OfflineBackend(), skill="brief-writer")
    assert result.decided_by == "val" and result.pr_eligible
    assert result.test.n == 0 and result.test.baseline is None


def test_calls_stay_under_the_announced_ceiling_and_tokens_add_up() -> None:
    from gitsleep.core.epoch import call_ceiling

    tasks = example_tasks()
    for extra in ({}, {"rounds": 3, "proposals": 1}, {"gate": GateSettings(repeats=2)}):
        s = settings(**extra)
        result = run_epoch(tasks, {"skill": skill_text(), "memory": None}, s, OfflineBackend(),
                           skill="brief-writer")
        assert 0 < result.cost.calls <= call_ceiling(s, tasks, with_memory=False)
        per_pass = sum(p.prompt_tokens for p in result.passes)
        propose = result.cost.prompt_tokens - per_pass
        assert per_pass > 0 and propose > 0  # passes and reflection are both accounted
        assert result.cost.by_model["offline"]["calls"] == result.cost.calls


def test_cost_estimate_needs_a_price_for_every_model() -> None:
    from gitsleep.core.models import Cost

    cost = Cost(by_model={"a": {"prompt_tokens": 1_000_000, "completion_tokens": 500_000},
                          "b": {"prompt_tokens": 2_000_000, "completion_tokens": 0}})
    prices = {"a": {"prompt": 1.0, "completion": 4.0}, "b": {"prompt": 0.5, "completion": 2.0}}
    assert cost.estimate_usd(prices) == 4.0
    assert cost.estimate_usd({"a": prices["a"]}) is None
    assert cost.estimate_usd({}) is None


def test_a_harmful_edit_cannot_ride_inside_a_winning_bundle() -> None:
    # One proposal per round: the only candidate bundles the train-only rule with the
    # helpful ones. Leaving each edit out once finds that val is better without it.
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                       settings(proposals=1, rounds=1), OfflineBackend(), skill="brief-writer")
    rules = d.learned_rules(result.documents["skill"][1])
    assert 'Always include "Internal only"' not in rules
    assert len(rules) == 3
    harmful = [o for o in result.rejected if "Internal only" in o.edit.content]
    assert harmful and "harmful in its bundle" in harmful[0].reason
    assert result.test.candidate == 1.0


def test_an_edit_val_cannot_tell_apart_is_left_out() -> None:
    tasks = [
        Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"))),
        # val cannot reach 1.0 (an unfixable check), so the winning bundle is pruned
        Task("v1", "p", "val", rule(("contains", "Alpha"), ("min_chars", 10_000))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(proposals=1, rounds=1), OfflineBackend(), skill="s")
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']
    assert [len(t.applied) for t in result.trials] == [2, 1, 1]
    assert [t.accepted for t in result.trials] == [False, False, True]


def test_a_perfect_bundle_is_not_pruned() -> None:
    tasks = [
        Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"))),
        Task("v1", "p", "val", rule(("contains", "Alpha"))),
    ]
    result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                       settings(proposals=1, rounds=1), OfflineBackend(), skill="s")
    assert len(result.trials) == 1 and result.trials[0].candidate == 1.0


class BrokenOptimizer(SpyBackend):
    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            return Answer(text=None, error="HTTP 503: optimizer overloaded after 4 retries")
        return super().complete(call)


def test_an_optimizer_that_always_fails_aborts_instead_of_a_quiet_no_edits_night() -> None:
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(),
                       BrokenOptimizer(), skill="brief-writer")
    assert result.decision == "aborted" and result.abort_code == 3
    assert "optimizer model failed on all 3 call(s)" in result.reason
    assert "HTTP 503" in result.reason


def docs_of(result: EpochResult) -> str:
    """The learned block the epoch ends with."""
    return d.learned_block_text(result.documents["skill"][1])


def test_the_second_example_also_gains_offline() -> None:
    from gitsleep.flows.prepare import read_inputs
    from gitsleep.inputs.config import load_config

    root = EXAMPLE.parent / "incident-notes"
    config = load_config(root / ".gitsleep.yml")
    tasks, documents = read_inputs(root, config.skills[0])
    result = run_epoch(tasks, documents, config.epoch_settings(), OfflineBackend(),
                       skill=config.skills[0].name)
    assert result.decision == "accepted" and result.pr_eligible
    assert result.test.candidate > result.test.baseline
    # the severity check accepts any of 1-4: the simulator cannot say how to choose, and
    # one constant is never learned, so the severity check stays failing
    assert result.val.candidate < 1.0
    assert "Severity" not in docs_of(result)


# -- a delete of a person's rule needs its own evidence ---------------------------------

PERSON_SKILL = (SKILL + f"\n{d.START}\n## Learned rules\n\n"
                '- Always include "Legacy"\n- Keep the tone friendly\n' + f"{d.END}\n")


class ScriptedEdits(SpyBackend):
    """Offline answers; every proposal call gets the same scripted edits (dicts), or with
    `per_proposal`, proposal k (by its seed) the k-th list."""

    def __init__(self, *edits: dict, per_proposal: list[list[dict]] | None = None) -> None:
        super().__init__()
        self.replies = per_proposal or [list(edits)]

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose != "propose":
            return super().complete(call)
        edits = self.replies[(call.seed or 0) % 1000 % len(self.replies)]
        edits = [{"anchor": "", "content": "", "rationale": "r", **e} for e in edits]
        return Answer(json.dumps({"edits": edits}), None, 10, 10)


ADD_ALPHA = {"op": "add", "content": 'Always include "Alpha"'}
DELETE_LEGACY = {"op": "delete", "anchor": 'Always include "Legacy"'}


def alpha_tasks(*val_checks: tuple) -> list[Task]:
    return [Task("t1", "p", "train", rule(("contains", "Alpha"))),
            Task("v1", "p", "val", rule(("contains", "Alpha"))),
            *[Task(f"v{i + 2}", "p", "val", rule(c)) for i, c in enumerate(val_checks)]]


def test_a_delete_of_a_persons_rule_does_not_ride_along_in_a_perfect_bundle() -> None:
    # The add alone reaches val 1.0; the delete changes nothing val sees. Before, the
    # bundle was taken whole (a perfect score is not pruned) and the rule was gone.
    result = run_epoch(alpha_tasks(), {"skill": PERSON_SKILL, "memory": None},
                       settings(proposals=1, rounds=1), ScriptedEdits(ADD_ALPHA, DELETE_LEGACY),
                       skill="s")
    assert result.decision == "accepted"
    assert d.learned_rules(result.documents["skill"][1]) == [
        'Always include "Legacy"', "Keep the tone friendly", 'Always include "Alpha"']
    dropped = [o for o in result.rejected if o.edit.op == "delete"]
    assert dropped and "without its own evidence" in dropped[0].reason
    assert [(len(t.applied), t.accepted) for t in result.trials] == [(2, False), (1, True)]


def test_a_delete_of_a_persons_rule_stays_when_val_is_strictly_lower_without_it() -> None:
    result = run_epoch(alpha_tasks(("not_contains", "Legacy")),
                       {"skill": PERSON_SKILL, "memory": None},
                       settings(proposals=1, rounds=1), ScriptedEdits(ADD_ALPHA, DELETE_LEGACY),
                       skill="s")
    assert d.learned_rules(result.documents["skill"][1]) == [
        "Keep the tone friendly", 'Always include "Alpha"']
    assert not [o for o in result.rejected if o.edit.op == "delete"]
    assert result.val.candidate == 1.0


def test_a_delete_of_a_persons_rule_alone_is_gated_like_any_edit() -> None:
    tasks = [Task("t1", "p", "train", rule(("not_contains", "Legacy"))),
             Task("v1", "p", "val", rule(("not_contains", "Legacy")))]
    result = run_epoch(tasks, {"skill": PERSON_SKILL, "memory": None},
                       settings(proposals=1, rounds=1), ScriptedEdits(DELETE_LEGACY), skill="s")
    assert result.decision == "accepted"
    assert d.learned_rules(result.documents["skill"][1]) == ["Keep the tone friendly"]


def test_a_delete_of_a_persons_rule_cannot_win_on_size_when_its_leave_one_out_was_seen():
    # Proposal 2 bundles the delete with proposal 1's add: the same val score, and a
    # smaller change (a rule out, a rule in), so it won the tie; leaving the delete out
    # gave proposal 1's document, already scored, and the pruning kept the delete.
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"))),
             Task("v1", "p", "val", rule(("contains", "Alpha"))),
             Task("v2", "p", "val", rule(("min_chars", 10_000)))]  # val cannot reach 1.0
    backend = ScriptedEdits(per_proposal=[[ADD_ALPHA], [ADD_ALPHA, DELETE_LEGACY]])
    result = run_epoch(tasks, {"skill": PERSON_SKILL, "memory": None},
                       settings(proposals=2, rounds=1), backend, skill="s")
    assert result.decision == "accepted"
    assert 'Always include "Legacy"' in d.learned_rules(result.documents["skill"][1])


@pytest.mark.parametrize("mark", ["\x01", "\x7f", "\u200e", "\u2028"], ids=repr)
def test_the_secret_check_reads_text_as_the_document_will_hold_it(
    mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind hygiene (switched off here) the epoch's own check must not be fooled by a
    secret split with a character the document layer strips: before, the split secret
    passed the check and the line cleaning wrote it whole into the document."""
    from gitsleep.base.redact import Redactor
    from gitsleep.core import hygiene

    monkeypatch.setattr(hygiene, "check_hygiene", lambda edits, **_: (list(edits), []))
    secret = "Sekr3t-Deploy-Value-0123456789"
    leaky = {"op": "add", "content": f'Always include "Alpha" {secret[:9]}{mark}{secret[9:]}'}
    result = run_epoch(alpha_tasks(), {"skill": SKILL, "memory": None},
                       settings(proposals=1, rounds=1), ScriptedEdits(leaky), skill="s",
                       redact=Redactor([secret]).redact)
    assert result.documents["skill"] == (SKILL, SKILL)
    reasons = [o.reason for o in result.unmatched]
    assert any("secret" in r or "invisible" in r for r in reasons), reasons


def test_the_third_example_learns_its_two_structural_checks_offline() -> None:
    from gitsleep.flows.prepare import read_inputs
    from gitsleep.inputs.config import load_config

    root = EXAMPLE.parent / "outage-summary"
    config = load_config(root / ".gitsleep.yml")
    tasks, documents = read_inputs(root, config.skills[0])
    assert sorted({t.split for t in tasks}) == ["test", "train", "val"]
    result = run_epoch(tasks, documents, config.epoch_settings(), OfflineBackend(),
                       skill=config.skills[0].name)
    assert result.decision == "accepted" and result.pr_eligible
    assert result.test.baseline < result.test.candidate  # the Impact section
    assert "Severity" not in docs_of(result)  # never one constant severity


# -- early stopping: a candidate that cannot beat the gate is not scored to the end --------

ADD_BAD = {"op": "add", "content": 'Always include "Bad"'}


def test_a_candidate_that_cannot_win_stops_and_the_decision_is_the_same() -> None:
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"))),
             *[Task(f"v{i}", f"p{i}", "val", rule(("not_contains", "Alpha")))
               for i in (1, 2, 3)],
             Task("v4", "p4", "val", rule(("contains", "Alpha")))]
    runs = {}
    for early in (True, False):
        spy = ScriptedEdits(ADD_ALPHA)
        result = run_epoch(tasks, {"skill": SKILL, "memory": None},
                           settings(rounds=1, proposals=1, workers=1, early_stop=early), spy,
                           skill="s")
        runs[early] = (result, sum(1 for c in spy.calls if c.purpose == "answer"))
    (stopped, stopped_calls), (full, full_calls) = runs[True], runs[False]
    # after v1 and v2 fell 1.0 -> 0.0, v3 and v4 can give back at most 1.0 of the 2.0 lost
    trial = stopped.trials[0]
    assert trial.stopped_after == 2 and trial.candidate is None and not trial.accepted
    assert trial.reason == "stopped after 2/4 val tasks: cannot beat the gate"
    assert full.trials[0].stopped_after is None and full.trials[0].candidate == 0.25
    assert stopped_calls == full_calls - 2
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    assert [o.edit for o in stopped.rejected] == [o.edit for o in full.rejected]
    partial = [p for p in stopped.passes if p.stopped_after is not None]
    assert [(p.stopped_after, p.planned, len(p.tasks)) for p in partial] == [(2, 4, 2)]


def test_stopped_losers_are_finished_only_to_choose_the_bundle_to_take_apart() -> None:
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"))),
             Task("v2", "p", "val", rule(("not_contains", "Bad"))),
             Task("v3", "p", "val", rule(("not_contains", "Bad"))),
             Task("v1", "p", "val", rule(("contains", "Alpha")))]
    runs = {}
    for early in (True, False):
        spy = ScriptedEdits(per_proposal=[[ADD_ALPHA, ADD_BAD], [ADD_BAD]])
        runs[early] = run_epoch(tasks, {"skill": SKILL, "memory": None},
                                settings(rounds=1, proposals=2, workers=1, early_stop=early),
                                spy, skill="s")
    stopped, full = runs[True], runs[False]
    assert d.learned_rules(stopped.documents["skill"][1]) == ['Always include "Alpha"']
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    # both bundles stopped after 2/3; both could still be the highest, so both were finished
    assert [(t.candidate, t.accepted) for t in stopped.trials] == [
        (t.candidate, t.accepted) for t in full.trials]
    assert "scoring had stopped after 2/3 tasks" in stopped.trials[0].reason


def test_a_leave_one_out_stops_once_it_cannot_reach_the_bundle_it_would_replace() -> None:
    tasks = [Task("t1", "p", "train", rule(("contains", "Alpha"), ("contains", "Beta"),
                                           ("contains", "Gamma"))),
             Task("v0", "p0", "val", rule(("contains", "Never"))),
             *[Task(f"v{i}", f"p{i}", "val", rule(("contains", word)))
               for i, word in enumerate(("Alpha", "Beta", "Gamma"), start=1)]]
    edits = [{"op": "add", "content": f'Always include "{w}"'} for w in ("Alpha", "Beta", "Gamma")]
    runs = {}
    for early in (True, False):
        runs[early] = run_epoch(tasks, {"skill": SKILL, "memory": None},
                                settings(rounds=1, proposals=1, workers=1, early_stop=early),
                                ScriptedEdits(*edits), skill="s")
    stopped, full = runs[True], runs[False]
    assert (stopped.decision, stopped.documents) == (full.decision, full.documents)
    assert len(d.learned_rules(stopped.documents["skill"][1])) == 3
    # the bundle scores 0.75; without Alpha, v0 and v1 are lost: at most 0.5 can follow
    assert [t.stopped_after for t in stopped.trials] == [None, 2, 3, None]
    assert stopped.trials[1].reason == ("stopped after 2/4 val tasks: cannot reach 0.750, the "
                                        "val mean it had to match")
    assert [t.candidate for t in full.trials] == [0.75, 0.5, 0.5, 0.5]
    assert [o.edit for o in stopped.rejected] == [o.edit for o in full.rejected]


class MeetingOptimizer(SpyBackend):
    """Offline answers; a reflect call returns only once `count` of them are in flight."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.meeting = threading.Barrier(count, timeout=10)

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose" and call.seed is not None and call.seed < 1500:
            self.meeting.wait()  # one call after the other would wait here forever
        return super().complete(call)


def test_the_proposals_of_a_round_are_asked_at_once_and_come_back_in_order() -> None:
    said: list[str] = []
    backend = MeetingOptimizer(3)
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                       settings(rounds=1, proposals=3, workers=4), backend,
                       skill="brief-writer", progress=said.append)
    serial = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None},
                       settings(rounds=1, proposals=3, workers=1), OfflineBackend(),
                       skill="brief-writer")
    assert [p.index for p in result.proposals] == [0, 1, 2]
    assert [p.raw for p in result.proposals] == [p.raw for p in serial.proposals]
    assert (result.decision, result.documents) == (serial.decision, serial.documents)
    assert "brief-writer: 3 proposals for skill round 1 started, 3 at a time" in said
    assert sum("optimizer call started (offline): skill round 1, proposal" in line
               for line in said) == 3


def test_the_pr_rule_asks_the_gate_its_one_improves_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    from gitsleep.core import gate
    from gitsleep.git_forge import record

    asked: list[tuple[float, float, float]] = []

    def never(before: float, after: float, min_delta: float) -> bool:
        asked.append((before, after, min_delta))
        return False

    monkeypatch.setattr(gate, "improves", never)
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, settings(),
                       OfflineBackend(), skill="brief-writer")
    assert result.decision == "rejected" and not result.pr_eligible
    assert not record.recorded_improvement({"Gitsleep-Test": "0.250 -> 1.000"}, 0.0)
    assert (0.25, 1.0, 0.0) in asked


def test_a_night_whose_candidates_rose_but_missed_min_delta_says_so() -> None:
    """Candidates that rose on val but by no more than `gate.min_delta` were not beaten
    by the current documents: the rejected night's line names the margin they missed."""
    strict = settings()
    strict = replace(strict, gate=replace(strict.gate, min_delta=0.9))
    result = run_epoch(example_tasks(), {"skill": skill_text(), "memory": None}, strict,
                       OfflineBackend(), skill="brief-writer")
    assert result.decision == "rejected"
    assert "none beat" not in result.reason
    best = max((t for t in result.trials if t.candidate is not None),
               key=lambda t: t.candidate or 0.0)
    assert best.candidate is not None and best.baseline is not None
    assert best.candidate > best.baseline
    assert (f"the best rose val {best.baseline:.3f} -> {best.candidate:.3f}, but its gain "
            f"+{best.candidate - best.baseline:.3f} is not more than gate.min_delta 0.900"
            ) in result.reason


def test_a_rejected_night_names_the_refusal_the_gate_carried_not_a_parsed_reason() -> None:
    """The epoch's reason names the rule that refused the best risen candidate from the
    trial's `refusal` field; a reason that merely reads ", but " refuses nothing."""
    from gitsleep.core import gate
    from gitsleep.core.epoch import Summaries, decide
    from gitsleep.core.models import GateTrial, SplitSummary
    from gitsleep.core.search import SearchRecord

    def night(trial: GateTrial) -> str:
        record = SearchRecord(trials=[trial])
        none = SplitSummary(0.5, None, 1)
        verdict = decide(record, Summaries(none, none, none), PassResult("b", "train", "v", []),
                         EpochSettings("m", "m", "m"), held_out=True, changed=False, veto="",
                         any_candidate=True, val_scored=True, screened=0)
        return verdict.reason

    refused = GateTrial("skill", 1, 0, 0.5, 0.75, False, "val 0.500 -> 0.750 on 1 task(s), "
                        "but no_regression: task a fell 1.000 -> 0.000",
                        refusal="no_regression: task a fell 1.000 -> 0.000")
    assert night(refused).endswith("but no_regression: task a fell 1.000 -> 0.000 "
                                   "(see gate trials)")
    lookalike = GateTrial("skill", 1, 0, 0.5, 0.75, False, "stopped, but who knows")
    assert night(lookalike).endswith("none beat 0.500 (see gate trials)")
    verdict = gate.trial_verdict(*_one_task_passes(1.0, 0.0), GateSettings())
    assert verdict.refusal == "" and not verdict.accepted


def _one_task_passes(before: float, after: float) -> tuple[PassResult, PassResult]:
    from gitsleep.core.models import SampleResult, Score, TaskResult

    def one(value: float) -> PassResult:
        sample = SampleResult(0, "x", None, Score(value, value, "r"))
        return PassResult("p", "val", str(value), [TaskResult("a", "val", [sample], value,
                                                              value, value)])
    return one(before), one(after)


# -- held-out wrong values decide the pull request too ------------------------------------

def test_held_out_answers_that_carry_the_other_verdict_open_no_pull_request() -> None:
    """Val is clean (every answer right), held-out rises (the breaking updates now pass), yet
    every held-out approve task's answer now carries `Verdict: reject`: the night keeps its
    documents (val decided), but no pull request claims held-out improved."""
    result = pinned_on_held_out_night()
    assert result.decision == "accepted", result.reason
    assert result.val.candidate == 1.0 and result.test.candidate > result.test.baseline
    assert not result.pr_eligible
    approve = next(name for name in result.groups if "approve" in name)
    assert (f"the held-out tasks that want {approve}: 3 of their answers carry another "
            "group's value (0 before)") in result.reason
    assert result.reason.endswith("held-out answers carry another group's value, so no PR")


def test_a_held_out_answer_that_lists_the_scale_carries_no_wrong_value() -> None:
    """`Severity: 1 = outage, 4 = cosmetic` names every value and gives none: held-out
    answers that list it beside their own value still open the pull request."""
    high, low = Check("regex", r"Severity:\s*[12]\b"), Check("regex", r"Severity:\s*[34]\b")
    tasks = [Task(f"{split}{i}", f"Incident {split}{i}: "
                  + ("the checkout had an outage." if i % 2 else "a typo on the status page."),
                  split, Judge("rule", (high if i % 2 else low,)))
             for split in ("train", "val", "test") for i in range(4)]
    honest = ('When the task mentions "outage", write "Severity: 1"; otherwise write '
              '"Severity: 4".')

    def severity(prompt: str, held_out: bool) -> str:
        value = "Severity: 1" if "outage" in prompt else "Severity: 4"
        return f"Severity: 1 = outage, 4 = cosmetic\n{value}" if held_out else value

    held = {t.prompt for t in tasks if t.split == "test"}
    result = run_epoch(tasks, {"skill": "# Incidents\n", "memory": None},
                       settings(rounds=1, proposals=1, workers=1),
                       FollowsExceptOnHeldOut(honest, held, severity), skill="incidents")
    assert result.decision == "accepted", result.reason
    assert (result.test.baseline, result.test.candidate) == (0.0, 1.0)
    assert result.pr_eligible, result.reason
    test_pass = next(p for p in result.passes if p.split == "test" and p.label == "final")
    assert all("1 = outage" in s.answer for t in test_pass.tasks for s in t.samples
               if s.answer is not None)
