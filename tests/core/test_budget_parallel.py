"""Budgets with workers: calls running in parallel must not pass a cap together, and a
budget stop that a broken agent caused reads as the broken agent (exit 3).

Thread ordering is forced with events and predicates, never with sleeps: the first call of
a model is held in the backend until every other call of the map is either inside the
backend too (the bug: nothing held them) or waiting in the runner for an estimate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from gitsleep.base.errors import BudgetExhausted
from gitsleep.core.calls import CallRunner
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall

PRICES = {"m": {"prompt": 1.0, "completion": 2.0}}  # USD per 1M tokens
DEADLINE = 5.0  # seconds a thread waits for an ordering that the bug never brings


def until(ready: Callable[[], bool]) -> bool:
    """Wait for another thread to make `ready` true (False after DEADLINE: the order the
    test forces never came)."""
    end = time.monotonic() + DEADLINE
    while not ready():
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def waiting(runner: CallRunner | None) -> int:
    """Calls the runner holds back until their model has an estimate."""
    return int(getattr(runner, "_waiting", 0))


class Held(Backend):
    """Every call costs the same. The first one is held until `others` calls are in the
    backend too or waiting in the runner; with `hold_until_stop`, the later ones are held
    until the budget stopped the runner (so they are still running at the stop)."""

    name = "held"

    def __init__(self, others: int, *, prompt: int = 1000, completion: int = 500,
                 seconds: float = 1.0, hold_until_stop: bool = False,
                 first_raises: BaseException | None = None) -> None:
        self.runner: CallRunner | None = None
        self.others = others
        self.prompt, self.completion, self.seconds = prompt, completion, seconds
        self.hold_until_stop = hold_until_stop
        self.first_raises = first_raises
        self.entered = 0
        self.in_flight = 0
        self.peak = 0  # the most calls inside the backend at once
        self.peak_while_first = 0  # ... while the first call ran
        self.first_running = False
        self.seen_by_first = 0  # calls that had entered when the first was let go
        self._lock = threading.Lock()

    def complete(self, call: ModelCall) -> Answer:
        with self._lock:
            self.entered += 1
            first = self.entered == 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.first_running = self.first_running or first
            if self.first_running:
                self.peak_while_first = max(self.peak_while_first, self.in_flight)
        try:
            if first:
                until(lambda: self.entered > self.others
                      or waiting(self.runner) >= self.others)
                self.seen_by_first = self.entered
                if self.first_raises is not None:
                    raise self.first_raises
            elif self.hold_until_stop:
                until(lambda: self.runner is not None and self.runner._stopped is not None)
            return Answer(f"answer to {call.messages[-1][1]}", prompt_tokens=self.prompt,
                          completion_tokens=self.completion, seconds=self.seconds)
        finally:
            with self._lock:
                self.in_flight -= 1
                self.first_running = self.first_running and not first


def ask(i: int, model: str = "m") -> ModelCall:
    return ModelCall("answer", model, (("user", f"q{i}"),))


def runner_for(backend: Held, **budget: Any) -> CallRunner:
    runner = CallRunner(backend, workers=8, **budget)
    backend.runner = runner
    return runner


def test_calls_of_a_model_with_no_estimate_yet_run_one_at_a_time() -> None:
    backend = Held(others=7)
    runner = runner_for(backend, max_agent_minutes=60.0)
    answers = runner.map([ask(i) for i in range(8)])
    assert [a.text for a in answers] == [f"answer to q{i}" for i in range(8)]
    assert backend.peak_while_first == 1, "the others waited for the first call's estimate"
    assert runner.cost.calls == 8 and waiting(runner) == 0


def test_a_parallel_cost_budget_is_not_passed_and_the_stop_counts_every_call() -> None:
    # $0.002 a call; $0.009 allows 4 calls: the first alone, then 3 that hold $0.006
    backend = Held(others=7, hold_until_stop=True)
    runner = runner_for(backend, max_cost=0.009, prices=PRICES)
    with pytest.raises(BudgetExhausted, match=r"max_cost") as stop:
        runner.map([ask(i) for i in range(12)])
    assert backend.entered == 4 and runner.cost.calls == 4
    assert runner.spent_usd() == pytest.approx(0.008)
    # said once the 3 calls running at the stop had finished: what really was spent
    assert "$0.0080 spent in 4 calls" in str(stop.value)
    assert "still running" not in str(stop.value)


def test_a_parallel_token_budget_passes_its_cap_by_one_call_as_one_worker_does() -> None:
    backend = Held(others=7, prompt=10, completion=5)  # 15 tokens a call
    runner = runner_for(backend, max_tokens=100)
    with pytest.raises(BudgetExhausted, match=r"max_tokens") as stop:
        runner.map([ask(i) for i in range(20)])
    serial_backend = Held(others=0, prompt=10, completion=5)
    serial = CallRunner(serial_backend, workers=1, max_tokens=100)
    with pytest.raises(BudgetExhausted):
        serial.map([ask(i) for i in range(20)])
    assert backend.entered == serial_backend.entered == 7
    assert runner.cost.prompt_tokens + runner.cost.completion_tokens == 105
    assert "budget.max_tokens (100) reached after 105 tokens in 7 calls" in str(stop.value)


def test_parallel_agent_minutes_are_not_passed_and_the_stop_says_what_was_spent() -> None:
    backend = Held(others=7, seconds=20.0, hold_until_stop=True)
    runner = runner_for(backend, max_agent_minutes=1.0)
    with pytest.raises(BudgetExhausted, match=r"max_agent_minutes") as stop:
        runner.map([ask(i) for i in range(12)])
    assert backend.entered == 3 and runner.agent_seconds() == 60.0
    assert runner.cost.wall_seconds == 60.0
    assert "1.00 min spent in 3 calls" in str(stop.value)


def test_a_first_call_that_raises_releases_the_calls_waiting_for_it() -> None:
    backend = Held(others=3, first_raises=RuntimeError("agent crashed"))
    runner = runner_for(backend, max_cost=1.0, prices=PRICES)
    raised: list[BaseException] = []

    def go() -> None:
        try:
            runner.map([ask(i) for i in range(4)])
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            raised.append(exc)

    thread = threading.Thread(target=go)
    thread.start()
    thread.join(DEADLINE * 2)
    assert not thread.is_alive(), "a waiting call was never released"
    assert [str(e) for e in raised] == ["agent crashed"]
    assert backend.entered == 1, "no call starts after a fatal error"


def test_a_model_with_an_estimate_is_not_held_back() -> None:
    """Only the first call of a model runs alone: once it finished, the workers run."""
    backend = Held(others=0)
    runner = runner_for(backend, max_agent_minutes=60.0)
    runner.call(ask(100))
    again = Held(others=3)  # the first call here is held until 3 more are in the backend
    runner.backend, again.runner = again, runner
    runner.map([ask(i) for i in range(4)])
    assert again.seen_by_first == 4 and waiting(runner) == 0


def test_without_a_cap_that_needs_an_estimate_no_call_is_held_back() -> None:
    """Only minutes, money and a max_tokens below its default (a backstop) need one."""
    backend = Held(others=3)
    runner_for(backend, max_calls=100).map([ask(i) for i in range(4)])
    assert backend.seen_by_first == 4


def test_max_calls_stays_exact_with_workers() -> None:
    backend = Held(others=0)
    runner = CallRunner(backend, workers=4, max_calls=5)
    with pytest.raises(BudgetExhausted, match=r"budget.max_calls \(5\) reached after 5 calls"):
        runner.map([ask(i) for i in range(20)])
    assert backend.entered == 5 and runner.cost.calls == 5


# -- a broken agent under a budget ---------------------------------------------------------


class Broken(Backend):
    """An agent CLI that exits 0 with nothing on stdout (after its retries), except for the
    prompts in `fine`, which it answers."""

    name = "broken"

    def __init__(self, fine: tuple[str, ...] = ()) -> None:
        self.fine = fine
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, call: ModelCall) -> Answer:
        with self._lock:
            self.calls += 1
        if call.messages[-1][1] in self.fine:
            return Answer("Alpha", tokens_known=False, seconds=1.0)
        return Answer(None, error="agent broken gave an empty answer (stdout) (3 attempts)",
                      tokens_known=False, seconds=1.0)


def many_tasks() -> list[Task]:
    judge = Judge("rule", (Check("contains", "Alpha"),))
    return ([Task(f"t{i}", f"train {i}", "train", judge) for i in range(12)]
            + [Task(f"v{i}", f"val {i}", "val", judge) for i in range(4)])


def epoch_settings(**overrides: Any) -> EpochSettings:
    base = EpochSettings(model="agent", optimizer_model="agent", judge_model="agent")
    return replace(base, **overrides)


@pytest.mark.parametrize("workers", [1, 4])
def test_a_budget_stop_in_a_pass_of_failed_calls_is_the_error_rate_abort(workers: int) -> None:
    backend = Broken()
    result = run_epoch(many_tasks(), {"skill": "# S\n", "memory": None},
                       epoch_settings(max_calls=10, workers=workers), backend, skill="s")
    assert result.decision == "aborted" and result.abort_code == 3, result.reason
    assert backend.calls == 10
    assert result.reason.startswith("10 of 10 model calls failed while scoring train "
                                    "(baseline), over max_error_rate 20%")
    assert "budget.max_calls (10) reached after 10 calls" in result.reason
    assert "first error: answer: agent broken gave an empty answer (stdout)" in result.reason


def test_a_budget_stop_with_few_failed_calls_stays_a_budget_stop() -> None:
    backend = Broken(fine=tuple(f"train {i}" for i in range(1, 12)))  # only t0 fails
    result = run_epoch(many_tasks(), {"skill": "# S\n", "memory": None},
                       epoch_settings(max_calls=10, workers=1), backend, skill="s")
    assert result.abort_code == 6, result.reason
    assert result.reason.startswith("budget.max_calls (10) reached after 10 calls")
