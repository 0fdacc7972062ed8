"""Which skill is picked: the catalog as a harness shows it, the pick read from the reply,
accuracy over runs, and the gate that covers the siblings."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gitsleep.backends.offline import OfflineBackend
from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.core import triggers as tr
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Answer, EpochSettings, Judge, Task, Trigger
from gitsleep.core.ports import Backend, ModelCall
from tests.support.fake_openai import FakeOpenAIServer

SETTINGS = EpochSettings(model="m", optimizer_model="m", judge_model="m")
CATALOG = [tr.Listing("changelog-writer", "Writes changelog entries for releases."),
           tr.Listing("sql-helper", "Writes and fixes SQL queries.")]


def trigger(tid: str, query: str, should: bool, expect: str | None = None,
            split: str = "val") -> Task:
    return Task(tid, query, split, Judge("trigger"), trigger=Trigger(should, expect))  # type: ignore[arg-type]


@pytest.mark.parametrize(("reply", "picked"), [
    ('{"skill": "sql-helper"}', "sql-helper"),
    ('```json\n{"skill": "sql-helper"}\n```', "sql-helper"),
    ('{"name": "use_skill", "arguments": {"skill": "sql-helper"}}', "sql-helper"),
    ("sql-helper", "sql-helper"),
    ('{"skill": null}', None),
    ('{"skill": "web-search"}', None),  # not in the catalog: no skill, never an error
    ("I would rather answer myself.", None),
    ("", None),
])
def test_a_reply_names_a_skill_of_the_catalog_or_none(reply: str, picked: str | None) -> None:
    assert tr.read_pick(reply, [s.name for s in CATALOG]) == picked


def test_the_catalog_is_shown_with_each_name_and_description() -> None:
    call = tr.pick_call(CATALOG, "fix my join", "m", 0)
    system = call.messages[0][1]
    assert "<name>sql-helper</name>\n<description>Writes and fixes SQL queries.</description>" \
        in system and call.messages[1] == ("user", "fix my join")
    assert json.loads(call.json_schema or "")["required"] == ["skill"]


class Failing(Backend):
    name = "failing"

    def complete(self, call: ModelCall) -> Answer:
        return Answer(text=None, error="HTTP 500")


def test_offline_picks_by_shared_words_and_accuracy_counts_each_run() -> None:
    runner = CallRunner(OfflineBackend())
    picker = tr.Picker(runner, CATALOG, "changelog-writer",
                       EpochSettings(model="m", optimizer_model="m", judge_model="m"))
    scored = picker.score([trigger("a", "draft the changelog for this release", True),
                           trigger("b", "fix this SQL query", False, "sql-helper"),
                           trigger("c", "tell me a joke", False)],
                          "Writes changelog entries for releases.", "baseline", "val")
    assert [q.picks for q in scored.queries] == [("changelog-writer",), ("sql-helper",), (None,)]
    assert scored.accuracy("changelog-writer") == 1.0
    assert [q.shown() for q in scored.queries] == ["changelog-writer", "sql-helper", "(no skill)"]


def test_a_failed_pick_is_an_error_never_a_wrong_pick() -> None:
    picker = tr.Picker(CallRunner(Failing()), CATALOG, "changelog-writer", SETTINGS)
    with pytest.raises(tr.BackendError, match="1 of 1 pick calls failed"):
        picker.score([trigger("a", "q", True)], "d", "baseline", "val")


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    def pick(request: dict[str, object]) -> str:
        messages = request["messages"]
        assert isinstance(messages, list)
        return '{"skill": "sql-helper"}' if "SQL" in messages[-1]["content"] else "no thanks"

    with FakeOpenAIServer(responder=pick) as running:
        yield running


def test_an_openai_compatible_model_picks_through_the_use_skill_tool(
        server: FakeOpenAIServer) -> None:
    backend = OpenAIBackend(api_key="k", base_url=server.base_url, timeout=2.0, max_retries=0)
    try:
        picker = tr.Picker(CallRunner(backend), CATALOG, "sql-helper", SETTINGS)
        scored = picker.score([trigger("a", "fix this SQL", True),
                               trigger("b", "write a poem", False)], "d", "baseline", "val")
    finally:
        backend.close()
    assert [q.picks for q in scored.queries] == [("sql-helper",), (None,)]  # "no thanks": none
    body = server.requests[0].body or {}
    assert body["tools"][0]["function"]["name"] == "use_skill"  # the pick offered as a tool call
