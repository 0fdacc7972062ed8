"""A loopback OpenAI-compatible chat server for tests and benchmarks.

The real `openai` client talks to it over HTTP, so tests exercise the client's own
retries, timeouts and error mapping instead of a mock. It answers
`POST /v1/chat/completions` and the Azure form
`POST /openai/deployments/<deployment>/chat/completions` (and a streamed
`POST /v1/responses`, enough for the Codex CLI), with:

- a responder `(request_json) -> reply text` that plays the model (default: echo);
- faults taken one per request from a queue (`server.inject("429", "500", ...)`);
- persistent server quirks: a required API key, a list of known models, llama.cpp's
  HTTP 500 for `response_format: json_schema`, parameters rejected as unsupported;
- a fixed latency, for benchmarks;
- a record of every request (headers and JSON body) and `usage` in every reply;
- `max_tokens` / `max_completion_tokens` honoured: a longer reply is cut there (in
  words, its stand-in for tokens) with `finish_reason: "length"`.

    with FakeOpenAIServer() as server:
        client = OpenAI(api_key="k", base_url=server.base_url)

It uses only the standard library and binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

# A responder plays the model: it returns the reply text, or a `ToolCalls` when the model
# is to call tools instead (the request's `tools` and the `tool` messages are in its input).
Responder = Callable[[dict[str, Any]], "str | ToolCalls | None"]


@dataclass(frozen=True)
class ToolCalls:
    """A reply that calls tools: each (name, arguments as a JSON-ready value), in order."""

    calls: tuple[tuple[str, Any], ...]
    text: str | None = None

FAULT_KINDS = (
    "401",  # bad key
    "403",  # key not allowed to use the model
    "404",  # unknown model (or deployment, on the Azure path)
    "429",  # rate limited, with Retry-After
    "429-quota",  # insufficient_quota: retrying cannot help
    "500",  # a transient server error
    "500-unsupported-json-schema",  # llama.cpp server's answer to response_format json_schema
    "400",  # a request-specific refusal that quotes the first message, like real ones do
    "400-unsupported-seed",  # OpenAI's answer to a parameter a model does not take
    "hang",  # no reply until well past the client's timeout
    "empty",  # 200 with empty content and no refusal
    "refusal",  # 200 with a refusal instead of content
    "malformed",  # 200 with a body that is not JSON
    "usage-strings",  # 200 whose usage token counts are strings
    "usage-nan",  # 200 whose usage token counts are NaN (Python's json writes and reads it)
    "usage-negative",  # 200 whose usage token counts are negative
    "usage-huge",  # 200 whose usage token counts are 1e400 (infinity when read)
    "invalid-utf8",  # 200 whose body is not UTF-8
    "content-parts",  # 200 whose content is a list of parts, not a string
    "huge-int",  # 200 whose usage holds a 5000-digit integer (over Python's int-string limit)
    "huge-int-content",  # 200 whose content is JSON with a 5000-digit integer in it
    "length",  # 200 cut off by the token cap: finish_reason "length"
    "length-empty",  # 200 cut off before any text (a reasoning model spent the cap)
    "trickle",  # 200 headers at once, then the body one byte every `trickle_interval`
)
HUGE_INT = "9" * 5000

LLAMA_CPP_JSON_SCHEMA_ERROR = (
    "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
    "  Input should be 'text' or 'json_object' [type=literal_error, "
    "input_value='json_schema', input_type=str]"
)


@dataclass(frozen=True)
class Fault:
    """One injected failure; `retry_after` overrides the server default for 429s."""

    kind: str
    retry_after: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; known: {', '.join(FAULT_KINDS)}")


@dataclass
class RecordedRequest:
    """What the server saw: header names are lower-case; `body` is None if not JSON."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: dict[str, Any] | None
    raw: bytes
    received_at: float  # time.monotonic()
    deployment: str | None = None  # set on the Azure path
    fault: str | None = None  # the injected fault this request took, if any
    status: int = 0  # the reply's HTTP status, set just before it is sent


def echo_responder(request: dict[str, Any]) -> str:
    """Reply with the last user message, so a test can tell replies apart."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            return f"echo: {_content_text(message.get('content'))}"
    return "echo:"


def _content_text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def _count_tokens(text: str) -> int:
    """A stand-in tokenizer: words. Deterministic, so tests can assert on usage."""
    return len(text.split())


class FakeOpenAIServer:
    """A scriptable OpenAI-compatible chat server on 127.0.0.1 (see module docstring)."""

    def __init__(
        self,
        responder: Responder = echo_responder,
        *,
        latency: float = 0.0,
        retry_after: float = 0.05,
        hang_seconds: float = 5.0,
        api_key: str | None = None,
        models: tuple[str, ...] | None = None,
        reject_json_schema: bool = False,
        reject_params: tuple[str, ...] = (),
        typed_messages: bool = False,
        serial: bool = False,
        trickle_interval: float = 0.5,
        trickle_seconds: float = 10.0,
    ) -> None:
        self.responder = responder
        self.latency = latency
        self.retry_after = retry_after
        self.hang_seconds = hang_seconds
        self.api_key = api_key
        self.models = models
        self.reject_json_schema = reject_json_schema
        self.reject_params = reject_params
        # llama-cpp-python's server types each message: `content: null` on an assistant
        # message (OpenAI's way beside tool_calls) fails its validation with a 500
        self.typed_messages = typed_messages
        # One request at a time, like a local server with one slot: the rest queue. A
        # request the client gave up on still holds the slot until it is done.
        self.serial = serial
        self.trickle_interval = trickle_interval
        self.trickle_seconds = trickle_seconds  # a trickle stops (connection closed) after this
        self._slot = threading.Lock()
        self.in_flight = 0  # chat requests received and not yet answered
        self.max_in_flight = 0
        self._faults: deque[Fault] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._generation = 0  # bumped by reset(): a trickle of an older generation ends
        self._connections: set[socket.socket] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
        httpd.daemon_threads = True
        httpd.request_queue_size = 128  # benchmarks open dozens of connections at once
        httpd.allow_reuse_address = True
        httpd.server_bind()
        httpd.server_activate()
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake hanging handlers and close every open connection."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):  # already closed by the client
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- addresses ---------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server is not running")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """Scheme, host and port: the `azure_endpoint` for Azure-style clients."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in /v1."""
        return f"{self.root_url}/v1"

    # -- scripting and inspection -------------------------------------------------

    def inject(self, *faults: str | Fault) -> None:
        """Queue faults; each chat request takes the next one (then behaves normally)."""
        parsed = [f if isinstance(f, Fault) else Fault(f) for f in faults]
        with self._lock:
            self._faults.extend(parsed)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def reset(self) -> None:
        """Forget the requests and faults; replies still trickling end now."""
        with self._lock:
            self._requests.clear()
            self._faults.clear()
            self._generation += 1

    # -- used by the handler ------------------------------------------------------

    def _record(self, request: RecordedRequest, take_fault: bool) -> Fault | None:
        with self._lock:
            self._requests.append(request)
            return self._faults.popleft() if take_fault and self._faults else None

    def _count(self, step: int) -> None:
        with self._lock:
            self.in_flight += step
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _track(self, conn: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops."""
        if seconds > 0:
            self._stopping.wait(seconds)


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like the real API
    disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms stall
    fake: FakeOpenAIServer  # set on the per-server subclass
    current: RecordedRequest | None = None

    def setup(self) -> None:
        super().setup()
        self.fake._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.fake._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        """Stay quiet: test output is for test failures."""

    # -- routing ------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.current = None
        error = _error_body(f"Unknown path {self.path}", "invalid_request_error", None)
        self._send_json(404, error)

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = None
        # Azure: /openai/deployments/<deployment>/chat/completions?api-version=...
        parts = url.path.strip("/").split("/")
        is_azure = len(parts) == 5 and parts[:2] == ["openai", "deployments"]
        deployment = parts[2] if is_azure and parts[3:] == ["chat", "completions"] else None
        record = RecordedRequest(
            method="POST",
            path=url.path,
            query=parse_qs(url.query),
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
            received_at=time.monotonic(),
            deployment=deployment,
        )
        self.current = record
        if url.path == "/v1/responses":
            self.fake._record(record, take_fault=False)
            self._responses(record)
            return
        if url.path != "/v1/chat/completions" and deployment is None:
            self.fake._record(record, take_fault=False)
            self._send_json(
                404, _error_body(f"Unknown path {url.path}", "invalid_request_error", None)
            )
            return
        fault = self.fake._record(record, take_fault=True)
        record.fault = fault.kind if fault else None
        self.fake._count(+1)
        try:
            if self.fake.serial:
                with self.fake._slot:
                    self._chat(record, fault)
            else:
                self._chat(record, fault)
        finally:
            self.fake._count(-1)

    # -- the chat endpoint -------------------------------------------------------

    def _chat(self, record: RecordedRequest, fault: Fault | None) -> int:
        fake = self.fake
        fake._pause(fake.latency)
        body = record.body
        if body is None:
            return self._send_json(
                400, _error_body("We could not parse the JSON body.", "invalid_request_error", None)
            )
        model = str(body.get("model", ""))
        presented = record.headers.get("api-key") or record.headers.get(
            "authorization", ""
        ).removeprefix("Bearer ")

        kind = fault.kind if fault else None
        if kind == "401" or (fake.api_key is not None and presented != fake.api_key):
            # Like the real API, the message quotes the key it was given.
            return self._send_json(
                401,
                _error_body(
                    f"Incorrect API key provided: {presented}.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )
        if kind == "403":
            return self._send_json(
                403,
                _error_body(
                    f"Project does not have access to model `{model}`",
                    "invalid_request_error",
                    "model_not_found",
                ),
            )
        target = record.deployment or model
        if kind == "404" or (fake.models is not None and target not in fake.models):
            if record.deployment is not None:
                return self._send_json(
                    404,
                    {
                        "error": {
                            "code": "DeploymentNotFound",
                            "message": "The API deployment for this resource does not exist.",
                        }
                    },
                )
            return self._send_json(
                404,
                _error_body(
                    f"The model `{model}` does not exist or you do not have access to it.",
                    "invalid_request_error",
                    "model_not_found",
                ),
            )
        if kind == "429":
            delay = fault.retry_after if fault and fault.retry_after is not None else None
            delay = fake.retry_after if delay is None else delay
            return self._send_json(
                429,
                _error_body(
                    "Rate limit reached for requests. Please try again shortly.",
                    "requests",
                    "rate_limit_exceeded",
                ),
                headers={"Retry-After": f"{delay:g}"},
            )
        if kind == "429-quota":
            return self._send_json(
                429,
                _error_body(
                    "You exceeded your current quota, please check your plan and billing details.",
                    "insufficient_quota",
                    "insufficient_quota",
                ),
            )
        if kind == "500":
            return self._send_json(
                500,
                _error_body(
                    "The server had an error while processing your request.", "server_error", None
                ),
            )
        if kind == "400":
            messages = body.get("messages") or [{}]
            quoted = _content_text(messages[0].get("content"))[:200]
            return self._send_json(
                400,
                _error_body(
                    f"Invalid value for 'messages[0].content': {quoted!r}",
                    "invalid_request_error",
                    "invalid_value",
                    "messages[0].content",
                ),
            )
        response_format = body.get("response_format")
        format_type = response_format.get("type") if isinstance(response_format, dict) else None
        if kind == "500-unsupported-json-schema" or (
            fake.reject_json_schema and format_type == "json_schema"
        ):
            return self._send_json(
                500,
                _error_body(LLAMA_CPP_JSON_SCHEMA_ERROR, "internal_server_error", None),
            )
        nulls = [i for i, m in enumerate(body.get("messages") or [])
                 if isinstance(m, dict) and m.get("role") == "assistant"
                 and "content" in m and m["content"] is None]
        if fake.typed_messages and nulls:
            return self._send_json(500, _error_body(
                f"7 validation errors: {{'type': 'literal_error', 'loc': ('body', 'messages', "
                f"{nulls[0]}, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input "
                "should be 'system'\", 'input': 'assistant'}", "internal_server_error", None))
        rejected = [p for p in fake.reject_params if p in body]
        if kind == "400-unsupported-seed" and "seed" in body:
            rejected.insert(0, "seed")
        if rejected:
            param = rejected[0]
            return self._send_json(
                400,
                _error_body(
                    f"Unsupported parameter: '{param}' is not supported with this model.",
                    "invalid_request_error",
                    "unsupported_parameter",
                    param,
                ),
            )
        if kind == "hang":
            fake._pause(fake.hang_seconds)
        if kind == "malformed":
            return self._send_raw(200, b"<html>upstream proxy error", "application/json")
        if kind == "invalid-utf8":
            return self._send_raw(200, b'{"choices": [{"message": {"content": "\xff\xfe"}}]}',
                                  "application/json")

        refusal = None
        finish_reason = "stop"
        if kind == "empty":
            text: str | None = ""
        elif kind == "refusal":
            text, refusal = None, "I'm sorry, but I can't help with that."
        elif kind == "huge-int-content":
            text = f'{{"score": {HUGE_INT}, "edits": [], "reason": "big"}}'
        elif kind == "length-empty":
            text, finish_reason = "", "length"
        else:
            replied = fake.responder(body)
            if isinstance(replied, ToolCalls):
                return self._send_tool_calls(record, body, model, replied)
            text = replied
            if kind == "length":
                finish_reason = "length"
            cap = body.get("max_tokens") or body.get("max_completion_tokens")
            if isinstance(cap, int) and text and _count_tokens(text) > cap:
                # Like a real server: generation stops at the cap, mid-answer.
                text, finish_reason = " ".join(text.split()[:cap]), "length"
        prompt_text = " ".join(_content_text(m.get("content")) for m in body.get("messages") or [])
        completion_tokens: Any = _count_tokens(text or refusal or "")
        prompt_tokens: Any = _count_tokens(prompt_text)
        content: Any = text
        if kind == "content-parts":
            content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {}}]
        bad_usage = {"usage-strings": "many", "usage-nan": float("nan"),
                     "usage-negative": -1_000_000, "usage-huge": float("inf")}
        if kind in bad_usage:
            prompt_tokens = completion_tokens = bad_usage[kind]
        reply = {
            "id": f"chatcmpl-fake{record.received_at:.6f}".replace(".", ""),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens if kind in bad_usage else
                prompt_tokens + completion_tokens,
            },
        }
        if kind == "huge-int":
            usage = {**reply["usage"], "completion_tokens": "HUGE"}
            data = json.dumps({**reply, "usage": usage}).replace('"HUGE"', HUGE_INT)
            return self._send_raw(200, data.encode("utf-8"), "application/json")
        if kind == "trickle":
            return self._send_raw(200, json.dumps(reply).encode("utf-8"), "application/json",
                                  trickle=True)
        return self._send_json(200, reply)

    def _send_tool_calls(self, record: RecordedRequest, body: dict[str, Any], model: str,
                         replied: ToolCalls) -> int:
        """A chat completion whose message asks for tool calls (finish_reason tool_calls)."""
        calls = [{"id": f"call_{len(body.get('messages') or [])}_{n}", "type": "function",
                  "function": {"name": name, "arguments": json.dumps(arguments)}}
                 for n, (name, arguments) in enumerate(replied.calls)]
        prompt_text = " ".join(_content_text(m.get("content")) for m in body.get("messages") or [])
        completion = _count_tokens(json.dumps(calls)) + _count_tokens(replied.text or "")
        reply = {
            "id": f"chatcmpl-fake{record.received_at:.6f}".replace(".", ""),
            "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                         "message": {"role": "assistant", "content": replied.text,
                                     "tool_calls": calls}}],
            "usage": {"prompt_tokens": _count_tokens(prompt_text),
                      "completion_tokens": completion,
                      "total_tokens": _count_tokens(prompt_text) + completion},
        }
        return self._send_json(200, reply)

    # -- the Responses endpoint (streamed), enough for `codex exec` ------------------

    def _responses(self, record: RecordedRequest) -> int:
        """`POST /v1/responses` with `stream: true`: the reply as server-sent events.

        The responder gets the request body (its `input` items); usage counts words.
        """
        fake = self.fake
        body = record.body
        if body is None:
            error = _error_body("We could not parse the JSON body.", "invalid_request_error", None)
            return self._send_json(400, error)
        presented = record.headers.get("authorization", "").removeprefix("Bearer ")
        if fake.api_key is not None and presented != fake.api_key:
            return self._send_json(401, _error_body(
                f"Incorrect API key provided: {presented}.", "invalid_request_error",
                "invalid_api_key"))
        text = fake.responder(body) or ""
        prompt_text = " ".join(
            str(part.get("text", ""))
            for item in body.get("input") or [] if isinstance(item, dict)
            for part in item.get("content") or [] if isinstance(part, dict)
        )
        usage = {"input_tokens": _count_tokens(prompt_text),
                 "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": _count_tokens(text),
                 "output_tokens_details": {"reasoning_tokens": 0}}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        message = {"type": "message", "role": "assistant", "id": "msg_fake",
                   "content": [{"type": "output_text", "text": text, "annotations": []}]}
        events = [
            {"type": "response.created", "response": {"id": "resp_fake"}},
            {"type": "response.output_text.delta", "item_id": "msg_fake", "output_index": 0,
             "content_index": 0, "delta": text},
            {"type": "response.output_item.done", "output_index": 0, "item": message},
            {"type": "response.completed", "response": {"id": "resp_fake", "usage": usage}},
        ]
        stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
        return self._send_raw(200, stream.encode("utf-8"), "text/event-stream")

    # -- writing -----------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> int:
        data = json.dumps(payload).encode("utf-8")
        return self._send_raw(status, data, "application/json", headers)

    def _send_raw(
        self,
        status: int,
        data: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
        *,
        trickle: bool = False,
    ) -> int:
        if self.current is not None:
            self.current.status = status
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("x-request-id", f"req_{threading.get_ident()}_{time.monotonic_ns()}")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            if trickle:
                self._trickle(data)
            else:
                self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True  # the client gave up (e.g. after a timeout)
        return status


    def _trickle(self, data: bytes) -> None:
        """One byte per interval: every read returns in time, the reply never ends soon.
        Bounded: after `trickle_seconds` (or when the server stops) the connection closes."""
        fake = self.fake
        self.wfile.flush()
        ends = time.monotonic() + fake.trickle_seconds
        generation = fake._generation
        for index in range(len(data)):
            if (time.monotonic() >= ends or fake._stopping.is_set()
                    or fake._generation != generation):
                self.close_connection = True
                return
            self.wfile.write(data[index : index + 1])
            self.wfile.flush()
            fake._pause(fake.trickle_interval)


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    """A running FakeOpenAIServer, stopped after the test (import it into a conftest)."""
    with FakeOpenAIServer() as server:
        yield server
