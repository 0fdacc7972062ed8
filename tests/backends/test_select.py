"""Building the epoch's backend from plain settings: one registry of names, one door."""

from __future__ import annotations

from typing import get_args

import pytest

from gitsleep.backends import BACKENDS
from gitsleep.backends.select import create_backend
from gitsleep.base.errors import UsageError
from gitsleep.inputs.config import Config


def test_the_registry_lists_every_backend_a_config_may_name() -> None:
    named = get_args(Config.model_fields["backend"].annotation)
    assert sorted(BACKENDS) == sorted(named) == ["command", "offline", "openai"]


def test_an_unknown_name_is_refused_naming_the_backends() -> None:
    with pytest.raises(UsageError, match="use one of openai, offline, command"):
        create_backend("mock", env={})
