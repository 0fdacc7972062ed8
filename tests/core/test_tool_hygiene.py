"""Reflection sees what the agent called beside the trajectory check that failed, and an
edit that copies a tool's answer or a tool folder's notes is refused."""

from __future__ import annotations

import json

from gitsleep.core import reflect
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import (
    Answer,
    Check,
    Edit,
    EpochSettings,
    Judge,
    SampleResult,
    Score,
    Task,
    TaskResult,
    ToolCall,
)
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.tool_hygiene import drop_copies, tool_texts
from gitsleep.core.tools import ToolSpec

SEARCHED = Check("tool_called", "search", args_regex="pricing")
NOTE = ("Team decision notes on seat pricing. No final call has been made. Logged "
        "considerations: cost, timing, reversibility and the main risk.")
TOOLS = (ToolSpec("search", "search", "notes", tree="t", files=(("pricing.md", NOTE),)),)
TASKS = {f"t{i}": Task(f"t{i}", f"Should we change pricing {i}?", "train",
                       Judge("rule", (SEARCHED,)), tools=TOOLS) for i in (1, 2)}
LEAK = "sk-proj-AbCdEf0123456789xyzQRS"
CALLED = (ToolCall("search", '{"query":"kubernetes"}', f"k8s.md: cluster notes {LEAK}"),)


def failed(task_id: str) -> TaskResult:
    score = Score(0.0, 0.0, "failed: tool_called 'search' args_regex 'pricing'", (SEARCHED,))
    return TaskResult(task_id, "train", [SampleResult(0, "An answer.", None, score,
                                                      trace=CALLED)], 0.0, 0.0, 0.0)


def test_the_prompt_shows_the_calls_beside_the_failed_check() -> None:
    prompt = reflect.build_prompt(reflect.Evidence(
        "skill", "# Skill\nAnswer.\n", [failed("t1"), failed("t2")], [], TASKS, []), 2)
    assert ('the agent must call the tool "search" before it answers' in prompt)
    block = prompt.split("<<<AGENT_TOOL_CALLS")[1].split("AGENT_TOOL_CALLS>>>")[0]
    assert '1. search({"query":"kubernetes"}) -> k8s.md: cluster notes' in block
    assert LEAK not in prompt  # clipped and redacted like every result shown


def test_a_task_that_failed_no_trajectory_check_shows_no_calls() -> None:
    plain = Task("t3", "p", "train", Judge("rule", (Check("contains", "x"),)))
    score = Score(0.0, 0.0, "failed: contains 'x'", (Check("contains", "x"),))
    result = TaskResult("t3", "train", [SampleResult(0, "a", None, score, trace=CALLED)],
                        0.0, 0.0, 0.0)
    prompt = reflect.build_prompt(reflect.Evidence("skill", "# S\n", [result], [],
                                                   {"t3": plain}, []), 2)
    assert "AGENT_TOOL_CALLS" not in prompt


def test_an_edit_copying_a_note_or_a_result_is_refused() -> None:
    sources = tool_texts([s for r in (failed("t1"),) for s in r.samples], TASKS.values())
    assert NOTE in sources and CALLED[0].result in sources
    rule = Edit("add", 'Call the "search" tool before you answer.')
    copy = Edit("add", "Remember: no final call has been made. Logged considerations: cost, "
                       "timing and risk.")
    result = Edit("add", "Always mention the cluster notes from k8s.md: cluster notes "
                         f"{LEAK} in the answer.")
    kept, refused = drop_copies([rule, copy, result], [], [failed("t1")], TASKS.values())
    assert kept == [rule, result]  # a result of fewer than 8 words is no copy
    assert [o.edit for o in refused] == [copy]
    assert "copies what a tool answered or a tool's folder holds" in refused[0].reason


class Copier(Backend):
    name = "copier"

    def complete(self, call: ModelCall) -> Answer:
        return Answer(json.dumps({"edits": [
            {"op": "add", "content": "No final call has been made. Logged considerations: "
                                     "cost, timing, reversibility and the main risk.",
             "rationale": "from the notes"}]}))


def test_propose_drops_the_copy_and_keeps_the_reason() -> None:
    settings = EpochSettings(model="a", optimizer_model="o", judge_model="j", edit_budget=2)
    proposal = reflect.propose(CallRunner(Copier()), settings, reflect.Evidence(
        "skill", "# Skill\nAnswer.\n", [failed("t1"), failed("t2")], [], TASKS, []),
        round_no=1, index=0)
    assert proposal.edits == []
    assert any("copies what a tool answered" in d.reason for d in proposal.dropped)
