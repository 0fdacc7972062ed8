"""Trajectory checks: judged over the tools the agent called, never over its text."""

from __future__ import annotations

import pytest

from gitsleep.base.errors import UsageError
from gitsleep.core import judges, replay
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task, ToolCall
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.trace import canonical_arguments, shown

SEARCH = ToolCall("search", '{"query":"pricing"}', "brain/topics/pricing.md: notes")
READ = ToolCall("read_file", '{"path":"brain/topics/pricing.md"}', "# Pricing")


def rule(*checks: Check) -> Judge:
    return Judge(kind="rule", checks=checks)


@pytest.mark.parametrize(
    ("check", "trace", "passed"),
    [
        (Check("tool_called", "search"), (SEARCH,), True),
        (Check("tool_called", "search"), (), False),
        (Check("tool_called", "search"), (READ,), False),
        (Check("tool_called", "search", args_regex="pric"), (SEARCH,), True),
        (Check("tool_called", "search", args_regex="kubernetes"), (SEARCH,), False),
        (Check("tool_not_called", "read_file"), (SEARCH,), True),
        (Check("tool_not_called", "read_file"), (SEARCH, READ), False),
        (Check("tool_not_called", "search", args_regex="kubernetes"), (SEARCH,), True),
        (Check("tool_called_before", '["search", "read_file"]'), (SEARCH, READ), True),
        (Check("tool_called_before", '["search", "read_file"]'), (READ, SEARCH), False),
        (Check("tool_called_before", '["search", "read_file"]'), (READ,), False),
        (Check("tool_called_before", '["search", "read_file"]'), (), True),  # B never called
        (Check("max_tool_calls", 1), (SEARCH,), True),
        (Check("max_tool_calls", 1), (SEARCH, READ), False),
        (Check("max_tool_calls", 0), (), True),
    ],
)
def test_trajectory_checks_read_the_trace(check: Check, trace: tuple[ToolCall, ...],
                                          passed: bool) -> None:
    score = judges.score_rule((check,), "any text at all", trace=trace)
    assert score.hard == (1.0 if passed else 0.0)
    assert (score.failed == ()) is passed


def test_a_tool_named_in_the_text_is_not_a_call() -> None:
    """The answer's words never pass a trajectory check: only the trace does."""
    score = judges.score_rule((Check("tool_called", "search"),),
                              "I called search. TOOL_CALL: search", trace=())
    assert score.hard == 0.0
    assert "tool_called 'search'" in score.reason


def test_without_a_trace_the_check_fails_saying_why() -> None:
    score = judges.score_rule((Check("tool_called", "search"),), "x", trace=None)
    assert score.hard == 0.0 and "no tool trace" in score.reason


def test_text_and_trajectory_checks_judge_together() -> None:
    checks = (Check("contains", "Pricing"), Check("tool_called", "search"))
    assert judges.score_rule(checks, "Pricing: seats", trace=(SEARCH,)).hard == 1.0
    half = judges.score_rule(checks, "Pricing: seats", trace=())
    assert (half.hard, half.soft) == (0.0, 0.5)


def test_label_shows_the_arguments_regex() -> None:
    assert Check("tool_called", "search", args_regex="pric").label() == (
        "tool_called 'search' args_regex 'pric'")
    assert Check("tool_called_before", '["search", "read_file"]').label() == (
        'tool_called_before ["search", "read_file"]')


def test_arguments_are_kept_canonical() -> None:
    assert canonical_arguments('{"b": 1, "a": "x"}') == '{"a":"x","b":1}'
    assert canonical_arguments({"query": "q"}) == '{"query":"q"}'
    assert canonical_arguments("not json") == '"not json"'


def test_shown_clips_results_and_says_when_nothing_was_called() -> None:
    long = ToolCall("search", '{"query":"x"}', "word " * 200)
    text = shown((long,), result_chars=40)
    assert text.startswith('1. search({"query":"x"}) -> ') and len(text) < 100
    assert shown(()) == "(no tool was called)"
    assert shown(None) == "(the backend gave no tool trace)"


# --- replay: a trace is needed to score a trajectory task ------------------------------


class ScriptedAgent(Backend):
    """An agent that calls `search` when its skill says "search", else nothing."""

    name = "scripted"
    traces = True

    def complete(self, call: ModelCall) -> Answer:
        searches = any("search" in content for role, content in call.messages
                       if role == "system")
        return Answer("An answer.", trace=(SEARCH,) if searches else ())


class Untraced(ScriptedAgent):
    name = "untraced"
    traces = False

    def complete(self, call: ModelCall) -> Answer:
        return Answer("An answer.")  # a backend that cannot say what it called


TASK = Task("t1", "Should we move to seat pricing?", "val", rule(Check("tool_called", "search")))
SETTINGS = EpochSettings(model="m", optimizer_model="m", judge_model="m")


def score(backend: Backend, skill: str) -> float | None:
    result = replay.score_split(CallRunner(backend), [TASK], {"skill": skill}, SETTINGS,
                                label="t", split="val")
    return result.mean


def test_an_agent_that_skips_the_tool_fails_and_one_that_calls_it_passes() -> None:
    assert score(ScriptedAgent(), "Answer from memory.") == 0.0
    assert score(ScriptedAgent(), "Always search the notes first.") == 1.0


def test_a_backend_without_traces_is_refused_before_any_call() -> None:
    backend = Untraced()
    with pytest.raises(UsageError, match="untraced backend gave no tool trace"):
        score(backend, "x")


def test_an_answer_without_a_trace_is_an_error_never_a_zero() -> None:
    class Forgetful(ScriptedAgent):
        def complete(self, call: ModelCall) -> Answer:
            return Answer("An answer.")  # says it traces, gave none this time

    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m",
                             max_error_rate=1.0)
    result = replay.score_split(CallRunner(Forgetful()), [TASK], {"skill": "x"}, settings,
                                label="t", split="val")
    sample = result.tasks[0].samples[0]
    assert sample.score is None and "gave no tool trace" in (sample.error or "")
    assert result.mean is None  # unscored, not 0


def test_tools_are_part_of_the_answer_cache_key() -> None:
    from gitsleep.core.tools import ToolSpec

    with_tool = Task("t1", "p", "val", TASK.judge,
                     tools=(ToolSpec("search", "search", "notes", tree="abc"),))
    other_tree = Task("t1", "p", "val", TASK.judge,
                      tools=(ToolSpec("search", "search", "notes", tree="def"),))
    plain = Task("t1", "p", "val", TASK.judge)
    keys = {replay.answer_call({"skill": "s"}, t, "m", 0).cache_key()
            for t in (with_tool, other_tree, plain)}
    assert len(keys) == 3


def test_the_call_ceiling_counts_every_turn_a_tool_loop_may_take() -> None:
    from gitsleep.core.epoch import call_ceiling
    from gitsleep.core.tools import ANSWER_TURNS, ToolSpec

    plain = [Task(f"{s}{i}", "p", s, TASK.judge)  # type: ignore[arg-type]
             for s in ("train", "val", "test") for i in range(2)]
    tooled = [Task(t.id, t.prompt, t.split, t.judge, tools=(ToolSpec("search", "search", "n"),))
              for t in plain]
    settings = EpochSettings(model="m", optimizer_model="m", judge_model="m", rounds=1,
                             proposals=1, edit_budget=1)
    assert call_ceiling(settings, tooled, False) > call_ceiling(settings, plain, False)
    # held-out alone (its baseline, final and two noise passes): every answer at the bound
    assert (call_ceiling(settings, tooled[4:], False) - call_ceiling(settings, plain[4:], False)
            == 4 * 2 * (ANSWER_TURNS - 1))
