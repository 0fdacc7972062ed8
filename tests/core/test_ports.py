"""The backend port: what a call's cache key holds, and what a backend declares."""

from __future__ import annotations

from gitsleep.core.models import Answer
from gitsleep.core.ports import BACKENDS, Backend, ModelCall


def _call(**fields: object) -> ModelCall:
    return ModelCall(purpose="answer", model="m", messages=(("user", "hi"),),
                     **fields)  # type: ignore[arg-type]


def test_the_cache_key_is_the_request_and_never_its_context() -> None:
    plain = _call()
    assert plain.cache_key() == _call(context={"workspace": {"tree": "abc"}}).cache_key()
    assert plain.cache_key() != _call(temperature=0.7).cache_key()
    assert plain.cache_key() != _call(sample=1).cache_key()
    assert plain.cache_key() != _call(agent="large").cache_key()  # an agent's own entry
    assert len(plain.cache_key()) == 64


def test_a_backend_declares_nothing_special_unless_it_says_so() -> None:
    class Echo(Backend):
        def complete(self, call: ModelCall) -> Answer:
            return Answer(text=call.messages[-1][1])

    echo = Echo()
    assert echo.complete(_call()).text == "hi"
    assert not echo.simulated and not echo.workspaces
    assert not echo.writes_free_values("propose")
    assert echo.cache_salt(_call()) == ""
    echo.close()
    echo.interrupt()


def test_the_backends_a_config_may_name() -> None:
    assert BACKENDS == ("openai", "offline", "command")
