"""How a skill or a task declares its agent's tools: what is refused, and the core's view."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gitsleep.core.tools import ToolSpec
from gitsleep.inputs.tool_settings import ToolConfig, unique_names


def test_a_search_tool_becomes_the_cores_spec_under_its_own_name() -> None:
    tool = ToolConfig(tool="search", folder="brain/topics/")
    assert tool.called == "search"
    assert tool.spec() == ToolSpec(name="search", kind="search", folder="brain/topics",
                                   description="", argv=(), timeout=30.0)
    named = ToolConfig(tool="read_file", name="read_note", folder="brain/topics")
    assert named.spec().name == "read_note" and named.spec().kind == "read_file"


@pytest.mark.parametrize(("fields", "words"), [
    ({"tool": "search"}, "needs `folder:`"),
    ({"tool": "search", "folder": "../outside"}, "folder"),
    ({"tool": "search", "folder": "/etc"}, "folder"),
    ({"tool": "read_file", "folder": "notes", "argv": ["cat"]}, "`argv:` is for command"),
    ({"tool": "command", "name": "run_tests", "folder": "fixture"}, "needs `argv:`"),
    ({"tool": "search", "name": "search\n", "folder": "notes"}, "not a tool name"),
    ({"tool": "search", "name": "9lives", "folder": "notes"}, "not a tool name"),
])
def test_a_bad_declaration_is_refused_with_the_fix(fields: dict[str, object],
                                                   words: str) -> None:
    with pytest.raises(ValidationError, match=words.replace("`", ".").replace("(", r"\(")):
        ToolConfig.model_validate(fields)


def test_two_tools_of_one_name_are_refused() -> None:
    one = ToolConfig(tool="search", folder="a")
    other = ToolConfig(tool="search", folder="b")
    assert unique_names([one]) == [one]
    with pytest.raises(ValueError, match="two tools are named 'search'"):
        unique_names([one, other])
