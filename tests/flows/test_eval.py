"""Several agents: `eval` scores each agent's answers apart."""

from __future__ import annotations

from gitsleep.core import agents
from gitsleep.core.models import (
    AgentRef,
    EpochSettings,
    Judge,
    PassResult,
    SampleResult,
    Score,
    Task,
    TaskResult,
)
from gitsleep.flows.eval import agent_rows

REFS = (AgentRef("small", "m-small"), AgentRef("large", "m-large"))


def scored(task_id: str, value: float) -> TaskResult:
    return TaskResult(task_id, "val", [SampleResult(0, "a", None, Score(value, value, ""))],
                      value, value, value)


def test_each_agents_score_is_the_mean_of_its_own_answers() -> None:
    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m", agents=REFS)
    tasks = agents.expand([Task("a", "p", "val", Judge("rule")),
                           Task("b", "q", "val", Judge("rule"))], REFS)
    result = PassResult("eval", "val", "v", [scored("a@small", 1.0), scored("a@large", 0.0),
                                             scored("b@small", 0.5), scored("b@large", 0.0)])
    assert agent_rows(result, tasks, settings) == [
        {"name": "small", "model": "m-small", "n": 2, "score": 0.75},
        {"name": "large", "model": "m-large", "n": 2, "score": 0.0}]
    one = EpochSettings(model="m", optimizer_model="m", judge_model="m")
    assert agent_rows(result, [Task("a", "p", "val", Judge("rule"))], one) == []
