"""The `command` tool runs its declared argv under the workspace rules."""

from __future__ import annotations

import sys

import pytest

from gitsleep.core.tools import ToolSpec
from gitsleep.sandbox.tool_command import run_command_tool

PY = sys.executable


def tool(code: str, timeout: float = 10.0) -> ToolSpec:
    return ToolSpec("run", "command", "fx", argv=(PY, "-c", code), timeout=timeout,
                    files=(("data.txt", "fixture\n"),))


def test_it_runs_in_a_copy_of_the_folder_with_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    code = "import sys; print(open('data.txt').read().strip(), sys.stdin.read())"
    assert run_command_tool(tool(code), "hello") == ("exit 0\nfixture hello", None)


def test_it_never_sees_the_model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-AbCdEf0123456789xyzQRS")
    code = "import os; print(os.environ.get('OPENAI_API_KEY', 'absent'))"
    assert run_command_tool(tool(code), "") == ("exit 0\nabsent", None)


@pytest.mark.slow
def test_it_is_killed_at_its_time_bound() -> None:
    output, error = run_command_tool(tool("import time; time.sleep(30)", timeout=0.5), "")
    assert error == "timed out after 0.5s (process group killed)"
