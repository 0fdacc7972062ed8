"""The search's pieces and the decision, as values: `screening_tasks`, `SearchRecord`
and `decide` (the verdict a night's result is built from, once, in `Epoch._result`)."""

from __future__ import annotations

from gitsleep.core.epoch import Summaries, Verdict, decide
from gitsleep.core.models import (
    Edit,
    EditOutcome,
    EpochSettings,
    PassResult,
    SplitSummary,
    TaskResult,
)
from gitsleep.core.search import SearchRecord, screening_tasks

SETTINGS = EpochSettings(model="m", optimizer_model="m", judge_model="m")


def result(task_id: str, hard: float) -> TaskResult:
    return TaskResult(task_id, "train", [], hard=hard, value=hard)


def summaries(val: tuple[float, float], test: tuple[float | None, float | None]) -> Summaries:
    return Summaries(SplitSummary(0.5, 0.5, 2), SplitSummary(*val, 2), SplitSummary(*test, 2))


def accepted_record() -> SearchRecord:
    return SearchRecord(applied=[EditOutcome(Edit("add", "- Start with a heading."),
                                             "applied")])


def test_a_screen_is_the_first_failures_shown_then_one_passing_task_per_proposal() -> None:
    shown = [result(f"f{i}", 0.0) for i in range(5)]
    passes = [result("p0", 1.0), result("p1", 1.0)]
    assert [t.task_id for t in screening_tasks(shown, passes, 0)] == ["f0", "f1", "f2", "p0"]
    assert [t.task_id for t in screening_tasks(shown, passes, 3)][-1] == "p1"
    assert [t.task_id for t in screening_tasks(shown[:1], [], 0)] == ["f0"]


def test_an_accepted_edit_opens_a_pr_only_when_held_out_improves() -> None:
    base = PassResult("baseline", "train", "v", [result("t", 0.0)])

    def verdict_with_test(test: tuple[float, float]) -> Verdict:
        return decide(accepted_record(), summaries((0.5, 1.0), test), base, SETTINGS,
                      held_out=True, changed=True, veto="", any_candidate=True,
                      val_scored=True, screened=0)

    better, same = verdict_with_test((0.5, 1.0)), verdict_with_test((0.5, 0.5))
    assert (better.decision, better.pr_eligible, better.undo) == ("accepted", True, "")
    assert (same.decision, same.pr_eligible) == ("accepted", False)
    assert same.reason.endswith("; held-out did not improve, so no PR")


def test_a_held_out_veto_rejects_and_undoes_the_applied_edits() -> None:
    base = PassResult("baseline", "train", "v", [result("t", 0.0)])
    verdict = decide(accepted_record(), summaries((0.5, 1.0), (0.5, 1.0)), base, SETTINGS,
                     held_out=True, changed=True, veto="held-out answers echo the template",
                     any_candidate=True, val_scored=True, screened=0)
    assert (verdict.decision, verdict.pr_eligible) == ("rejected", False)
    assert verdict.undo == verdict.reason == "held-out answers echo the template"


def test_nothing_to_learn_and_every_proposal_screened_out_say_why() -> None:
    passing = PassResult("baseline", "train", "v", [result("t", 1.0)])
    none = decide(SearchRecord(), summaries((0.5, 0.5), (None, None)), passing, SETTINGS,
                  held_out=False, changed=False, veto="", any_candidate=False,
                  val_scored=True, screened=0)
    assert (none.decision, none.reason) == ("no_edits",
                                            "every train task already passes: nothing to learn")
    failing = PassResult("baseline", "train", "v", [result("t", 0.0)])
    screened = decide(SearchRecord(), summaries((0.5, 0.5), (None, None)), failing, SETTINGS,
                      held_out=False, changed=False, veto="", any_candidate=True,
                      val_scored=False, screened=3)
    assert screened.decision == "rejected"
    assert screened.reason.startswith("every proposal was screened out on train (3 of them")
