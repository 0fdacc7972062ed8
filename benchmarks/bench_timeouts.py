"""Section 6: retries after timeouts against a server with one slot.

A local server (llama.cpp, Ollama) often answers one request at a time, and it goes on
working on a request the client gave up on. If every timed-out call is retried at once,
the retries queue behind that abandoned work, time out in turn, and the queue only grows.
`OpenAIBackend` pauses every worker after a timeout (longer while timeouts continue).

The same calls run twice against the loopback `FakeOpenAIServer(serial=True)`: with the
pause, and with a backend whose pause is switched off. The server counts the requests it
holds at once (queued or running, abandoned ones included): `peak held` at most the
number of workers means no retry was piled on top of abandoned work.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.core.ports import ModelCall
from tests.support.fake_openai import FakeOpenAIServer

API_KEY = "sk-bench-0000000000000000"


class _NoPause(OpenAIBackend):
    """The backend as it was: a timeout is retried by the client alone, at once."""

    def _timed_out(self) -> None:
        return None


@dataclass
class TimeoutRow:
    pause: bool
    workers: int
    calls: int
    latency: float  # seconds the server spends on each request, one at a time
    timeout: float
    requests: int
    peak_held: int
    answered: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(pause: bool, *, workers: int, calls: int, latency: float, timeout: float,
            retries: int = 3) -> TimeoutRow:
    backend_class = OpenAIBackend if pause else _NoPause
    with FakeOpenAIServer(serial=True, latency=latency) as server:
        backend = backend_class(api_key=API_KEY, base_url=server.base_url, timeout=timeout,
                                max_retries=retries)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:
            answers = list(pool.map(
                lambda i: backend.complete(ModelCall("answer", "m", (("user", f"task {i}"),))),
                range(calls)))
        seconds = time.perf_counter() - started
        backend.close()
        requests, peak = server.request_count, server.max_in_flight
    return TimeoutRow(pause, workers, calls, latency, timeout, requests, peak,
                      sum(1 for a in answers if a.ok), round(seconds, 2))


def timeouts_section(*, workers: int = 6, calls: int = 12, latency: float = 0.3,
                     timeout: float = 0.7) -> list[TimeoutRow]:
    """Without the pause, then with it: same server, same calls."""
    return [measure(pause, workers=workers, calls=calls, latency=latency, timeout=timeout)
            for pause in (False, True)]
