"""`gitsleep review`'s pure part (`gitsleep/flows/review/verdict.py`): the verdict rules, the paired
interval, the comment text, the calls a review needs and its terminal lines."""

from __future__ import annotations

import pytest

from gitsleep.backends.offline import OfflineBackend
from gitsleep.base.redact import Redactor
from gitsleep.core import gate
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import (
    Check,
    EpochSettings,
    GateSettings,
    Judge,
    PassResult,
    SampleResult,
    Score,
    Task,
    TaskResult,
)
from gitsleep.flows.review import verdict


def task(task_id: str, value: float | None, answer: str = "an answer") -> TaskResult:
    if value is None:
        sample = SampleResult(0, None, "HTTP 500 from the model", None)
    else:
        sample = SampleResult(0, answer, None, Score(value, value, f"scored {value}"))
    return TaskResult(task_id, "test", [sample], value, value, value)


def a_pass(*tasks: TaskResult) -> PassResult:
    return PassResult("review", "test", "v", list(tasks))


# -- the verdict rules ----------------------------------------------------------------------


def split(before: float, after: float, low: float, high: float) -> verdict.SplitReview:
    return verdict.SplitReview("test", 6, before, after, low, high)


@pytest.mark.parametrize(("case", "min_delta", "regressed", "improved"), [
    (split(1.0, 0.5, -0.8, -0.2), 0.0, True, False),
    (split(1.0, 0.5, -0.8, 0.1), 0.0, False, False),  # the interval reaches zero: noise
    (split(1.0, 0.9, -0.2, -0.05), 0.1, False, False),  # a fall of exactly min_delta
    (split(1.0, 0.85, -0.2, -0.05), 0.1, True, False),
    (split(0.5, 1.0, 0.2, 0.8), 0.0, False, True),
    (split(0.5, 0.5, 0.0, 0.0), 0.0, False, False),
])
def test_regressed_needs_a_fall_beyond_min_delta_and_the_interval_below_zero(
        case: verdict.SplitReview, min_delta: float, regressed: bool, improved: bool) -> None:
    assert case.regressed(min_delta) is regressed
    assert case.improved(min_delta) is improved


def test_compare_uses_the_gates_paired_bootstrap_and_lists_moved_tasks_regressions_first():
    base = a_pass(task("a", 1.0), task("b", 0.0), task("c", 1.0), task("d", 1.0),
                  task("e", 1.0))
    head = a_pass(task("a", 0.0, "worse"), task("b", 1.0, "better"), task("c", 1.0),
                  task("d", None), task("e", 0.0, "worse too"))
    result = verdict.compare("test", base, head)
    expected = gate.bootstrap_interval([a - b for _, b, a in gate.paired(base, head)])
    assert expected is not None and (result.ci_low, result.ci_high) == expected
    assert (result.before, result.after, result.n, result.errors) == (0.8, 0.5, 5, 1)
    assert [(c.task_id, c.before, c.after) for c in result.changed] == [
        ("a", 1.0, 0.0), ("e", 1.0, 0.0), ("b", 0.0, 1.0), ("d", 1.0, None)]
    assert result.changed[0].answer_before == "an answer"
    assert result.changed[0].answer_after == "worse"
    assert result.changed[-1].reason_after.startswith("error: HTTP 500")


def test_val_decides_only_when_no_task_is_held_out():
    val = verdict.SplitReview("val", 3, 1.0, 0.0, -1.0, -1.0)
    held_out = verdict.SplitReview("test", 3, 1.0, 1.0, 0.0, 0.0)
    assert verdict.verdict_of({"val": val, "test": held_out}, 0.0) == ("no clear change", "test")
    assert verdict.verdict_of({"val": val}, 0.0) == ("regressed", "val")
    assert verdict.verdict_of({}, 0.0) == ("no tasks", None)


# -- the comment ----------------------------------------------------------------------------


def scored_review(answer: str) -> verdict.SkillReview:
    change = verdict.TaskChange("t-1", "test", 1.0, 0.0, "before", answer, "failed: contains")
    held_out = verdict.SplitReview("test", 1, 1.0, 0.0, -1.0, -1.0, 0, (change,))
    return verdict.SkillReview("notes", "scored", "changed: SKILL.md", ["SKILL.md"],
                              {"test": held_out}, [], "regressed", "test")


def render(*reviews: verdict.SkillReview, redactor: Redactor | None = None) -> str:
    return verdict.comment_markdown(list(reviews), metric="hard", min_delta=0.0,
                                   base_label="main", head_label="abc", rerun="gitsleep review"
                                   " --base main", redactor=redactor or Redactor())


def test_a_secret_across_the_clip_is_redacted_before_clipping():
    secret = "sk-proj-" + "A1b2C3d4" * 4
    answer = "a" * (verdict.ANSWER_CHARS - 12) + secret
    body = render(scored_review(answer), redactor=Redactor([secret]))
    assert "sk-proj" not in body and secret[:10] not in body
    assert "[REDACTED" in body


def test_the_comment_starts_with_the_marker_and_is_the_same_for_the_same_review():
    skipped = verdict.SkillReview("other", "skipped", "nothing changed")
    first = render(scored_review("x | y"), skipped)
    assert first.startswith(verdict.MARKER + "\n")
    assert first == render(scored_review("x | y"), skipped)
    assert "| notes | held-out | 1 | 1.000 | 0.000 | -1.000 | -1.000 to -1.000 | " \
           "**regressed** |" in first
    assert "- other: skipped: nothing changed" in first
    assert "x \\| y" in first
    assert "```sh\ngitsleep review --base main\n```" in first


def test_a_review_with_many_changed_tasks_shows_the_first_and_counts_the_rest():
    changes = tuple(verdict.TaskChange(f"t-{i}", "test", 1.0, 0.0, "b", "a", "r")
                    for i in range(verdict.TASK_ROWS + 5))
    held_out = verdict.SplitReview("test", len(changes), 1.0, 0.0, -1.0, -1.0, 0, changes)
    body = render(verdict.SkillReview("notes", "scored", "r", [], {"test": held_out}, [],
                                     "regressed", "test"))
    assert body.count("| t-") == verdict.TASK_ROWS and "_and 5 more" in body
    assert len(body) < verdict.COMMENT_LIMIT


# -- how many calls a review needs, before the first one -----------------------------------


def test_calls_needed_counts_each_uncached_call_once_and_a_rubric_judge_too():
    rule = Judge("rule")
    rubric = Judge("rubric", rubric="Is it short?")
    tasks = [Task("t", "p1", "train", rule), Task("v", "p2", "val", rule),
             Task("h", "p3", "test", rubric)]
    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m",
                             gate=GateSettings(repeats=2))
    base, head = {"skill": "Be brief.", "memory": None}, {"skill": "Be long.", "memory": None}
    runner = CallRunner(OfflineBackend(), max_calls=1000)
    # val 1 x 2 samples x 3 sides (base, head, the base under a placebo) + held-out
    # (1 answer + 1 judge) x 2 samples x 3 sides
    assert verdict.calls_needed(runner, tasks, base, head, settings) == 6 + 12
    assert verdict.calls_needed(runner, tasks, base, base, settings) == 4 + 8, \
        "the same documents on both sides ask the same calls: counted once"
    verdict.score_skill(runner, tasks, base, head, settings, skill="s")
    assert 0 < runner.cost.calls <= 18, "an upper bound (equal answers share a judge call)"
    assert verdict.calls_needed(runner, tasks, base, head, settings) == 0, "all cached"


def test_terminal_lines_redact_then_escape_each_untrusted_piece_onto_one_line():
    """A secret split by a zero-width space is still masked (redacted before escaping),
    and a task id cannot start a line of its own (`::error` would be an annotation)."""
    secret = "sk-live-0123456789abcdefghij"
    split_id = secret[:10] + "\u200b" + secret[10:] + "\n::error::x\x1b]52;c;aGk=\x07"
    change = verdict.TaskChange(split_id, "test", 1.0, 0.0, "", "", "")
    item = verdict.SkillReview("notes", "scored", "changed: SKILL.md", splits={
        "test": verdict.SplitReview("test", 1, 1.0, 0.0, -1.0, -1.0, changed=(change,))},
        verdict="regressed", decided_by="test",
        exam_changes=verdict.ExamChanges(added={"test": ["new\n::warning::y"]}))
    lines = verdict.terminal_lines(item, "hard", Redactor([secret]))
    text = "\n".join(lines)
    assert secret[10:] not in text and "[REDACTED" in text
    assert "\x1b" not in text and "\x07" not in text
    assert not any(line.lstrip().startswith("::") for line in lines)
    assert "  exam: the head adds 1 held-out task(s), not used: new\\n::warning::y" in lines


# -- beyond noise, and a person's change judged on val and held-out together ---------------


def test_where_the_base_moved_under_a_placebo_a_change_must_pass_the_sign_test():
    three_fell = (-1.0, -1.0, -1.0, 0.0, 0.0, 0.0)
    quiet = verdict.SplitReview("test", 6, 1.0, 0.5, -0.9, -0.1, diffs=three_fell)
    noisy = verdict.SplitReview("test", 6, 1.0, 0.5, -0.9, -0.1, diffs=three_fell, noisy=True)
    assert quiet.regressed(0.0)  # no noise measured: the interval decides, as before
    assert not noisy.regressed(0.0)  # 3 of 3 fell: p = 1/8 > 0.1, not beyond noise
    four = verdict.SplitReview("test", 6, 1.0, 0.3, -0.9, -0.1, diffs=(-1.0,) * 4 + (0.0,) * 2,
                               noisy=True)
    assert four.regressed(0.0)  # p = 1/16
    rose = verdict.SplitReview("test", 6, 0.3, 1.0, 0.1, 0.9, diffs=(1.0,) * 4 + (0.0,) * 2,
                               noisy=True)
    assert rose.improved(0.0) and rose.to_json()["sign_test"]["p_rise"] == 0.062


def test_a_persons_change_is_decided_by_val_and_held_out_together():
    tasks = [Task(f"v{i}", f"p{i}", "val", Judge("rule", (Check("contains", "Owner:"),)))
             for i in range(3)]
    tasks += [Task(f"h{i}", f"q{i}", "test",
                   Judge("rule", (Check("contains", "Owner:" if i == 0 else "Note"),)))
              for i in range(4)]
    base = {"skill": 'Always include "Owner:"\nAlways include "Note"\n', "memory": None}
    head = {"skill": 'Always include "Note"\n', "memory": None}
    settings = EpochSettings(model="offline", optimizer_model="offline", judge_model="offline")
    runner = CallRunner(OfflineBackend(), max_calls=1000)
    alone, _ = verdict.score_skill(runner, tasks, base, head, settings, skill="s")
    assert verdict.verdict_of(alone, 0.0) == ("no clear change", "test")  # 1 of 4 fell
    both, _ = verdict.score_skill(runner, tasks, base, head, settings, skill="s", person=True)
    assert set(both) == {"val", "test", verdict.BOTH} and both[verdict.BOTH].n == 7
    assert not both["val"].noisy  # the simulator does not move under the placebo
    assert verdict.verdict_of(both, 0.0) == ("regressed", verdict.BOTH)  # 4 of 7 fell


# -- an answer that carries another group's value is wrong, in a review too ----------------


def test_a_persons_change_that_adds_wrong_values_on_held_out_does_not_improve() -> None:
    """examples/dependency-review: a person adds the breaking rule; the agent follows it on
    val, but writes `Verdict: reject` on every held-out task. Val and held-out together rise
    beyond their interval, yet 3 held-out approve answers now carry the reject group's
    value: counted as a night counts them, per split, and the change is not an
    improvement."""
    from gitsleep.core import documents
    from gitsleep.core.models import Edit
    from gitsleep.flows.prepare import read_inputs
    from gitsleep.inputs.config import load_config
    from tests.support.gitrepo import EXAMPLES
    from tests.support.nights import BREAKING_RULE, FollowsExceptOnHeldOut, verdict_pinned

    root = EXAMPLES / "dependency-review"
    skill = load_config(root / ".gitsleep.yml").skills[0]
    tasks, base = read_inputs(root, skill)
    head = dict(base)
    head["skill"], _ = documents.apply_edits(base["skill"] or "",
                                             [Edit("add", BREAKING_RULE)])
    held = {t.prompt for t in tasks if t.split == "test"}
    backend = FollowsExceptOnHeldOut(BREAKING_RULE, held, verdict_pinned)
    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m")
    splits, _ = verdict.score_skill(CallRunner(backend, max_calls=1000), tasks, base, head,
                                    settings, skill="dependency-review", person=True)
    both = splits[verdict.BOTH]
    assert both.n == 12 and both.ci_low is not None and both.ci_low > 0  # the scores rose
    assert verdict.verdict_of(splits, 0.0) == ("no clear change", verdict.BOTH)
    assert "3 of their answers carry another group's value (0 before)" in both.adds_wrong
    assert splits["val"].adds_wrong == "" and "held-out tasks" in splits["test"].adds_wrong
    approve = next(name for name in splits["test"].wrong if "approve" in name)
    assert splits["test"].to_json()["wrong_values"][approve] == {"before": 0, "after": 3}
    redactor = Redactor()
    review = verdict.SkillReview("dependency-review", "scored", "changed: SKILL.md",
                                 splits=splits, verdict="no clear change",
                                 decided_by=verdict.BOTH)
    assert any("wrong values" in line and "3 of their answers" in line
               for line in verdict.terminal_lines(review, "mixed", redactor))
    assert "3 of their answers carry another group" in render(review)
    # the same change without the held-out pin improves
    honest = FollowsExceptOnHeldOut(BREAKING_RULE, set(), verdict_pinned)
    fair, _ = verdict.score_skill(CallRunner(honest, max_calls=1000), tasks, base, head,
                                  settings, skill="dependency-review", person=True)
    assert verdict.verdict_of(fair, 0.0) == ("improved", verdict.BOTH)
