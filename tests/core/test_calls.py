from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gitsleep.backends.select import create_backend
from gitsleep.base.errors import BudgetExhausted, UsageError
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Answer
from gitsleep.core.ports import Backend, ModelCall


class CountingBackend(Backend):
    """A scripted model: echoes the user message, fails when told to."""

    name = "counting"

    def __init__(self, fail_on: str = "") -> None:
        self.calls: list[ModelCall] = []
        self.fail_on = fail_on
        self._lock = threading.Lock()

    def complete(self, call: ModelCall) -> Answer:
        with self._lock:
            self.calls.append(call)
        user = call.messages[-1][1]
        if self.fail_on and self.fail_on in user:
            return Answer(text=None, error="HTTP 500 after retries")
        return Answer(text=f"echo {user}", prompt_tokens=3, completion_tokens=2)


def call(text: str, sample: int = 0, model: str = "m") -> ModelCall:
    return ModelCall("answer", model, (("user", text),), sample=sample)


def test_same_call_twice_reaches_the_backend_once() -> None:
    backend = CountingBackend()
    runner = CallRunner(backend)
    first, second = runner.call(call("a")), runner.call(call("a"))
    assert first.text == second.text == "echo a"
    assert second.cached and not first.cached
    assert len(backend.calls) == 1
    assert (runner.cost.calls, runner.cost.cache_hits) == (1, 1)
    assert (runner.cost.prompt_tokens, runner.cost.completion_tokens) == (3, 2)


def test_key_covers_model_sample_and_parameters_but_not_context() -> None:
    base = call("a")
    assert base.cache_key() != call("a", sample=1).cache_key()
    assert base.cache_key() != call("a", model="other").cache_key()
    warmer = ModelCall("answer", "m", (("user", "a"),), temperature=0.7)
    assert base.cache_key() != warmer.cache_key()
    with_context = ModelCall("answer", "m", (("user", "a"),), context={"x": 1})
    assert base.cache_key() == with_context.cache_key()


def test_errors_are_counted_and_never_cached() -> None:
    backend = CountingBackend(fail_on="bad")
    runner = CallRunner(backend)
    assert runner.call(call("bad")).error
    assert runner.call(call("bad")).error
    assert len(backend.calls) == 2
    assert runner.cost.errors == 2 and runner.errors == ["answer: HTTP 500 after retries"] * 2


def test_persistent_cache_survives_a_new_runner(tmp_path: Path) -> None:
    backend = CountingBackend()
    CallRunner(backend, cache=ResponseCache(tmp_path)).call(call("a"))
    again = CallRunner(backend, cache=ResponseCache(tmp_path))
    assert again.call(call("a")).text == "echo a"
    assert len(backend.calls) == 1 and again.cost.calls == 0


def test_corrupt_cache_entry_is_a_miss(tmp_path: Path) -> None:
    backend = CountingBackend()
    CallRunner(backend, cache=ResponseCache(tmp_path)).call(call("a"))
    for entry in tmp_path.rglob("*.json"):
        entry.write_text("{not json")
    assert CallRunner(backend, cache=ResponseCache(tmp_path)).call(call("a")).text == "echo a"
    assert len(backend.calls) == 2


def test_concurrent_writers_leave_only_whole_entries(tmp_path: Path) -> None:
    backend = CountingBackend()
    runners = [CallRunner(backend, cache=ResponseCache(tmp_path), workers=8) for _ in range(4)]
    threads = [
        threading.Thread(target=r.map, args=([call(str(i)) for i in range(50)],)) for r in runners
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    files = list(tmp_path.rglob("*.json"))
    assert len(files) == 50
    assert not list(tmp_path.rglob(".tmp-*"))


def test_map_keeps_request_order_with_workers() -> None:
    runner = CallRunner(CountingBackend(), workers=8)
    answers = runner.map([call(str(i)) for i in range(40)])
    assert [a.text for a in answers] == [f"echo {i}" for i in range(40)]


def test_budget_in_calls_is_enforced_before_the_call() -> None:
    backend = CountingBackend()
    runner = CallRunner(backend, max_calls=2)
    runner.call(call("a"))
    runner.call(call("b"))
    runner.call(call("a"))  # cache hits are free
    with pytest.raises(BudgetExhausted, match="max_calls"):
        runner.call(call("c"))
    assert len(backend.calls) == 2


def test_budget_in_tokens() -> None:
    runner = CallRunner(CountingBackend(), max_tokens=5)
    runner.call(call("a"))
    with pytest.raises(BudgetExhausted, match="max_tokens"):
        runner.call(call("b"))


def test_unknown_backend_name_is_an_error() -> None:
    with pytest.raises(UsageError, match="unknown backend 'mock'"):
        create_backend("mock", env={})
    assert create_backend("offline", env={}).name == "offline"


def test_each_models_latency_is_recorded_with_p50_and_p95() -> None:
    class Slow(CountingBackend):
        def complete(self, call: ModelCall) -> Answer:
            import time
            time.sleep(0.05 if call.model == "slow" else 0.0)
            return super().complete(call)

    runner = CallRunner(Slow(), workers=1)
    for i in range(4):
        runner.call(call(f"x{i}", model="slow"))
        runner.call(call(f"y{i}", model="fast"))
    runner.call(call("x0", model="slow"))  # a cache hit takes no model time
    latency = runner.latency()
    assert list(latency) == ["fast", "slow"]
    assert 0.05 <= latency["slow"]["p50_s"] <= latency["slow"]["p95_s"] < 1.0
    assert latency["slow"]["seconds"] >= 0.2 and latency["fast"]["p95_s"] < 0.05
