"""The OpenAI-compatible backend: Chat Completions through the official `openai` client.

It works with OpenAI, Azure OpenAI and the local servers that speak the same protocol
(vLLM, Ollama, llama.cpp). The rules it keeps:

- Errors are results, never scores. Transient failures (connection errors, timeouts,
  408/409/429/5xx) are retried by the client itself (`max_retries`); a call that still
  fails comes back as `Answer(text=None, error=...)`. Failures that would fail every
  call (bad key, unknown model, exhausted quota, a parameter the server refuses and no
  fallback fixes) raise `BackendError` at once.
- Servers differ in what they accept. Structured output is asked for as `json_schema`,
  then `json_object`, then plain text; `seed` (and `temperature`, `max_tokens` for
  reasoning models) are dropped or renamed when refused. What worked is remembered for
  the life of the backend, so the probing costs one extra request, once.
- A 429 with Retry-After pauses every worker, not just the one that got it; so does a
  timeout (the server may still be busy with the request given up on).
- `timeout` is the whole request (`gitsleep.base.deadline`), not each socket read.
- A reply is parsed by hand (`_parse_reply`): a malformed one is a failed call, never a crash.
- The API key never appears in an error message.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import openai

from gitsleep.backends import tool_loop
from gitsleep.base.deadline import DeadlineClientMixin
from gitsleep.base.errors import BackendError
from gitsleep.core import tools as tool_kinds
from gitsleep.core.models import Answer
from gitsleep.core.numbers import loads_json
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.triggers import PICK_TOOL

if TYPE_CHECKING:  # openai 3.x ships httpx2; only the type names are needed here
    import httpx2

FORMAT_LEVELS = ("json_schema", "json_object", "none")  # structured output, best first
EMPTY_REPLY_RETRIES = 2  # extra attempts when the server answers 200 with nothing in it
DEFAULT_AZURE_API_VERSION = "2024-10-21"  # GA; supports json_schema structured outputs
MESSAGE_MAX_CHARS = 400
TIMEOUT_PAUSE_MAX = 60.0  # the longest shared pause after timeouts, in seconds

# Words servers use when they refuse a parameter rather than fail.
_REFUSAL_MARKERS = (
    "unsupported",
    "not supported",
    "input should be",  # pydantic validation (llama.cpp server, vLLM)
    "unrecognized",
    "unknown parameter",
    "extra inputs are not permitted",
    "extra_forbidden",
    "not allowed",
    "does not support",
)
# Optional request parameters a server may refuse, with the words that name them.
_PARAM_NAMES = {
    "response_format": ("response_format", "json_schema"),
    "seed": ("seed",),
    "temperature": ("temperature",),
    "max_tokens": ("max_tokens",),
    "max_completion_tokens": ("max_completion_tokens",),
}
_REFUSAL_CODES = {"unsupported_parameter", "unsupported_value"}  # OpenAI's codes
_FATAL_CODES = {"model_not_found", "deploymentnotfound"}
_SK_KEY = re.compile(r"sk-[A-Za-z0-9_\-*]{4,}")


class RateGate:
    """A shared "not before" time: after a 429 with Retry-After every worker waits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.not_before = 0.0  # time.monotonic() before which no request is sent

    def hold(self, seconds: float) -> None:
        with self._lock:
            self.not_before = max(self.not_before, time.monotonic() + seconds)

    def wait(self) -> None:
        while (delay := self.not_before - time.monotonic()) > 0:
            time.sleep(delay)


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Retry-After (seconds) or retry-after-ms, as the client reads them; dates ignored."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if 0 < seconds <= 120:  # the client ignores longer delays too
            return seconds
    return None


def _refused_parameter(
    status: int, message: str, param: str | None, sent: Sequence[str]
) -> str | None:
    """The optional parameter the server refused, if that is what the error says.

    A 400/422 that names a parameter we sent is a refusal (`param` is set by OpenAI).
    A 5xx must also say it is a validation/unsupported problem: llama.cpp's server
    answers `response_format: json_schema` with HTTP 500 "Input should be 'text' or
    'json_object'", while an ordinary 500 is transient and must be retried.
    """
    if status not in (400, 422) and status < 500:
        return None
    low = message.lower()
    if status in (400, 422) and param in sent:
        return param
    marked = any(marker in low for marker in _REFUSAL_MARKERS)
    for name in sent:
        words = _PARAM_NAMES.get(name, (name,))
        named = any(re.search(rf"(?<![a-z_]){re.escape(w)}(?![a-z_])", low) for w in words)
        if named and (marked or (status in (400, 422) and name == "response_format")):
            return name
    return None


def _error_fields(body: object) -> tuple[str, str | None, str | None]:
    """(message, code, param) from an error body, whatever shape the server used."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or inner.get("detail") or json.dumps(inner)
            code = inner.get("code") or inner.get("type")
            param = inner.get("param")
            return str(message), (str(code) if code else None), (str(param) if param else None)
        return str(inner), None, None
    return ("" if body is None else str(body)), None, None


def _is_quota(code: str | None, message: str) -> bool:
    return (
        code == "insufficient_quota"
        or "insufficient_quota" in message
        or ("exceeded your current quota" in message.lower())
    )


class _GuardedClientMixin:
    """Client hooks: wait on the shared rate gate, and do not retry what cannot succeed.

    The client retries every 429 and 5xx. Two of those never improve by waiting: a
    quota 429 and a 5xx that is really a refused parameter (llama.cpp). Refusing the
    retry lets `complete` fall back or stop at once instead of sleeping first.
    """

    rate_gate: RateGate | None = None

    def _prepare_request(self, request: httpx2.Request) -> Any:
        if self.rate_gate is not None:
            self.rate_gate.wait()
        return super()._prepare_request(request)  # type: ignore[misc]

    def _should_retry(self, response: httpx2.Response) -> bool:
        try:
            body: object = response.json()
        except Exception:  # not JSON, or a streamed body not read yet
            body = None
        message, code, param = _error_fields(body)
        status = response.status_code
        if status == 429:
            if _is_quota(code, message):
                return False
            seconds = _retry_after_seconds(response.headers)
            if seconds is not None and self.rate_gate is not None:
                self.rate_gate.hold(seconds)
        if _refused_parameter(status, message, param, tuple(_PARAM_NAMES)):
            return False
        return bool(super()._should_retry(response))  # type: ignore[misc]


class _OpenAIClient(_GuardedClientMixin, openai.OpenAI):
    pass


class _HttpClient(DeadlineClientMixin, openai.DefaultHttpxClient):  # type: ignore[misc]
    """The openai client's HTTP client (its defaults), with a total deadline per request."""


class _AzureClient(_GuardedClientMixin, openai.AzureOpenAI):
    pass


class OpenAIBackend(Backend):
    """Chat Completions against any OpenAI-compatible server; one client, many threads."""

    name = "openai"
    traces = True  # gitsleep runs the tool loop of a task with `tools:` and records each call

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        azure: Mapping[str, Any] | None = None,
        http_client: httpx2.Client | None = None,
        secrets: Sequence[str] = (),
        api_key_env: str = "OPENAI_API_KEY",
        check_pass_env: Sequence[str] = (),
    ) -> None:
        self.timeout = timeout
        self.check_pass_env = tuple(check_pass_env)  # what `command` tools see (checks.pass_env)
        self.max_retries = max_retries
        self.api_key_env = api_key_env
        # whose calls these are, for a refusal every later call would repeat: one of
        # several agents on its own server says which ("agent small at host:port")
        self.who = ""
        # Short strings would blank out ordinary words; real keys are long.
        self._secrets = sorted(
            {s for s in (api_key, *secrets) if s and len(s) >= 6}, key=len, reverse=True
        )
        self.rate_gate = RateGate()
        self._lock = threading.Lock()
        self._timeouts_in_row = 0  # grows the shared pause after each timeout; 0 on a reply
        if http_client is None:
            http_client = _HttpClient(total=timeout, on_timeout=self._timed_out)
        self._format_level = 0  # index into FORMAT_LEVELS that works with this server
        self._dropped: set[str] = set()  # optional parameters the server refused
        self._token_param = "max_tokens"  # or max_completion_tokens (reasoning models)
        self.azure = dict(azure) if azure else None
        client: openai.OpenAI
        if self.azure is not None:
            endpoint = self.azure.get("endpoint") or base_url
            if not endpoint:
                raise BackendError(
                    "Azure OpenAI needs an endpoint: set AZURE_OPENAI_ENDPOINT or base_url"
                )
            client = _AzureClient(
                api_key=api_key,
                azure_endpoint=str(endpoint),
                azure_deployment=self.azure.get("deployment") or None,
                api_version=str(self.azure.get("api_version") or DEFAULT_AZURE_API_VERSION),
                timeout=timeout,
                max_retries=max_retries,
                http_client=http_client,
            )
        else:
            client = _OpenAIClient(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                http_client=http_client,
            )
        client.rate_gate = self.rate_gate
        self._client = client

    # -- public -------------------------------------------------------------------

    @property
    def format_level(self) -> str:
        """The structured-output request this server accepted (or will be tried first)."""
        with self._lock:
            return FORMAT_LEVELS[self._format_level]

    @property
    def dropped_parameters(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._dropped)

    def cache_salt(self, call: ModelCall) -> str:
        return tool_loop.environment_key(call, self.check_pass_env)

    def complete(self, call: ModelCall) -> Answer:
        tools = tool_loop.tools_of(call)
        if tools:  # an agent that may call tools: gitsleep runs the loop, records each call
            return tool_loop.run_loop(self._exchange, call, tools, redact=self._redact,
                                      pass_env=self.check_pass_env)
        messages: list[dict[str, Any]] = [{"role": role, "content": content}
                                          for role, content in call.messages]
        pick = call.context.get("pick") if call.context else None
        if isinstance(pick, Mapping):
            return self._pick(call, messages, [str(row[0]) for row in pick.get("catalog", ())])
        answer, _ = self._exchange(call, messages, [])
        return answer

    def _pick(self, call: ModelCall, messages: list[dict[str, Any]],
              names: list[str]) -> Answer:
        """Which skill the agent loads, asked as a harness asks it: the `use_skill` tool,
        its argument one of the catalog's names. A call (native, or written as text by a
        local model) becomes the reply `{"skill": name}`; a reply without one is read as
        it is (a structured `{"skill": ...}`, a bare name, or no skill). No forced JSON
        format: it would leave the model no room to call the tool."""
        tool = {"type": "function", "function": {
            "name": PICK_TOOL, "description": "Load one skill of the catalog by its name.",
            "parameters": {"type": "object", "required": ["skill"],
                           "properties": {"skill": {"type": "string", "enum": names}}}}}
        answer, requested = self._exchange(replace(call, json_schema=None), messages, [tool])
        made = next((r for r in requested if r.name == PICK_TOOL), None)
        if made is None:
            return answer
        arguments, _ = tool_kinds.parsed_arguments(made.arguments)
        skill = arguments.get("skill")
        return replace(answer, text=json.dumps({"skill": skill if skill in names else None}))

    def _exchange(self, call: ModelCall, messages: list[dict[str, Any]],
                  functions: list[dict[str, Any]]) -> tuple[Answer, list[tool_loop.Requested]]:
        """One request (with its fallbacks and retries): the reply, and the tool calls it
        asks for when `functions` offered tools."""
        schema = json.loads(call.json_schema) if call.json_schema else None
        prompt_tokens = completion_tokens = 0
        bad_replies = 0
        # Each pass either falls back once (bounded by the parameters and levels there
        # are) or counts a bad reply (bounded by EMPTY_REPLY_RETRIES).
        for _ in range(len(FORMAT_LEVELS) + len(_PARAM_NAMES) + EMPTY_REPLY_RETRIES + 1):
            level, request = self._request(call, messages, schema)
            if functions:
                request["tools"] = functions
            try:
                raw = self._client.chat.completions.with_raw_response.create(**request)
                reply = _parse_reply(raw.http_response.content)
            except openai.APIStatusError as err:
                if self._fall_back(err, level, request, call.model):
                    continue
                return self._failed(err, prompt_tokens, completion_tokens), []
            except openai.APITimeoutError:
                return Answer(
                    text=None,
                    error=f"timeout: no reply within {self.timeout:g}s "
                    f"(tried {self.max_retries + 1} times)",
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                ), []
            except openai.APIConnectionError as err:
                cause = err.__cause__ or err
                return Answer(
                    text=None,
                    error=self._one_line(f"connection failed: {type(cause).__name__}: {cause}"),
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                ), []
            except (openai.APIResponseValidationError, MalformedReply) as err:
                # A 200 whose body is not a chat completion (a proxy's HTML page, a
                # truncated body, bytes that are not UTF-8, token counts that are not
                # counts): the server is up, so try again like an empty reply.
                bad_replies += 1
                last_problem = self._one_line(f"malformed reply: {err}")
                if bad_replies > EMPTY_REPLY_RETRIES:
                    break
                continue

            with self._lock:
                self._timeouts_in_row = 0  # the server answers again
            text, refusal, finish_reason = reply.text, reply.refusal, reply.finish_reason
            prompt_tokens += reply.prompt_tokens
            completion_tokens += reply.completion_tokens
            if functions and reply.tool_calls:
                return Answer(text or "", None, prompt_tokens, completion_tokens,
                              finish_reason=finish_reason), list(reply.tool_calls)
            written = tool_loop.calls_in_text(text or "", _names(functions)) if functions else []
            if written:
                return Answer("", None, prompt_tokens, completion_tokens,
                              finish_reason=finish_reason), written
            if text is not None and text.strip():
                return Answer(text, None, prompt_tokens, completion_tokens,
                              finish_reason=finish_reason), []
            if refusal:
                # A refusal is the model's answer: judges score it (no_refusal), it is
                # not a transport failure.
                return Answer(refusal, None, prompt_tokens, completion_tokens,
                              finish_reason=finish_reason), []
            if finish_reason == "length":
                # The cap ran out before any text (a reasoning model thinking): asking
                # again with the same cap gives the same nothing.
                return Answer(
                    text=None,
                    error=f"the reply reached the token cap (max_tokens={call.max_tokens}) "
                    f"before any text from model {call.model!r}; raise max_answer_tokens "
                    "or max_reflect_tokens in .gitsleep.yml",
                    prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens,
                    finish_reason=finish_reason,
                ), []
            bad_replies += 1
            last_problem = (
                f"empty reply (finish_reason={finish_reason}) from model {call.model!r}"
                if text is not None or finish_reason is not None
                else f"malformed reply from model {call.model!r}: no message content"
            )
            if bad_replies > EMPTY_REPLY_RETRIES:
                break
        else:
            last_problem = "the server kept refusing request parameters"
        return Answer(
            text=None,
            error=f"{last_problem} after {bad_replies} attempts",
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        ), []

    def close(self) -> None:
        self._client.close()

    def _timed_out(self) -> None:
        """Every worker pauses after a timeout, longer after each one in a row.

        The server may still be working on the request we gave up on (a local server with
        one slot goes on generating); retrying at once, from every worker, queues more
        work behind it and makes every later call time out too.
        """
        with self._lock:
            self._timeouts_in_row += 1
            pause = min(self.timeout * 2 ** min(self._timeouts_in_row - 1, 3), TIMEOUT_PAUSE_MAX)
        self.rate_gate.hold(pause)

    # -- building requests -------------------------------------------------------------

    def _request(
        self, call: ModelCall, messages: list[dict[str, str]], schema: Any
    ) -> tuple[int, dict[str, Any]]:
        """The keyword arguments for one attempt, and the format level they use."""
        with self._lock:
            level = self._format_level
            dropped = set(self._dropped)
            token_param = self._token_param
        request: dict[str, Any] = {"model": call.model, "messages": messages}
        if "temperature" not in dropped:
            request["temperature"] = call.temperature
        if call.seed is not None and "seed" not in dropped:
            request["seed"] = call.seed
        if call.max_tokens is not None and token_param not in dropped:
            request[token_param] = call.max_tokens
        if schema is not None:
            if FORMAT_LEVELS[level] == "json_schema":
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(schema, call.purpose),
                        "schema": schema,
                        "strict": False,
                    },
                }
            elif FORMAT_LEVELS[level] == "json_object":
                # llama.cpp's server enforces the optional "schema" key; others ignore it.
                request["response_format"] = {"type": "json_object", "schema": schema}
        return level, request

    def _fall_back(
        self, err: openai.APIStatusError, level: int, request: Mapping[str, Any], model: str
    ) -> bool:
        """Adapt to a refused parameter and return True to try again; raise if fatal.

        Returns False for a failure that belongs to this call only (the caller turns it
        into an Answer with an error).
        """
        message, code, param = _error_fields(err.body)
        status = err.status_code
        sent = [name for name in _PARAM_NAMES if name in request]
        refused = _refused_parameter(status, message, param, sent)
        if refused is None and (code or "").lower() in _REFUSAL_CODES:
            refused = param or "a request parameter"  # one we cannot drop: fatal below
        if refused is not None:
            with self._lock:
                if refused == "response_format":
                    if self._format_level == level and level + 1 < len(FORMAT_LEVELS):
                        self._format_level = level + 1
                    if self._format_level > level:
                        return True
                elif refused in ("seed", "temperature"):
                    self._dropped.add(refused)
                    return True
                elif refused == "max_tokens":
                    self._token_param = "max_completion_tokens"
                    return True
                elif refused == "max_completion_tokens":
                    # Neither name is taken: no cap, and the total deadline still holds.
                    self._dropped.add(refused)
                    return True
            raise BackendError(
                self._one_line(
                    f"the server refuses the parameter {refused!r} for model {model!r} "
                    f"(HTTP {status}: {message}) and no fallback fixes it; "
                    "use a model or server that accepts it"
                )
            ) from None
        fatal = self._fatal_reason(status, code, message, model)
        if fatal is not None:
            raise BackendError(self._one_line(fatal)) from None
        return False

    def _fatal_reason(self, status: int, code: str | None, message: str, model: str) -> str | None:
        """A one-line cause and fix for failures that every later call would repeat."""
        code_low = (code or "").lower()
        if status == 401:
            return (
                (f"{self.who}: " if self.who else "")
                + f"authentication failed (HTTP 401: {message}); "
                f"check the API key in the environment variable {self.api_key_env}"
            )
        if status == 403:
            return (
                f"access denied (HTTP 403: {message}); check that this key may use model {model!r}"
            )
        if status == 404 or code_low in _FATAL_CODES:
            where = "deployment" if self.azure is not None else "model"
            name = (self.azure or {}).get("deployment") or model
            return (
                f"unknown {where} {name!r} (HTTP {status}: {message}); check `model:` "
                "in .gitsleep.yml (or --model / GITSLEEP_MODEL) and `base_url:`"
            )
        if status == 429 and _is_quota(code, message):
            return (
                f"quota exhausted (HTTP 429 insufficient_quota: {message}); "
                "add credit to the account or use another key"
            )
        return None

    def _failed(
        self, err: openai.APIStatusError, prompt_tokens: int, completion_tokens: int
    ) -> Answer:
        message, code, _ = _error_fields(err.body)
        status = err.status_code
        if status == 429:
            seconds = _retry_after_seconds(err.response.headers)
            if seconds is not None:
                self.rate_gate.hold(seconds)
        retried = (
            f" after {self.max_retries} retries"
            if status in (408, 409, 429) or status >= 500
            else ""
        )
        label = f"HTTP {status}" + (f" {code}" if code else "")
        return Answer(
            text=None,
            error=self._one_line(f"{label}{retried}: {message or 'no details'}"),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    def _one_line(self, text: str) -> str:
        """Collapse, shorten and redact: safe to print, log and commit."""
        text = self._redact(" ".join(text.split()))
        if len(text) > MESSAGE_MAX_CHARS:
            text = text[: MESSAGE_MAX_CHARS - 3] + "..."
        return text

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return _SK_KEY.sub("sk-***", text)


class MalformedReply(Exception):
    """A 200 reply that is not a usable chat completion; the message says what is wrong."""


@dataclass(frozen=True)
class _Reply:
    text: str | None
    refusal: str | None
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[tool_loop.Requested, ...] = ()


def _parse_reply(body: bytes) -> _Reply:
    """The parts of a chat completion gitsleep uses, read from the raw body by hand.

    Servers get this wrong in many ways, and none of them may crash a run: bytes that
    are not UTF-8, numbers too long for Python's int, `content` as a list of parts (the
    text parts are joined), token counts that are strings, NaN or negative (refused:
    they feed the token budget). Anything unusable raises MalformedReply.
    """
    try:
        data = loads_json(body.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise MalformedReply(f"the body is not UTF-8 (byte {err.start})") from None
    except (ValueError, RecursionError) as err:
        raise MalformedReply(f"the body is not JSON ({type(err).__name__}: {err})") from None
    choices = data.get("choices") if isinstance(data, Mapping) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, Mapping):
        raise MalformedReply("the body has no choices[0]")
    message = choice.get("message")
    message = message if isinstance(message, Mapping) else {}
    finish = choice.get("finish_reason")
    usage = data.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return _Reply(
        text=_content_text(message.get("content")),
        refusal=message.get("refusal") if isinstance(message.get("refusal"), str) else None,
        finish_reason=finish if isinstance(finish, str) else None,
        prompt_tokens=_token_count(usage, "prompt_tokens"),
        completion_tokens=_token_count(usage, "completion_tokens"),
        tool_calls=_tool_calls(message.get("tool_calls")),
    )


def _tool_calls(raw: object) -> tuple[tool_loop.Requested, ...]:
    """The tool calls a message asks for; one without a function name is malformed."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise MalformedReply("message tool_calls is not a list")
    found = []
    for number, item in enumerate(raw):
        function = item.get("function") if isinstance(item, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str) or not name:
            raise MalformedReply(f"tool call {number} has no function name")
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        call_id = item.get("id") if isinstance(item, Mapping) else None
        found.append(tool_loop.Requested(
            call_id if isinstance(call_id, str) and call_id else f"call_{number}", name,
            arguments if isinstance(arguments, str) else json.dumps(arguments or {})))
    return tuple(found)


def _names(functions: Sequence[Mapping[str, Any]]) -> list[str]:
    """The declared tools' names, from the `tools` a request offers."""
    return [str(f.get("function", {}).get("name")) for f in functions]


def _content_text(content: object) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [part.get("text") for part in content if isinstance(part, Mapping)]
        return "".join(t for t in texts if isinstance(t, str))
    raise MalformedReply(f"message content is a {type(content).__name__}, not text")


def _token_count(usage: Mapping[str, Any], name: str) -> int:
    """A usage count: absent is 0; anything but a whole number >= 0 is malformed."""
    value = usage.get(name)
    if value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**53:
        raise MalformedReply(f"usage.{name} is {_shown(value)}, not a token count")
    return value


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _schema_name(schema: Any, purpose: str) -> str:
    """OpenAI wants ^[a-zA-Z0-9_-]{1,64}$; use the schema's title when it has one."""
    title = schema.get("title") if isinstance(schema, Mapping) else None
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", str(title or f"gitsleep_{purpose}")).strip("_")
    return (name or "gitsleep")[:64]


def create_openai_backend(
    *,
    api_key_env: str,
    env: Mapping[str, str],
    base_url: str | None,
    timeout: float,
    max_retries: int,
    azure: Mapping[str, Any] | None,
    check_pass_env: Sequence[str] = (),
) -> OpenAIBackend:
    """The backend the configuration asks for, or a one-line BackendError saying why not.

    Azure OpenAI is used when `azure` settings are given or AZURE_OPENAI_ENDPOINT is
    set; it then also reads AZURE_OPENAI_API_KEY (when the `api_key_env` variable is
    unset) and OPENAI_API_VERSION or AZURE_OPENAI_API_VERSION. There is no fallback to
    the offline backend: a missing key is an error.
    """
    azure_settings: dict[str, Any] | None = None
    if azure or env.get("AZURE_OPENAI_ENDPOINT"):
        azure_settings = {
            "endpoint": (azure or {}).get("endpoint")
            or env.get("AZURE_OPENAI_ENDPOINT")
            or base_url,
            "api_version": (azure or {}).get("api_version")
            or env.get("OPENAI_API_VERSION")
            or env.get("AZURE_OPENAI_API_VERSION")
            or DEFAULT_AZURE_API_VERSION,
            "deployment": (azure or {}).get("deployment"),
        }
    api_key = env.get(api_key_env, "")
    if not api_key and azure_settings is not None:
        api_key = env.get("AZURE_OPENAI_API_KEY", "")
    if not api_key:
        hint = (
            " (or AZURE_OPENAI_API_KEY)"
            if azure_settings is not None
            else "; for Azure OpenAI also set AZURE_OPENAI_ENDPOINT"
            if env.get("AZURE_OPENAI_API_KEY")
            else ""
        )
        raise BackendError(
            f"no API key for the openai backend: set {api_key_env}{hint} "
            "or change api_key_env in .gitsleep.yml"
        )
    return OpenAIBackend(
        api_key=api_key,
        base_url=base_url if azure_settings is None else None,
        timeout=timeout,
        max_retries=max_retries,
        azure=azure_settings,
        api_key_env=api_key_env,
        check_pass_env=check_pass_env,
    )
