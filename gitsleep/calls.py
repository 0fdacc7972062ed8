"""The one door model calls go through: cache, budget, counters and workers.

Everything that costs money is counted here, once, under a lock, so the numbers in the
diagnostics are right however many workers run.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from gitsleep.backends.base import Backend, ModelCall
from gitsleep.cache import ResponseCache
from gitsleep.errors import BudgetExhausted
from gitsleep.models import Answer, Cost

Tick = Callable[[], None]  # one unit of a pass is done
StepHook = Callable[[str, int], Tick]  # (label, total) -> tick: the edge's progress display


def no_tick() -> None:
    """A tick that shows nothing."""


def _valid_unicode(text: str) -> str:
    """Lone surrogates (half a UTF-16 pair in a reply's JSON) become U+FFFD: such text
    could not be hashed, cached or written as UTF-8."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _rank(ordered: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of sorted values (0.0 for none)."""
    if not ordered:
        return 0.0
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class CallRunner:
    """Runs ModelCalls against a backend with caching, a budget and a worker pool."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        max_calls: int = 500,
        max_tokens: int = 2_000_000,
        workers: int = 4,
        on_call: Callable[[ModelCall, Answer], None] | None = None,
        on_start: Callable[[ModelCall], None] | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else ResponseCache()
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.workers = max(1, workers)
        self.cost = Cost()
        self.errors: list[str] = []
        self.on_call = on_call
        self.on_start = on_start  # a real (not cached) call is about to go out
        self._lock = threading.Lock()
        self._stopped: BaseException | None = None  # a fatal error: no further call starts
        self._seconds: dict[str, list[float]] = {}  # model -> each real call's latency

    def _reserve(self) -> None:
        with self._lock:
            if self._stopped is not None:
                raise self._stopped
            spent = self.cost.prompt_tokens + self.cost.completion_tokens
            if self.cost.calls >= self.max_calls:
                self._stopped = BudgetExhausted(
                    f"budget.max_calls ({self.max_calls}) reached after {self.cost.calls} calls"
                )
                raise self._stopped
            if spent >= self.max_tokens:
                self._stopped = BudgetExhausted(
                    f"budget.max_tokens ({self.max_tokens}) reached after {spent} tokens"
                )
                raise self._stopped
            self.cost.calls += 1

    def call(self, request: ModelCall) -> Answer:
        key = request.cache_key()
        salt = self.backend.cache_salt(request)
        if salt:
            key = hashlib.sha256(f"{key}:{salt}".encode()).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cost.cache_hits += 1
            return Answer(
                text=hit.text,
                prompt_tokens=hit.prompt_tokens,
                completion_tokens=hit.completion_tokens,
                cached=True,
                finish_reason=hit.finish_reason,
            )
        if self._stopped is not None:
            raise self._stopped
        self._reserve()
        if self.on_start is not None:
            self.on_start(request)
        started = time.perf_counter()
        try:
            answer = self.backend.complete(request)
        except BaseException as exc:
            self._stopped = exc
            raise
        elapsed = time.perf_counter() - started
        if answer.text is not None:
            answer.text = _valid_unicode(answer.text)
        with self._lock:
            self.cost.prompt_tokens += answer.prompt_tokens
            self.cost.completion_tokens += answer.completion_tokens
            used = self.cost.by_model.setdefault(
                request.model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
            )
            used["calls"] += 1
            used["prompt_tokens"] += answer.prompt_tokens
            used["completion_tokens"] += answer.completion_tokens
            self._seconds.setdefault(request.model, []).append(elapsed)
            if answer.seconds is not None:
                self.cost.wall_seconds += answer.seconds
            if not answer.tokens_known:
                self.cost.unmetered_calls += 1
            if not answer.ok:
                self.cost.errors += 1
                self.errors.append(f"{request.purpose}: {answer.error}")
        if answer.ok:
            self.cache.put(key, answer)
        if self.on_call is not None:
            self.on_call(request, answer)
        return answer

    def interrupt(self, reason: BaseException) -> None:
        """Stop now (Ctrl-C, a signal): no further call starts, and the backend kills the
        calls under way instead of letting them finish and retry."""
        with self._lock:
            if self._stopped is None:
                self._stopped = reason
        self.backend.interrupt()

    def latency(self) -> dict[str, dict[str, float]]:
        """Per model: seconds spent in its real calls, and the p50 and p95 of one call."""
        with self._lock:
            measured = {model: sorted(times) for model, times in self._seconds.items()}
        return {model: {"seconds": round(sum(times), 3), "p50_s": round(_rank(times, 0.50), 3),
                        "p95_s": round(_rank(times, 0.95), 3)}
                for model, times in sorted(measured.items())}

    def map(self, requests: Sequence[ModelCall], on_done: Tick = no_tick) -> list[Answer]:
        """All requests, answers in request order; the first budget/fatal error propagates.

        `on_done` is called as each answer arrives (from the worker threads), for progress.
        """

        def one(request: ModelCall) -> Answer:
            answer = self.call(request)
            on_done()
            return answer

        if self.workers == 1 or len(requests) <= 1:
            try:
                return [one(r) for r in requests]
            except Exception:
                raise
            except BaseException as exc:  # Ctrl-C, a signal: the agent dies with the call
                self.interrupt(exc)
                raise
        with ThreadPoolExecutor(max_workers=min(self.workers, len(requests))) as pool:
            futures = [pool.submit(one, r) for r in requests]
            try:
                return [f.result() for f in futures]
            except BaseException as exc:
                for f in futures:
                    f.cancel()
                if not isinstance(exc, Exception):
                    # Ctrl-C or a signal reached the main thread: the pool's exit would
                    # wait for every call under way to finish (and retry); kill them now
                    self.interrupt(exc)
                raise
