"""Replaying a split: every task answered and judged under one document version, each
answer ticked, the same call never paid twice."""

from __future__ import annotations

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.replay import answer_call, documents_version, score_split
from gitsleep.flows.prepare import read_inputs
from gitsleep.inputs.config import load_config
from tests.support.gitrepo import EXAMPLES


def test_a_split_is_scored_once_per_task_and_replayed_from_the_cache() -> None:
    root = EXAMPLES / "brief-writer"
    config = load_config(root / ".gitsleep.yml")
    skill = config.skills[0]
    tasks, documents = read_inputs(root, skill)
    settings = config.epoch_settings(skill=skill.name)
    val = [t for t in tasks if t.split == "val"]
    cache = ResponseCache()
    ticks: list[int] = []
    runner = CallRunner.for_settings(OfflineBackend(), settings, cache=cache)
    first = score_split(runner, val, documents, settings, label="base", split="val",
                        on_answer=lambda: ticks.append(1))
    assert [t.task_id for t in first.tasks] == [t.id for t in val]
    assert len(ticks) == len(val) * max(1, settings.gate.repeats)
    assert first.mean is not None and 0.0 <= first.mean <= 1.0 and first.errors == 0
    assert first.version == documents_version(documents)
    again = CallRunner.for_settings(OfflineBackend(), settings, cache=cache)
    second = score_split(again, val, documents, settings, label="base", split="val")
    assert again.cost.calls == 0 and again.cost.cache_hits > 0
    assert second.mean == first.mean


def test_an_answer_call_carries_the_documents_and_the_task() -> None:
    root = EXAMPLES / "brief-writer"
    config = load_config(root / ".gitsleep.yml")
    tasks, documents = read_inputs(root, config.skills[0])
    call = answer_call(documents, tasks[0], "m", 0)
    assert call.purpose == "answer" and call.model == "m"
    assert call.messages[-1] == ("user", tasks[0].prompt)
    skill_text = documents["skill"] or ""
    assert skill_text and any(skill_text in text for role, text in call.messages
                              if role == "system")
