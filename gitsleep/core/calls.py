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
from typing import TypeVar

from gitsleep.base.errors import BudgetExhausted
from gitsleep.core.cache import ResponseCache, valid_unicode
from gitsleep.core.models import Answer, Cost, EpochSettings, usd
from gitsleep.core.ports import Backend, ModelCall

T = TypeVar("T")
Tick = Callable[[], None]  # one unit of a pass is done
StepHook = Callable[[str, int], Tick]  # (label, total) -> tick: the edge's progress display


def no_tick() -> None:
    """A tick that shows nothing."""


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
    """Wall seconds, US dollars and tokens: what a call cost, or is estimated to."""

    seconds: float = 0.0
    usd: float = 0.0
    tokens: int = 0

    def add(self, other: _Spend, sign: int = 1) -> None:
        self.seconds += sign * other.seconds
        self.usd += sign * other.usd
        self.tokens += sign * other.tokens

    def widen(self, other: _Spend) -> None:
        """Keep the larger of each: the costliest call so far is the next one's estimate."""
        self.seconds = max(self.seconds, other.seconds)
        self.usd = max(self.usd, other.usd)
        self.tokens = max(self.tokens, other.tokens)


class CallRunner:
    """Runs ModelCalls against a backend with caching, a budget and a worker pool."""

    def __init__(
        self,
        backend: Backend,
        *,
        cache: ResponseCache | None = None,
        max_calls: int = 500,
        max_tokens: int = EpochSettings.max_tokens,
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
        # a call of a model with no estimate yet waits here until the first such call ends
        self._estimated = threading.Condition(self._lock)
        self._probing: set[str] = set()  # models whose first call (no estimate) is running
        # only a cap checked against estimates needs them; the default max_tokens is a
        # backstop, and holding back calls for it would slow every night a little
        self._hold_unknown = (max_agent_minutes is not None or max_cost is not None
                              or max_tokens < EpochSettings.max_tokens)
        self._waiting = 0  # calls held back until their model has an estimate
        self._running = 0  # real calls under way
        self._stopped: BaseException | None = None  # a fatal error: no further call starts
        self._stop: tuple[str, _Spend] | None = None  # the cap that stopped a call, its estimate
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

    def _reserve(self, request: ModelCall) -> tuple[_Spend, bool]:
        """Count the call, or stop before it when any budget would be passed: every budget
        is checked here, under one lock, before the call goes out. Returns the call's
        estimate (held as pending until it finishes) and whether it is its model's first
        (the one call without an estimate: the others of its model wait for it, or the
        workers would all start at an estimate of nothing and pass a cap together)."""
        with self._estimated:
            while True:
                if self._stopped is not None:
                    raise self._stopped
                known = self._estimate(request)
                if (known is not None or not self._hold_unknown
                        or request.model not in self._probing):
                    break
                self._waiting += 1
                try:
                    self._estimated.wait()
                finally:
                    self._waiting -= 1
            estimate = known if known is not None else _Spend()
            cap = self._over_budget(estimate)
            if cap is not None:
                self._stopped = BudgetExhausted(self._stop_reason(cap, estimate))
                self._stop = (cap, estimate)
                self._estimated.notify_all()  # the calls waiting for an estimate stop too
                raise self._stopped
            self.cost.calls += 1
            self._pending.add(estimate)
            self._running += 1
            first = known is None and self._hold_unknown
            if first:
                self._probing.add(request.model)
            return estimate, first

    def _finished(self, request: ModelCall, estimate: _Spend, first: bool) -> None:
        """A real call ended (answered, failed or raised): it no longer holds its estimate,
        and the calls waiting for its model's first estimate may go on. Under the lock."""
        self._pending.add(estimate, -1)
        self._running -= 1
        if first:
            self._probing.discard(request.model)
        self._estimated.notify_all()

    def _estimate(self, request: ModelCall) -> _Spend | None:
        """The costliest finished call of the same model and purpose (of the model when
        none), or None before the first one: a call is never known in advance."""
        known = self._costliest.get((request.model, request.purpose))
        if known is None:
            same = [v for (model, _), v in self._costliest.items() if model == request.model]
            if not same:
                return None
            known = _Spend()
            for spend in same:
                known.widen(spend)
        return known

    def _over_budget(self, estimate: _Spend) -> str | None:
        """The cap the next call may not pass (calls, tokens, minutes, cost), or None.
        Called under the lock.

        Tokens: the next call starts while the tokens spent plus those the calls under way
        are estimated at are under the cap, so workers pass it by one call, as one worker
        does. Minutes and money: it starts only if its own estimate fits too."""
        calls = self.cost.calls
        tokens = self.cost.prompt_tokens + self.cost.completion_tokens
        if calls >= self.max_calls:
            return "calls"
        if tokens + self._pending.tokens >= self.max_tokens:
            return "tokens"
        if self.max_agent_minutes is not None:
            cap = self.max_agent_minutes * 60.0
            spent = self._spent.seconds
            if spent >= cap or spent + self._pending.seconds + estimate.seconds > cap:
                return "minutes"
        if self.max_cost is not None:
            spent = self._spent.usd
            if spent >= self.max_cost or spent + self._pending.usd + estimate.usd > self.max_cost:
                return "cost"
        return None

    def _stop_reason(self, cap: str, estimate: _Spend) -> str:
        """What a budget stop says, from what the finished calls spent. Said again once the
        calls running at the stop have finished (see `map`), so it counts them too. Called
        under the lock."""
        done = self.cost.calls - self._running
        calls = f"{done} calls" + (f", {self._running} more still running"
                                   if self._running else "")
        if cap == "calls":
            return f"budget.max_calls ({self.max_calls}) reached after {self.cost.calls} calls"
        if cap == "tokens":
            tokens = self.cost.prompt_tokens + self.cost.completion_tokens
            if tokens >= self.max_tokens:
                return (f"budget.max_tokens ({self.max_tokens}) reached after {tokens} tokens "
                        f"in {calls}")
            return (f"budget.max_tokens ({self.max_tokens}) would be reached by the calls under "
                    f"way: {tokens} tokens spent in {calls}, each estimated at "
                    f"{estimate.tokens} tokens (the most such a call used so far)")
        if cap == "minutes":
            return (f"budget.max_agent_minutes ({self.max_agent_minutes:g}) would be passed "
                    f"by the next call: {_duration(self._spent.seconds)} spent in {calls}, "
                    f"the next estimated at {_duration(estimate.seconds)} (the longest such "
                    "call so far)")
        return (f"budget.max_cost (${self.max_cost:g}) would be passed by the next call: "
                f"${self._spent.usd:.4f} spent in {calls}, the next estimated at "
                f"${estimate.usd:.4f} (the costliest such call so far)")

    def _settle(self, stop: BudgetExhausted) -> None:
        """A budget stop that map() raises once every call it started has finished: say it
        again with what really was spent (the calls running at the stop included)."""
        with self._lock:
            if stop is self._stopped and self._stop is not None:
                stop.args = (self._stop_reason(*self._stop),)

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

    def tally(self) -> tuple[int, int, int]:
        """(real calls, cache hits, failed calls) so far: a pass that a budget stopped
        subtracts the tally at its start to judge its own error rate."""
        with self._lock:
            return self.cost.calls, self.cost.cache_hits, len(self.errors)

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
        estimate, first = self._reserve(request)
        started = time.perf_counter()
        try:
            if self.on_start is not None:
                self.on_start(request)
            started = time.perf_counter()
            answer = self.backend.complete(request)
        except BaseException as exc:
            self._stopped = exc
            with self._lock:
                self._spent.seconds += time.perf_counter() - started
                self._finished(request, estimate, first)  # wakes the calls waiting for it
            raise
        elapsed = time.perf_counter() - started
        if answer.text is not None:
            answer.text = valid_unicode(answer.text)
        with self._lock:
            actual = _Spend(answer.seconds if answer.seconds is not None else elapsed,
                            self._usd(request.model, answer),
                            answer.prompt_tokens + answer.completion_tokens)
            self._spent.add(actual)
            self._costliest.setdefault((request.model, request.purpose), _Spend()).widen(actual)
            self._finished(request, estimate, first)
            # a tool loop's answer took one request per turn: the budget counts each
            self.cost.calls += max(0, answer.turns - 1)
            self.cost.prompt_tokens += answer.prompt_tokens
            self.cost.completion_tokens += answer.completion_tokens
            used = self.cost.by_model.setdefault(
                request.model, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
            )
            used["calls"] += max(1, answer.turns)
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
            self._estimated.notify_all()  # the calls waiting for an estimate stop too
        self.backend.interrupt()

    def latency(self) -> dict[str, dict[str, float]]:
        """Per model: seconds spent in its real calls, and the p50 and p95 of one call."""
        with self._lock:
            measured = {model: sorted(times) for model, times in self._seconds.items()}
        return {model: {"seconds": round(sum(times), 3), "p50_s": round(_rank(times, 0.50), 3),
                        "p95_s": round(_rank(times, 0.95), 3)}
                for model, times in sorted(measured.items())}

    def judge_locally(self, jobs: Sequence[tuple[Callable[[], T], bool]]) -> list[T]:
        """Each job's result, in order: judging that runs here, not in a call. A job marked
        True starts programs (a text task's `command` checks, which may take minutes):
        those run `workers` at a time, and their wall seconds count against
        budget.max_agent_minutes as a call's do, so a night of slow checks stops at the
        cap. The others (a regex, a word count) run here at once. The first error
        propagates once every job under way has finished."""
        slow = [i for i, (_, programs) in enumerate(jobs) if programs]
        done = dict(zip(slow, self._timed([jobs[i][0] for i in slow]), strict=True))
        return [done[i] if i in done else job() for i, (job, _) in enumerate(jobs)]

    def _timed(self, jobs: Sequence[Callable[[], T]]) -> list[T]:
        """The jobs `workers` at a time, each one's wall seconds added to what was spent."""

        def timed(job: Callable[[], T]) -> T:
            started = time.perf_counter()
            try:
                return job()
            finally:
                with self._lock:
                    self._spent.seconds += time.perf_counter() - started

        if self.workers == 1 or len(jobs) <= 1:
            return [timed(job) for job in jobs]
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs))) as pool:
            futures = [pool.submit(timed, job) for job in jobs]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def map(self, requests: Sequence[ModelCall], on_done: Tick = no_tick) -> list[Answer]:
        """All requests, answers in request order; the first budget/fatal error propagates
        once the calls under way have finished (a budget stop then says what they spent).

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
        try:
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
        except BudgetExhausted as stop:  # the pool has waited for the calls under way
            self._settle(stop)
            raise
