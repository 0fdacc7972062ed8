"""Several agents in `gitsleep review`: each agent's answers scored and judged
apart (its own calls, its own verdict), and `--fail-on-regression` failing when any one
agent's held-out score regressed, naming it."""

from __future__ import annotations

from gitsleep.backends.offline import OfflineBackend
from gitsleep.base.errors import EXIT_OK, EXIT_REGRESSION
from gitsleep.base.redact import Redactor
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import AgentRef, EpochSettings, Judge, Task
from gitsleep.flows.review import edges, verdict

AGENTS = (AgentRef("small", "offline"), AgentRef("large", "offline-recent-2"))
TASKS = [Task("v", "Write a brief.", "val", Judge("rule")),
         Task("h", "Write another brief.", "test", Judge("rule"))]
BASE, HEAD = {"skill": "Be brief.", "memory": None}, {"skill": "Be long.", "memory": None}


def settings(*agents: AgentRef) -> EpochSettings:
    return EpochSettings(model="offline", optimizer_model="offline", judge_model="offline",
                         agents=agents)


def test_each_agent_answers_with_its_own_model_and_name() -> None:
    call = verdict.answer_call(BASE, Task("h@large", "p", "test", Judge("rule"),
                                          agent="large"), settings(*AGENTS), 0)
    assert (call.agent, call.model) == ("large", "offline-recent-2")
    one = verdict.answer_call(BASE, TASKS[1], settings(), 0)
    assert (one.agent, one.model) == ("", "offline")


def test_a_review_of_two_agents_needs_and_scores_each_agents_calls() -> None:
    runner = CallRunner(OfflineBackend(), max_calls=1000)
    # base, head and the base under a placebo (the noise), per task (and agent)
    assert verdict.calls_needed(runner, TASKS, BASE, HEAD, settings()) == 6
    assert verdict.calls_needed(runner, TASKS, BASE, HEAD, settings(*AGENTS)) == 12
    splits, agent_reviews = verdict.score_skill(runner, TASKS, BASE, HEAD, settings(*AGENTS),
                                                skill="s")
    assert splits["test"].n == 2  # the aggregate: every agent's answers
    assert [(a.name, a.model, a.splits["test"].n, a.decided_by) for a in agent_reviews] == [
        ("small", "offline", 1, "test"), ("large", "offline-recent-2", 1, "test")]
    _, none = verdict.score_skill(runner, TASKS, BASE, HEAD, settings(), skill="s")
    assert none == []


def regressing_agent() -> verdict.SkillReview:
    """The aggregate shows no clear change; the agent `large` fell on held-out."""
    fell = verdict.SplitReview("test", 6, 1.0, 0.5, -0.8, -0.2)
    rose = verdict.SplitReview("test", 6, 0.5, 1.0, 0.2, 0.8)
    flat = verdict.SplitReview("test", 12, 0.75, 0.75, -0.3, 0.3)
    return verdict.SkillReview(
        "notes", "scored", "changed: SKILL.md", splits={"test": flat},
        verdict="no clear change", decided_by="test",
        agents=[verdict.AgentReview("small", "m-small", {"test": rose}, "improved", "test"),
                verdict.AgentReview("large", "m-large", {"test": fell}, "regressed", "test")])


def test_one_agents_regression_fails_the_check_and_is_named_everywhere() -> None:
    review = regressing_agent()
    assert review.regressed and review.regressed_agents == ["large"]
    assert verdict.overall([review]) == "regression"
    outcome = edges.ReviewOutcome([review], "sha", "main", "head", [], "",
                                  edges.CommentResult.none(None))
    options = edges.ReviewOptions(base="main", fail_on_regression=True)
    assert edges._exit_code(options, outcome) == EXIT_REGRESSION
    assert edges._exit_code(edges.ReviewOptions(base="main"), outcome) == EXIT_OK
    assert verdict.regression_line([review]) == (
        "gitsleep: a held-out score regressed (--fail-on-regression) (notes agent large): "
        "exit 7")
    review_of_one = verdict.SkillReview("notes", "scored", "r", verdict="regressed")
    assert verdict.regression_line([review_of_one]) == (
        "gitsleep: a held-out score regressed (--fail-on-regression): exit 7")
    data = edges.to_json(outcome, options)
    assert data["regression"] is True
    assert [(a["name"], a["verdict"]) for a in data["skills"][0]["agents"]] == [
        ("small", "improved"), ("large", "regressed")]
    assert data["skills"][0]["agents"][1]["splits"]["test"]["after"] == 0.5

    lines = verdict.terminal_lines(review, "mixed", Redactor())
    assert ("  agent large (m-large): held-out 1.000 -> 0.500 (change -0.500, 95% CI "
            "-0.800 to -0.200): regressed") in lines
    body = verdict.comment_markdown([review], metric="mixed", min_delta=0.0, base_label="b",
                                    head_label="h", rerun="gitsleep review --base b",
                                    redactor=Redactor())
    assert ("| notes | large | m-large | held-out | 6 | 1.000 | 0.500 | -0.500 | "
            "-0.800 to -0.200 | **regressed** |") in body


def test_a_review_of_one_agent_says_nothing_of_agents() -> None:
    review = regressing_agent()
    review.agents = []
    assert "agents" not in review.to_json() and not review.regressed
    body = verdict.comment_markdown([review], metric="mixed", min_delta=0.0, base_label="b",
                                    head_label="h", rerun="r", redactor=Redactor())
    assert "Per agent" not in body
    assert not any("agent" in line for line in verdict.terminal_lines(review, "mixed",
                                                                      Redactor()))
