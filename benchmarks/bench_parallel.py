"""Section 3: parallel efficiency of scoring against a slow OpenAI-compatible server.

The real `OpenAIBackend` (the official `openai` client) scores one split through
`replay.score_split` against the loopback `FakeOpenAIServer`, which sleeps `latency`
seconds before every reply. With `w` workers a perfect tool needs `calls x latency / w`
seconds, so

    efficiency = (calls x latency / workers) / wall time

where `calls` counts the answers the pass needed (one per task). Retried 429 requests
are extra requests, not extra calls: the work is the same, the wall time is what they
cost. Chunking also caps efficiency: `ceil(calls / workers)` waves of `latency` each is
the fastest any pool can go, reported as `bound`.

By default the server runs in its own process, as a real server would: in the same
process it would compete with the client for the interpreter lock and the benchmark
would measure the fake, not gitsleep.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import generate
from gitsleep.backends.openai_compat import OpenAIBackend
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import EpochSettings
from gitsleep.core.ports import ModelCall
from gitsleep.core.replay import score_split
from tests.support.fake_openai import FakeOpenAIServer, Fault

API_KEY = "sk-bench-0000000000000000"
MODEL = "bench-model"


class RateLimitedServer(FakeOpenAIServer):
    """A FakeOpenAIServer that answers every `every`-th chat request with a 429.

    The faults are spread over the run instead of taken from the front of the queue,
    so the 429s hit a pool that is busy, as a real rate limit does.
    """

    def __init__(self, *, every: int = 0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.every = every
        self._counted = 0

    def _record(self, request: Any, take_fault: bool) -> Fault | None:
        fault = super()._record(request, take_fault)
        if fault is not None or not take_fault or not self.every:
            return fault
        with self._lock:
            self._counted += 1
            due = self._counted % self.every == 0
        return Fault("429") if due else None

    def stats(self) -> dict[str, int]:
        requests = self.requests
        return {
            "requests": len(requests),
            "rate_limited": sum(1 for r in requests if r.fault == "429"),
            "ok": sum(1 for r in requests if r.status == 200),
        }


def serve(latency: float, every: int, retry_after: float) -> None:
    """Child process: print the base URL, serve until stdin closes, print the stats."""
    server = RateLimitedServer(latency=latency, every=every, retry_after=retry_after)
    server.start()
    print(server.base_url, flush=True)
    sys.stdin.read()  # returns when the parent closes our stdin
    print(json.dumps(server.stats()), flush=True)
    server.stop()


class ServerProcess:
    """A RateLimitedServer in a child process (`python -m benchmarks.bench_parallel`)."""

    def __init__(self, *, latency: float, every: int = 0, retry_after: float = 0.05) -> None:
        self._args = [sys.executable, "-m", "benchmarks.bench_parallel",
                      str(latency), str(every), str(retry_after)]
        self._process: subprocess.Popen[str] | None = None
        self.base_url = ""
        self.stats: dict[str, int] = {}

    def __enter__(self) -> ServerProcess:
        root = Path(__file__).resolve().parent.parent
        self._process = subprocess.Popen(self._args, cwd=root, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self._process.kill()
            raise RuntimeError(f"the benchmark server did not start: {self.base_url!r}")
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._process is not None
        try:
            out, _ = self._process.communicate(input="", timeout=60)
            self.stats = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        finally:
            if self._process.poll() is None:
                self._process.kill()


class InProcessServer:
    """The same server in this process: for quick tests, where timing does not matter."""

    def __init__(self, *, latency: float, every: int = 0, retry_after: float = 0.05) -> None:
        self._server = RateLimitedServer(latency=latency, every=every, retry_after=retry_after)
        self.base_url = ""
        self.stats: dict[str, int] = {}

    def __enter__(self) -> InProcessServer:
        self._server.start()
        self.base_url = self._server.base_url
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stats = self._server.stats()
        self._server.stop()


@dataclass
class ParallelRow:
    workers: int
    tasks: int
    rate_limited_share: float
    seconds: float
    calls: int  # answers the pass needed (one per task)
    scored: int  # tasks that got a score
    call_errors: int
    requests: int  # HTTP requests the server saw, retries included
    rate_limited: int  # of those, answered 429
    latency: float

    @property
    def efficiency(self) -> float:
        return (self.calls * self.latency / self.workers) / self.seconds if self.seconds else 0.0

    @property
    def bound(self) -> float:
        """The best efficiency whole waves of `workers` calls allow."""
        waves = math.ceil(self.calls / self.workers)
        return (self.calls / self.workers) / waves

    @property
    def lost(self) -> int:
        return self.tasks - self.scored

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "efficiency": round(self.efficiency, 4),
                "bound": round(self.bound, 4), "lost": self.lost}


def _warm_up(base_url: str) -> None:
    """One call, so one-time imports and client set-up are not charged to any row."""
    backend = OpenAIBackend(api_key=API_KEY, base_url=base_url)
    try:
        backend.complete(ModelCall("answer", MODEL, (("user", "warm up"),)))
    finally:
        backend.close()


def measure(
    workers: int,
    tasks: int,
    *,
    latency: float = 0.1,
    rate_limit_every: int = 0,
    retry_after: float = 0.05,
    in_process: bool = False,
) -> ParallelRow:
    """Score `tasks` val tasks once with `workers` workers; count what the server saw."""
    task_list = generate.make_tasks(0, tasks, 0)
    settings = EpochSettings(model=MODEL, optimizer_model=MODEL, judge_model=MODEL,
                             workers=workers, max_calls=10**9)
    documents = {"skill": generate.SKILL_DOCUMENT, "memory": None}
    server_cls = InProcessServer if in_process else ServerProcess
    with server_cls(latency=latency, every=rate_limit_every,
                    retry_after=retry_after) as server:
        _warm_up(server.base_url)
        backend = OpenAIBackend(api_key=API_KEY, base_url=server.base_url)
        runner = CallRunner(backend, workers=workers, max_calls=10**9)
        started = time.perf_counter()
        result = score_split(runner, task_list, documents, settings, label="bench",
                             split="val")
        seconds = time.perf_counter() - started
        backend.close()
    scored = sum(1 for t in result.tasks if t.value is not None)
    warm_up_requests = 1
    return ParallelRow(
        workers=workers,
        tasks=tasks,
        rate_limited_share=(1 / rate_limit_every) if rate_limit_every else 0.0,
        seconds=seconds,
        calls=runner.cost.calls,
        scored=scored,
        call_errors=result.errors,
        requests=server.stats.get("requests", 0) - warm_up_requests,
        rate_limited=server.stats.get("rate_limited", 0),
        latency=latency,
    )


def parallel_section(
    *,
    latency: float = 0.1,
    plan: tuple[tuple[int, int, int], ...] = (
        (1, 50, 0), (4, 200, 0), (16, 200, 0), (32, 200, 0), (16, 200, 10), (32, 200, 10),
    ),
    in_process: bool = False,
) -> list[ParallelRow]:
    """Each (workers, tasks, every-n-th-request-is-429) of `plan`, one server each."""
    return [
        measure(w, n, latency=latency, rate_limit_every=every, in_process=in_process)
        for w, n, every in plan
    ]


if __name__ == "__main__":
    serve(float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
