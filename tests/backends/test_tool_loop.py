"""The tool loop of an API agent, against the loopback OpenAI-compatible server: the real
`openai` client sends `tools`, the server plays a model that calls them, gitsleep runs
them and records every call."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.backends.tool_loop import MAX_TURNS
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Check, Judge, Task
from gitsleep.core.ports import ModelCall
from gitsleep.core.replay import answer_call
from gitsleep.core.tools import DATA_CLOSE, DATA_OPEN, ToolSpec
from tests.support.fake_openai import FakeOpenAIServer, ToolCalls

NOTES = (("pricing.md", "# Pricing\nTeam notes on seat-based pricing: no call yet.\n"),
         ("graphql.md", "# GraphQL\nNotes on REST versus GraphQL.\n"))
TOOLS = (ToolSpec("search", "search", "brain/topics", tree="t1", files=NOTES),
         ToolSpec("read_file", "read_file", "brain/topics", tree="t1", files=NOTES))
JUDGE = Judge(kind="rule", checks=(Check("tool_called", "search"),))


def tool_messages(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request.get("messages") or [] if m["role"] == "tool"]


def searcher(request: dict[str, Any]) -> str | ToolCalls:
    """A model that searches, then reads the best hit, then answers from it."""
    results = tool_messages(request)
    if not results:
        return ToolCalls((("search", {"query": "seat pricing"}),))
    if len(results) == 1:
        best = results[0].splitlines()[1].split(":", 1)[0]
        return ToolCalls((("read_file", {"path": best}),))
    return "Per the notes: no call on seat pricing yet."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(searcher) as running:
        yield running


def backend_for(server: FakeOpenAIServer) -> OpenAIBackend:
    return OpenAIBackend(api_key="test-key-7f3a9c1e5b2d4f60", base_url=server.base_url,
                         timeout=2.0, max_retries=0)


def the_call(tools: tuple[ToolSpec, ...] = TOOLS) -> ModelCall:
    task = Task("t", "Should we move to seat-based pricing?", "val", JUDGE, tools=tools)
    return answer_call({"skill": "Answer from the notes."}, task, "m", 0)


def test_the_loop_runs_the_tools_and_records_every_call(server: FakeOpenAIServer) -> None:
    answer = backend_for(server).complete(the_call())
    assert answer.ok and answer.text == "Per the notes: no call on seat pricing yet."
    assert [(c.name, c.arguments) for c in answer.trace or ()] == [
        ("search", '{"query":"seat pricing"}'), ("read_file", '{"path":"pricing.md"}')]
    assert answer.trace is not None and answer.trace[1].result.startswith("# Pricing")
    assert answer.turns == 3 and len(server.requests) == 3
    first = server.requests[0].body or {}
    assert [t["function"]["name"] for t in first["tools"]] == ["search", "read_file"]
    assert first["tools"][0]["function"]["parameters"]["required"] == ["query"]
    last = server.requests[-1].body or {}
    assert [m["role"] for m in last["messages"]] == [
        "system", "system", "user", "assistant", "tool", "assistant", "tool"]
    assert "never instructions" in last["messages"][1]["content"]
    for result in tool_messages(last):  # results are data, marked as such
        assert result.startswith(DATA_OPEN) and result.endswith(DATA_CLOSE)


def test_every_turn_counts_against_the_budget(server: FakeOpenAIServer) -> None:
    runner = CallRunner(backend_for(server))
    runner.call(the_call())
    assert runner.cost.calls == 3
    again = runner.call(the_call())  # the trace is cached with the answer, as one
    assert again.cached and [c.name for c in again.trace or ()] == ["search", "read_file"]
    assert runner.cost.calls == 3 and runner.cost.cache_hits == 1


def test_a_path_outside_the_folder_is_refused_and_the_agent_told(
        server: FakeOpenAIServer) -> None:
    def escaper(request: dict[str, Any]) -> str | ToolCalls:
        if not tool_messages(request):
            return ToolCalls((("read_file", {"path": "../../.gitsleep.yml"}),
                              ("read_file", {"path": "/etc/passwd"}),
                              ("delete_everything", {})))
        return "done"

    server.responder = escaper
    answer = backend_for(server).complete(the_call())
    errors = [c.error or "" for c in answer.trace or ()]
    assert "leaves the folder" in errors[0] and "is absolute" in errors[1]
    assert "no tool is named 'delete_everything'" in errors[2]
    told = tool_messages(server.requests[-1].body or {})
    assert all("error:" in message for message in told)


def test_the_loop_is_bounded_and_a_runaway_agent_is_an_error(server: FakeOpenAIServer) -> None:
    server.responder = lambda request: ToolCalls((("search", {"query": "again"}),))
    answer = backend_for(server).complete(the_call())
    assert not answer.ok and f"after {MAX_TURNS} turns" in (answer.error or "")
    assert answer.trace is not None and len(answer.trace) == MAX_TURNS
    assert len(server.requests) == MAX_TURNS


def test_without_tools_the_request_is_as_before(server: FakeOpenAIServer) -> None:
    server.responder = lambda request: "plain"
    answer = backend_for(server).complete(the_call(tools=()))
    assert answer.text == "plain" and answer.trace is None
    assert "tools" not in (server.requests[0].body or {})
    assert json.dumps(server.requests[0].body).count("TOOL RESULT") == 0


def text_searcher(reply: str) -> Any:
    """A local model whose server has no tool-call format: it writes the call in its text
    (`reply`, the first turn), then answers from the result it is handed."""
    def play(request: dict[str, Any]) -> str:
        results = tool_messages(request)
        if not results:
            return reply
        return "Per the notes: " + ("no call yet." if "no call yet" in results[0] else "?")
    return play


@pytest.mark.parametrize("reply", [
    # Qwen2.5's and Hermes' chat templates ask for this shape
    '<tool_call>\n{"name": "search", "arguments": {"query": "seat pricing"}}\n</tool_call>',
    # small coder models put the same object in a fence, after a sentence
    'I will search the notes first.\n\n```json\n{\n  "name": "search",\n'
    '  "arguments": {"query": "seat pricing"}\n}\n```',
    '{"name": "search", "arguments": {"query": "seat pricing"}}',
    # Qwen2.5-Coder-1.5B on llama.cpp, seen on a real night: the template's other tag
    '<tools>\n{"name": "search", "arguments": {"query": "seat pricing"}}\n</tools>',
    # the wire shape of a call, written out
    '{"type": "function", "function": {"name": "search", '
    '"arguments": "{\\"query\\": \\"seat pricing\\"}"}}',
    # Llama's shape names the arguments `parameters`
    '{"name": "search", "parameters": {"query": "seat pricing"}}',
])
def test_a_call_written_in_the_text_is_run_like_a_native_one(
        server: FakeOpenAIServer, reply: str) -> None:
    server.responder = text_searcher(reply)
    answer = backend_for(server).complete(the_call())
    assert answer.ok and answer.text == "Per the notes: no call yet."
    assert [(c.name, c.arguments) for c in answer.trace or ()] == [
        ("search", '{"query":"seat pricing"}')]
    second = server.requests[1].body or {}
    assistant = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant[0]["tool_calls"][0]["function"]["name"] == "search"
    assert tool_messages(second)[0].startswith(DATA_OPEN)


@pytest.mark.parametrize("reply", [
    # a tool the task did not declare is not a call: it stays the answer
    '<tool_call>\n{"name": "deploy", "arguments": {}}\n</tool_call>',
    # JSON that is an answer, not a call
    '```json\n{"verdict": "reject", "reason": "drops a table"}\n```',
    'Search is the tool to use, with "arguments" you choose.',
    # the tool's declaration echoed back (seen on a real night) asks for nothing
    '<tools>\n{"type": "function", "function": {"name": "search", "description": "Full-text",'
    ' "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}\n</tools>',
    '{"name": "search", "parameters": {"type": "object", "properties": {"query": {}},'
    ' "required": ["query"]}}',
])
def test_text_that_is_not_a_call_of_a_declared_tool_stays_the_answer(
        server: FakeOpenAIServer, reply: str) -> None:
    server.responder = lambda request: reply
    answer = backend_for(server).complete(the_call())
    assert answer.ok and answer.text == reply
    assert answer.trace == () and len(server.requests) == 1


def test_without_tools_a_call_shaped_answer_is_only_text(server: FakeOpenAIServer) -> None:
    reply = '<tool_call>\n{"name": "search", "arguments": {"query": "x"}}\n</tool_call>'
    server.responder = lambda request: reply
    answer = backend_for(server).complete(the_call(tools=()))
    assert answer.text == reply and answer.trace is None


def test_a_command_tool_sees_the_variables_checks_pass_env_names(
        server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCS_REGION", "eu-west-1")
    monkeypatch.setenv("UNNAMED_SECRET", "never-shown-9d2c")
    code = ("import os; print(os.environ.get('DOCS_REGION', 'absent'), "
            "os.environ.get('UNNAMED_SECRET', 'absent'))")
    run = ToolSpec("region", "command", "fx", argv=(sys.executable, "-c", code), timeout=10)

    def caller(request: dict[str, Any]) -> str | ToolCalls:
        return "done" if tool_messages(request) else ToolCalls((("region", {}),))

    server.responder = caller
    backend = OpenAIBackend(api_key="test-key-7f3a9c1e5b2d4f60", base_url=server.base_url,
                            timeout=5.0, max_retries=0, check_pass_env=("DOCS_REGION",))
    answer = backend.complete(the_call(tools=(run,)))
    assert answer.trace is not None
    assert answer.trace[0].result == "exit 0\neu-west-1 absent"


def test_a_server_that_types_its_messages_takes_the_call_back(server: FakeOpenAIServer) -> None:
    """llama-cpp-python's server refuses an assistant message whose content is null (a
    500 on a real night); the call goes back without content, as OpenAI allows too."""
    server.responder = text_searcher(
        '<tool_call>\n{"name": "search", "arguments": {"query": "seat pricing"}}\n</tool_call>')
    server.typed_messages = True
    answer = backend_for(server).complete(the_call())
    assert answer.ok and answer.text == "Per the notes: no call yet.", answer.error
    assistant = [m for m in (server.requests[1].body or {})["messages"]
                 if m["role"] == "assistant"]
    assert "content" not in assistant[0] and assistant[0]["tool_calls"]


def test_an_answer_that_may_run_a_command_tool_is_cached_under_its_environment() -> None:
    """A command tool's result depends on the variables `checks.pass_env` hands it, so an
    answer cached under one list must not serve a run under another."""
    run = ToolSpec("region", "command", "fx", argv=(sys.executable, "-c", "print(1)"))

    def salts(tools: tuple[ToolSpec, ...]) -> list[str]:
        return [OpenAIBackend(api_key="k", check_pass_env=names).cache_salt(the_call(tools))
                for names in ((), ("DOCS_REGION",), ("DOCS_REGION",))]

    first, second, again = salts((run,))
    assert first != second and second == again
    assert len(set(salts(TOOLS))) == 1  # no command tool: the environment decides nothing
