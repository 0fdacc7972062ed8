"""The OpenAI backend against a real `openai` client talking to a loopback server.

Timeouts and retry counts are kept small so the client's own back-off stays short.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from gitsleep.backends.openai_compat import (
    EMPTY_REPLY_RETRIES,
    OpenAIBackend,
    RateGate,
    create_openai_backend,
)
from gitsleep.base.errors import EXIT_BACKEND, BackendError
from gitsleep.core.ports import ModelCall
from gitsleep.core.triggers import Listing, pick_call, read_pick
from tests.support.fake_openai import FakeOpenAIServer, Fault, ToolCalls

KEY = "test-key-7f3a9c1e5b2d4f60"
SK_KEY = "sk-proj-AbCdEf0123456789xyzQRS"
SCHEMA = json.dumps(
    {
        "title": "edits",
        "type": "object",
        "properties": {"edits": {"type": "array"}},
        "required": ["edits"],
    },
    sort_keys=True,
    separators=(",", ":"),
)


def call(prompt: str = "Write a brief.", **overrides: object) -> ModelCall:
    fields: dict[str, object] = {
        "purpose": "answer",
        "model": "test-model",
        "messages": (("system", "You are terse."), ("user", prompt)),
    }
    fields.update(overrides)
    return ModelCall(**fields)  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def make_backend(server: FakeOpenAIServer, **overrides: object) -> OpenAIBackend:
    options: dict[str, object] = {
        "api_key": KEY,
        "base_url": server.base_url,
        "timeout": 1.0,
        "max_retries": 2,
    }
    options.update(overrides)
    return OpenAIBackend(**options)  # type: ignore[arg-type]


@pytest.fixture
def backend(server: FakeOpenAIServer) -> Iterator[OpenAIBackend]:
    made = make_backend(server)
    yield made
    made.close()


# -- normal replies --------------------------------------------------------------------


def test_answer_carries_text_and_usage(server: FakeOpenAIServer, backend: OpenAIBackend) -> None:
    answer = backend.complete(call("Summarise the quarterly report", max_tokens=50, seed=7))

    assert answer.ok
    assert answer.text == "echo: Summarise the quarterly report"
    # The fake counts words: "You are terse." + the prompt = 7, reply = 5.
    assert (answer.prompt_tokens, answer.completion_tokens) == (7, 5)
    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Summarise the quarterly report"},
        ],
        "temperature": 0.0,
        "seed": 7,
        "max_tokens": 50,
    }
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_no_seed_is_sent_when_the_call_has_none(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    backend.complete(call(seed=None))
    (request,) = server.requests
    assert request.body is not None
    assert "seed" not in request.body
    assert "max_tokens" not in request.body
    assert "response_format" not in request.body


def test_refusal_is_the_models_answer_not_an_error(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("refusal")
    answer = backend.complete(call())
    assert answer.text == "I'm sorry, but I can't help with that."
    assert answer.error is None
    assert server.request_count == 1


# -- fatal failures: raise at once ---------------------------------------------------------


def test_bad_key_is_fatal_after_exactly_one_request() -> None:
    with FakeOpenAIServer(api_key="the-right-key-123456") as server:
        backend = make_backend(server, api_key_env="MY_LLM_KEY")
        with pytest.raises(BackendError) as raised:
            backend.complete(call())
        backend.close()
    assert server.request_count == 1
    assert raised.value.exit_code == EXIT_BACKEND
    message = str(raised.value)
    assert "401" in message
    assert "MY_LLM_KEY" in message
    assert "\n" not in message
    # The server quoted the key it was given; the error must not.
    assert KEY not in message


def test_unknown_model_is_fatal_and_names_the_model() -> None:
    with FakeOpenAIServer(models=("gpt-known",)) as server:
        backend = make_backend(server)
        with pytest.raises(BackendError) as raised:
            backend.complete(call(model="gpt-typo"))
        backend.close()
    assert server.request_count == 1
    assert "gpt-typo" in str(raised.value)
    assert "model:" in str(raised.value)


def test_permission_denied_is_fatal(server: FakeOpenAIServer, backend: OpenAIBackend) -> None:
    server.inject("403")
    with pytest.raises(BackendError, match="403"):
        backend.complete(call())
    assert server.request_count == 1


def test_exhausted_quota_is_fatal_without_retrying(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("429-quota", "429-quota", "429-quota")
    with pytest.raises(BackendError, match="quota exhausted"):
        backend.complete(call())
    assert server.request_count == 1


# -- transient failures: retried by the client ------------------------------------------


def test_rate_limit_then_success_honours_retry_after(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject(Fault("429", retry_after=0.3))
    answer = backend.complete(call())
    assert answer.ok
    first, second = server.requests
    assert (first.status, second.status) == (429, 200)
    assert second.received_at - first.received_at >= 0.29


def test_server_error_then_success(server: FakeOpenAIServer, backend: OpenAIBackend) -> None:
    server.inject("500")
    answer = backend.complete(call())
    assert answer.text == "echo: Write a brief."
    assert [r.status for r in server.requests] == [500, 200]


def test_hang_past_timeout_then_success(server: FakeOpenAIServer) -> None:
    backend = make_backend(server, timeout=0.4)
    server.inject("hang")
    started = time.monotonic()
    answer = backend.complete(call())
    backend.close()
    assert answer.ok
    assert server.request_count == 2
    assert time.monotonic() - started >= 0.4


def test_persistent_server_error_is_an_error_never_a_text(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("500", "500", "500", "500")
    answer = backend.complete(call())
    assert answer.text is None
    assert not answer.ok
    assert answer.error is not None
    assert answer.error.startswith("HTTP 500")
    assert "\n" not in answer.error
    assert server.request_count == 3  # the first try and max_retries=2


def test_timeouts_that_persist_are_an_error(server: FakeOpenAIServer) -> None:
    backend = make_backend(server, timeout=0.2, max_retries=1)
    server.inject("hang", "hang")
    answer = backend.complete(call())
    backend.close()
    assert answer.text is None
    assert answer.error is not None
    assert answer.error.startswith("timeout")
    assert server.request_count == 2


def test_unreachable_server_is_an_error(server: FakeOpenAIServer) -> None:
    url = server.base_url
    server.stop()
    backend = OpenAIBackend(api_key=KEY, base_url=url, timeout=0.5, max_retries=0)
    answer = backend.complete(call())
    backend.close()
    assert answer.text is None
    assert answer.error is not None
    assert answer.error.startswith("connection failed")


def test_a_request_specific_400_is_an_error_not_fatal(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("400")
    answer = backend.complete(call())
    assert answer.error is not None
    assert answer.error.startswith("HTTP 400")
    assert server.request_count == 1
    assert backend.complete(call()).ok


# -- empty and malformed replies: our own small guard ---------------------------------


def test_empty_reply_then_success(server: FakeOpenAIServer, backend: OpenAIBackend) -> None:
    server.inject("empty")
    answer = backend.complete(call())
    assert answer.text == "echo: Write a brief."
    assert server.request_count == 2
    # Tokens of the wasted reply still count.
    assert answer.prompt_tokens == 2 * 6


def test_repeated_empty_replies_become_an_error(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject(*["empty"] * (EMPTY_REPLY_RETRIES + 1))
    answer = backend.complete(call())
    assert answer.text is None
    assert answer.error is not None
    assert answer.error.startswith("empty reply")
    assert server.request_count == EMPTY_REPLY_RETRIES + 1
    assert server.pending_faults == 0


def test_malformed_body_is_retried_then_reported(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("malformed")
    assert backend.complete(call()).ok
    server.reset()
    server.inject(*["malformed"] * (EMPTY_REPLY_RETRIES + 1))
    answer = backend.complete(call())
    assert answer.text is None
    assert answer.error is not None
    assert answer.error.startswith("malformed reply")
    assert server.request_count == EMPTY_REPLY_RETRIES + 1


# -- structured output and refused parameters -------------------------------------------


def test_json_schema_falls_back_on_llama_cpp_style_500() -> None:
    with FakeOpenAIServer(reject_json_schema=True) as server:
        backend = make_backend(server)
        first = backend.complete(call(json_schema=SCHEMA, purpose="propose"))
        second = backend.complete(call("again", json_schema=SCHEMA, purpose="propose"))
        backend.close()
    assert first.ok
    assert second.ok
    requests = server.requests
    # 500 "unsupported" is not retried like a transient 500: one probe, then the fallback.
    assert [r.status for r in requests] == [500, 200, 200]
    assert requests[0].body is not None
    asked = requests[0].body["response_format"]
    assert asked["type"] == "json_schema"
    assert asked["json_schema"]["name"] == "edits"
    assert asked["json_schema"]["strict"] is False
    assert asked["json_schema"]["schema"] == json.loads(SCHEMA)
    for later in requests[1:]:
        assert later.body is not None
        assert later.body["response_format"] == {
            "type": "json_object",
            "schema": json.loads(SCHEMA),
        }
    assert backend.format_level == "json_object"


def test_response_format_refused_outright_falls_back_to_plain_text() -> None:
    with FakeOpenAIServer(reject_params=("response_format",)) as server:
        backend = make_backend(server)
        answer = backend.complete(call(json_schema=SCHEMA))
        backend.close()
    assert answer.ok
    formats = [
        (r.body or {}).get("response_format", {}).get("type", "none") for r in server.requests
    ]
    assert formats == ["json_schema", "json_object", "none"]
    assert backend.format_level == "none"


def test_refused_seed_is_dropped_and_remembered() -> None:
    with FakeOpenAIServer(reject_params=("seed",)) as server:
        backend = make_backend(server)
        assert backend.complete(call(seed=3)).ok
        assert backend.complete(call("second", seed=3)).ok
        backend.close()
    assert [r.status for r in server.requests] == [400, 200, 200]
    assert [("seed" in (r.body or {})) for r in server.requests] == [True, False, False]
    assert backend.dropped_parameters == {"seed"}


def test_refused_max_tokens_is_renamed_for_reasoning_models() -> None:
    with FakeOpenAIServer(reject_params=("max_tokens",)) as server:
        backend = make_backend(server)
        assert backend.complete(call(max_tokens=64)).ok
        backend.close()
    last = server.requests[-1].body or {}
    assert last.get("max_completion_tokens") == 64
    assert "max_tokens" not in last


def test_a_refused_parameter_no_fallback_fixes_is_fatal() -> None:
    with FakeOpenAIServer(reject_params=("messages",)) as server:
        backend = make_backend(server)
        with pytest.raises(BackendError, match="refuses the parameter 'messages'"):
            backend.complete(call())
        backend.close()
    assert server.request_count == 1


def test_refused_json_object_after_json_schema_is_not_fatal(server: FakeOpenAIServer) -> None:
    # llama.cpp-style probe refusal injected once: the next level works.
    backend = make_backend(server)
    server.inject("500-unsupported-json-schema")
    answer = backend.complete(call(json_schema=SCHEMA))
    backend.close()
    assert answer.ok
    assert server.request_count == 2


# -- secrets ------------------------------------------------------------------------------


def test_the_key_never_appears_in_errors_or_request_bodies() -> None:
    with FakeOpenAIServer(api_key="server-expects-another-key") as server:
        backend = make_backend(server, api_key=SK_KEY, secrets=("hunter2-team-token",))
        with pytest.raises(BackendError) as raised:
            backend.complete(call())
        backend.close()
        assert SK_KEY not in str(raised.value)
        assert "sk-proj-AbCd" not in str(raised.value)

        server.api_key = None
        backend = make_backend(server, api_key=SK_KEY, secrets=("hunter2-team-token",))
        # A 400 that quotes the prompt, which carries both secrets.
        server.inject("400")
        leaked = backend.complete(call(f"my key is {SK_KEY} and hunter2-team-token"))
        backend.close()
    assert leaked.error is not None
    assert "Invalid value" in leaked.error
    assert SK_KEY not in leaked.error
    assert "hunter2-team-token" not in leaked.error
    refused = server.requests[0]  # the prompt of the later request carries the key itself
    assert SK_KEY.encode() not in refused.raw
    assert SK_KEY not in refused.path
    assert refused.headers["authorization"] == f"Bearer {SK_KEY}"


# -- concurrency ------------------------------------------------------------------------


def test_sixteen_threads_share_one_backend(server: FakeOpenAIServer) -> None:
    backend = make_backend(server)
    server.inject(Fault("429", retry_after=0.05), "empty", Fault("429", retry_after=0.05))
    prompts = [f"task number {i}" for i in range(48)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda p: backend.complete(call(p)), prompts))
    backend.close()
    assert [a.text for a in answers] == [f"echo: {p}" for p in prompts]
    assert server.request_count == len(prompts) + 3


def test_a_429_pauses_the_other_workers_too() -> None:
    with FakeOpenAIServer() as server:
        backend = make_backend(server)
        server.inject(Fault("429", retry_after=0.5))
        first = threading.Thread(target=backend.complete, args=(call("first"),))
        first.start()
        deadline = time.monotonic() + 5
        while backend.rate_gate.not_before == 0.0 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert backend.complete(call("second")).ok
        first.join()
        backend.close()
    rate_limited = next(r for r in server.requests if r.status == 429)
    second = next(
        r for r in server.requests if (r.body or {})["messages"][-1]["content"] == "second"
    )
    assert second.received_at - rate_limited.received_at >= 0.45


def test_rate_gate_waits_until_the_latest_hold() -> None:
    gate = RateGate()
    gate.wait()  # nothing held: returns at once
    gate.hold(0.1)
    gate.hold(0.02)  # a shorter hold does not shorten the wait
    started = time.monotonic()
    gate.wait()
    assert time.monotonic() - started >= 0.09


# -- Azure OpenAI -------------------------------------------------------------------------


def test_azure_mode_uses_the_deployment_path_and_api_key_header(
    server: FakeOpenAIServer,
) -> None:
    backend = make_backend(
        server, base_url=None, azure={"endpoint": server.root_url, "api_version": "2024-10-21"}
    )
    answer = backend.complete(call(model="gpt-4o-mini-prod"))
    backend.close()
    assert answer.ok
    (request,) = server.requests
    assert request.path == "/openai/deployments/gpt-4o-mini-prod/chat/completions"
    assert request.query["api-version"] == ["2024-10-21"]
    assert request.headers["api-key"] == KEY
    assert "authorization" not in request.headers


def test_azure_configured_deployment_wins_over_the_model_name(server: FakeOpenAIServer) -> None:
    backend = make_backend(
        server,
        base_url=None,
        azure={"endpoint": server.root_url, "api_version": "2024-10-21", "deployment": "prod-1"},
    )
    assert backend.complete(call(model="gpt-4o-mini")).ok
    backend.close()
    assert server.requests[0].deployment == "prod-1"


def test_azure_unknown_deployment_is_fatal() -> None:
    with FakeOpenAIServer(models=("prod-1",)) as server:
        backend = make_backend(server, base_url=None, azure={"endpoint": server.root_url})
        with pytest.raises(BackendError, match="unknown deployment 'missing'"):
            backend.complete(call(model="missing"))
        backend.close()
    assert server.request_count == 1


# -- the factory --------------------------------------------------------------------------


def test_factory_without_a_key_says_what_to_set() -> None:
    with pytest.raises(BackendError) as raised:
        create_openai_backend(
            api_key_env="OPENAI_API_KEY",
            env={},
            base_url=None,
            timeout=5,
            max_retries=0,
            azure=None,
        )
    assert raised.value.exit_code == EXIT_BACKEND
    assert "set OPENAI_API_KEY or change api_key_env in .gitsleep.yml" in str(raised.value)


def test_factory_names_a_custom_key_variable() -> None:
    with pytest.raises(BackendError, match="set TEAM_LLM_KEY"):
        create_openai_backend(
            api_key_env="TEAM_LLM_KEY",
            env={"OPENAI_API_KEY": "not-the-configured-one"},
            base_url=None,
            timeout=5,
            max_retries=0,
            azure=None,
        )


def test_factory_builds_a_working_backend(server: FakeOpenAIServer) -> None:
    backend = create_openai_backend(
        api_key_env="TEAM_LLM_KEY",
        env={"TEAM_LLM_KEY": KEY},
        base_url=server.base_url,
        timeout=1.0,
        max_retries=0,
        azure=None,
    )
    assert backend.name == "openai"
    assert backend.complete(call()).ok
    backend.close()
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_factory_switches_to_azure_from_the_usual_variables(server: FakeOpenAIServer) -> None:
    backend = create_openai_backend(
        api_key_env="OPENAI_API_KEY",
        env={
            "AZURE_OPENAI_ENDPOINT": server.root_url,
            "AZURE_OPENAI_API_KEY": KEY,
            "AZURE_OPENAI_API_VERSION": "2025-01-01-preview",
        },
        base_url=None,
        timeout=1.0,
        max_retries=0,
        azure=None,
    )
    assert backend.complete(call(model="dep-a")).ok
    backend.close()
    (request,) = server.requests
    assert request.deployment == "dep-a"
    assert request.query["api-version"] == ["2025-01-01-preview"]
    assert request.headers["api-key"] == KEY


# -- hostile replies: a failed call, never a crash ----------------------------------------

MALFORMED_REPLIES = ("usage-strings", "usage-nan", "usage-negative", "usage-huge",
                     "invalid-utf8", "huge-int")


@pytest.mark.parametrize("fault", MALFORMED_REPLIES)
def test_a_malformed_reply_is_retried_like_a_transient_failure(
    server: FakeOpenAIServer, backend: OpenAIBackend, fault: str
) -> None:
    server.inject(fault)
    answer = backend.complete(call())
    assert answer.text == "echo: Write a brief."
    assert server.request_count == 2
    # Counts that are not counts are not added: only the good reply's usage.
    assert (answer.prompt_tokens, answer.completion_tokens) == (6, 4)


@pytest.mark.parametrize("fault", MALFORMED_REPLIES)
def test_a_malformed_reply_that_persists_is_a_recorded_error(
    server: FakeOpenAIServer, backend: OpenAIBackend, fault: str
) -> None:
    server.inject(*[fault] * (EMPTY_REPLY_RETRIES + 1))
    answer = backend.complete(call())
    assert answer.text is None
    assert answer.error is not None and answer.error.startswith("malformed reply: ")
    assert "\n" not in answer.error and len(answer.error) <= 400
    assert answer.prompt_tokens >= 0 and answer.completion_tokens >= 0
    assert server.request_count == EMPTY_REPLY_RETRIES + 1


def test_bad_token_counts_are_named_in_the_error(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject(*["usage-strings"] * (EMPTY_REPLY_RETRIES + 1))
    error = backend.complete(call()).error or ""
    assert "usage.prompt_tokens is 'many', not a token count" in error


def test_content_as_a_list_of_parts_is_read_as_its_text(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("content-parts")
    answer = backend.complete(call())
    assert answer.text == "echo: Write a brief."
    assert server.request_count == 1


def test_a_reply_cut_by_the_token_cap_says_so(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("length")
    answer = backend.complete(call(max_tokens=16))
    assert answer.ok and answer.finish_reason == "length"
    assert backend.complete(call("again")).finish_reason == "stop"


def test_a_cap_spent_before_any_text_is_an_error_without_retries(
    server: FakeOpenAIServer, backend: OpenAIBackend
) -> None:
    server.inject("length-empty", "length-empty")
    answer = backend.complete(call(max_tokens=16))
    assert answer.text is None
    assert answer.error is not None and "token cap (max_tokens=16)" in answer.error
    assert "max_answer_tokens" in answer.error
    assert server.request_count == 1


# -- never a hang: a total deadline per request, and a pause after timeouts ----------------


def test_a_reply_that_trickles_is_cut_at_the_total_deadline() -> None:
    """Headers at once, then a byte every 0.2 s: no single read ever times out."""
    with FakeOpenAIServer(trickle_interval=0.2, trickle_seconds=8) as server:
        backend = make_backend(server, timeout=0.6, max_retries=0)
        server.inject("trickle")
        started = time.monotonic()
        answer = backend.complete(call())
        elapsed = time.monotonic() - started
        backend.close()
    assert answer.text is None
    assert answer.error is not None and answer.error.startswith("timeout: no reply within 0.6s")
    assert elapsed < 3, f"the whole call is bounded by its timeout, took {elapsed:.1f}s"
    assert server.request_count == 1


def test_a_trickled_reply_is_retried_like_any_timeout() -> None:
    with FakeOpenAIServer(trickle_interval=0.2, trickle_seconds=8) as server:
        backend = make_backend(server, timeout=0.6, max_retries=1)
        server.inject("trickle")
        started = time.monotonic()
        answer = backend.complete(call())
        backend.close()
    assert answer.text == "echo: Write a brief."
    assert server.request_count == 2
    assert time.monotonic() - started < 5


def test_after_a_timeout_every_worker_pauses_before_sending_more() -> None:
    """A server still busy with the call we gave up on gets time to finish it: no request
    from any worker reaches it within `timeout` seconds of the timeout."""
    with FakeOpenAIServer(hang_seconds=3) as server:
        backend = make_backend(server, timeout=0.5, max_retries=1)
        server.inject("hang")
        first = threading.Thread(target=backend.complete, args=(call("first"),))
        first.start()
        deadline = time.monotonic() + 5
        while backend.rate_gate.not_before == 0.0 and time.monotonic() < deadline:
            time.sleep(0.005)
        timed_out_at = time.monotonic()
        assert backend.complete(call("second")).ok
        first.join()
        backend.close()
    hung, *later = server.requests
    assert hung.fault == "hang" and len(later) == 2
    assert all(r.received_at - timed_out_at >= 0.45 for r in later)


def test_the_pause_doubles_with_timeouts_in_a_row_and_resets_on_a_reply(
    server: FakeOpenAIServer,
) -> None:
    backend = make_backend(server, timeout=0.25)
    pauses = []
    for _ in range(5):
        backend.rate_gate.not_before = 0.0
        backend._timed_out()
        pauses.append(round(backend.rate_gate.not_before - time.monotonic(), 1))
    assert pauses == [0.2, 0.5, 1.0, 2.0, 2.0]  # 0.25 * 1, 2, 4, 8, then no longer
    backend.rate_gate.not_before = 0.0
    assert backend.complete(call()).ok
    backend._timed_out()
    assert backend.rate_gate.not_before - time.monotonic() <= 0.25
    backend.close()


def test_a_serial_server_is_not_buried_under_retries() -> None:
    """One slot, a call that hangs in it, three workers: the calls we gave up on still
    hold the server, and retries sent at once would queue behind them."""
    with FakeOpenAIServer(serial=True, hang_seconds=1.0) as server:
        backend = make_backend(server, timeout=0.3, max_retries=2)
        server.inject("hang")
        with ThreadPoolExecutor(max_workers=3) as pool:
            hung = pool.submit(backend.complete, call("hangs"))
            while server.request_count == 0:  # the hung call holds the slot first
                time.sleep(0.005)
            queued = [pool.submit(backend.complete, call(f"q{i}")) for i in range(2)]
            answers = [f.result() for f in (hung, *queued)]
        backend.close()
    assert all(a.ok for a in answers)
    # Sent at once, the three retries would join the three calls the server still holds.
    assert server.max_in_flight <= 3, "no retry reached the server while it was busy"


# -- which skill the agent loads: the pick as a native `use_skill` call ------------------

CATALOG = [Listing("scribe", "Writes release notes."), Listing("committer", "Writes commits.")]


def picked(server: FakeOpenAIServer, backend: OpenAIBackend, reply: object) -> str | None:
    server.responder = lambda request: reply
    answer = backend.complete(pick_call(CATALOG, "Draft the notes for 2.4", "m", 0))
    assert answer.ok
    return read_pick(answer.text, [s.name for s in CATALOG])


def test_a_pick_is_offered_as_the_use_skill_tool(server: FakeOpenAIServer,
                                                 backend: OpenAIBackend) -> None:
    assert picked(server, backend, ToolCalls((("use_skill", {"skill": "scribe"}),))) == "scribe"
    sent = server.requests[-1].body or {}
    tool = sent["tools"][0]["function"]
    assert tool["name"] == "use_skill"
    assert tool["parameters"]["properties"]["skill"]["enum"] == ["scribe", "committer"]
    assert "response_format" not in sent  # a forced JSON reply would leave no room for a call


@pytest.mark.parametrize(("reply", "skill"), [
    ('<tool_call>\n{"name": "use_skill", "arguments": {"skill": "committer"}}\n</tool_call>',
     "committer"),  # a local server's model writes the call as text
    ('{"skill": "scribe"}', "scribe"),  # the structured reply still counts
    ("None of these skills fits the request.", None),  # no call: no skill, never an error
])
def test_a_pick_written_as_text_or_none_at_all(server: FakeOpenAIServer, backend: OpenAIBackend,
                                               reply: str, skill: str | None) -> None:
    assert picked(server, backend, reply) == skill


def test_a_use_skill_call_naming_no_skill_of_the_catalog_picks_none(
        server: FakeOpenAIServer, backend: OpenAIBackend) -> None:
    assert picked(server, backend, ToolCalls((("use_skill", {"skill": "deploy"}),))) is None
