"""The one door model calls go through: cache, budget, counters and workers.

Everything that costs money is counted here, once, under a lock, so the numbers in the
diagnostics are right however many workers run.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from gitsleep.backends.base import Backend, ModelCall
from gitsleep.core.cache import ResponseCache
from gitsleep.core.models import Answer, Cost, EpochSettings, usd
from gitsleep.errors import BudgetExhausted

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


def _duration(seconds: float) -> str:
    """Minutes with two decimals, or seconds below a minute (so a tiny cap reads right)."""
    return f"{seconds / 60:.2f} min" if seconds >= 60 else f"{seconds:.3g} s"


@dataclass
class _Spend:
    """Wall seconds and US dollars: what a call cost, or is estimated to."""

    seconds: float = 0.0
    usd: float = 0.0

    def add(self, other: _Spend, sign: int = 1) -> None:
        self.seconds += sign * other.seconds
        self.usd += sign * other.usd


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
        max_agent_minutes: float | None = None,
        max_cost: float | None = None,
        prices: Mapping[str, Mapping[str, float]] | None = None,
    ) -> None:
        self.backend = backend
        self.cache = cache if cache is not None else ResponseCache()
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.max_agent_minutes = max_agent_minutes
        self.max_cost = max_cost
        self.prices = dict(prices or {})
        self._spent = _Spend()  # seconds and dollars of finished real calls
        self._pending = _Spend()  # the estimates of the calls under way
        # (model, purpose) -> the costliest finished call: the next one's estimate
        self._costliest: dict[tuple[str, str], _Spend] = {}
        self.workers = max(1, workers)
        self.cost = Cost()
        self.errors: list[str] = []
        self.on_call = on_call
        self.on_start = on_start  # a real (not cached) call is about to go out
        self._lock = threading.Lock()
        self._stopped: BaseException | None = None  # a fatal error: no further call starts
        self._seconds: dict[str, list[float]] = {}  # model -> each real call's latency

    @classmethod
    def for_settings(cls, backend: Backend, settings: EpochSettings, *,
                     cache: ResponseCache | None = None, workers: int | None = None,
                     on_start: Callable[[ModelCall], None] | None = None) -> CallRunner:
        """A runner that keeps every budget of the settings (calls, tokens, agent minutes,
        money): each command that spends calls builds its runner here, so none forgets one."""
        return cls(backend, cache=cache, max_calls=settings.max_calls,
                   max_tokens=settings.max_tokens,
                   workers=settings.workers if workers is None else workers,
                   on_start=on_start, max_agent_minutes=settings.max_agent_minutes,
                   max_cost=settings.max_cost, prices=settings.prices)

    def _reserve(self, request: ModelCall) -> _Spend:
        """Count the call, or stop before it when any budget would be passed: every budget
        is checked here, under one lock, before the call goes out. Returns the call's
        estimate (held as pending until it finishes)."""
        with self._lock:
            if self._stopped is not None:
                raise self._stopped
            estimate = self._estimate(request)
            why = self._over_budget(estimate)
            if why is not None:
                self._stopped = BudgetExhausted(why)
                raise self._stopped
            self.cost.calls += 1
            self._pending.add(estimate)
            return estimate

    def _estimate(self, request: ModelCall) -> _Spend:
        """The costliest finished call of the same model and purpose (of the model when
        none), or nothing before the first one: a call is never known in advance."""
        known = self._costliest.get((request.model, request.purpose))
        if known is None:
            same = [v for (model, _), v in self._costliest.items() if model == request.model]
            known = _Spend(max((v.seconds for v in same), default=0.0),
                           max((v.usd for v in same), default=0.0))
        return known

    def _over_budget(self, estimate: _Spend) -> str | None:
        """Why the next call may not start, or None. Called under the lock."""
        calls = self.cost.calls
        tokens = self.cost.prompt_tokens + self.cost.completion_tokens
        if calls >= self.max_calls:
            return f"budget.max_calls ({self.max_calls}) reached after {calls} calls"
        if tokens >= self.max_tokens:
            return f"budget.max_tokens ({self.max_tokens}) reached after {tokens} tokens"
        if self.max_agent_minutes is not None:
            cap = self.max_agent_minutes * 60.0
            spent = self._spent.seconds
            if spent >= cap or spent + self._pending.seconds + estimate.seconds > cap:
                return (f"budget.max_agent_minutes ({self.max_agent_minutes:g}) would be passed "
                        f"by the next call: {_duration(spent)} spent in {calls} calls, the "
                        f"next estimated at {_duration(estimate.seconds)} (the longest such "
                        "call so far)")
        if self.max_cost is not None:
            spent = self._spent.usd
            if spent >= self.max_cost or spent + self._pending.usd + estimate.usd > self.max_cost:
                return (f"budget.max_cost (${self.max_cost:g}) would be passed by the next "
                        f"call: ${spent:.4f} spent in {calls} calls, the next estimated at "
                        f"${estimate.usd:.4f} (the costliest such call so far)")
        return None

    def _usd(self, model: str, answer: Answer) -> float:
        return usd(self.prices.get(model), answer.prompt_tokens, answer.completion_tokens)

    def agent_seconds(self) -> float:
        """Wall seconds spent in finished real calls (as the backend measured them)."""
        with self._lock:
            return self._spent.seconds

    def spent_usd(self) -> float:
        """US dollars of the finished real calls at `prices` (0.0 without prices)."""
        with self._lock:
            return self._spent.usd

    def call(self, request: ModelCall) -> Answer:
        key = request.cache_key()
        salt = self.backend.cache_salt(request)
        if salt:
            key = hashlib.sha256(f"{key}:{salt}".encode()).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            with self._lock:
                self.cost.cache_hits += 1
            return replace(hit, cached=True)  # with a workspace answer's outcomes and diff
        if self._stopped is not None:
            raise self._stopped
        estimate = self._reserve(request)
        started = time.perf_counter()
        try:
            if self.on_start is not None:
                self.on_start(request)
            started = time.perf_counter()
            answer = self.backend.complete(request)
        except BaseException as exc:
            self._stopped = exc
            with self._lock:
                self._pending.add(estimate, -1)
                self._spent.seconds += time.perf_counter() - started
            raise
        elapsed = time.perf_counter() - started
        if answer.text is not None:
            answer.text = _valid_unicode(answer.text)
        with self._lock:
            actual = _Spend(answer.seconds if answer.seconds is not None else elapsed,
                            self._usd(request.model, answer))
            self._pending.add(estimate, -1)
            self._spent.add(actual)
            worst = self._costliest.setdefault((request.model, request.purpose), _Spend())
            worst.seconds, worst.usd = max(worst.seconds, actual.seconds), max(worst.usd,
                                                                               actual.usd)
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
