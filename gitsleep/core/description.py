"""A skill's `description:` as an editable surface: its value changes, no other byte.

The description is what a harness shows before the agent decides to read a skill, so it
decides whether the skill is picked. It is hand-written text, edited only where the
config allows it, and an edit is bounded like a learned-block edit: the new value is at
most `MAX_CHARS` characters, holds no angle bracket (harnesses read the catalog as
markup), and the frontmatter still parses with every other key unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import yaml

from gitsleep.base.hostile_text import invisible_problem, unsafe_link_problem

MAX_CHARS = 1024  # the Agent Skills format's limit on a description
_KEY = re.compile(r"^description[ \t]*:(.*)$")
_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9(][^\n:#]*$")


class DescriptionError(ValueError):
    """Why a description cannot be read or set; the message says what to fix."""


@dataclass(frozen=True)
class _Span:
    """Lines [first, end) hold the `description:` key and its value."""

    first: int
    end: int
    close: int  # the index of the frontmatter's closing `---` line


def _frontmatter(lines: list[str]) -> int:
    """The closing line of the frontmatter (a byte-order mark before `---` is skipped)."""
    if not lines or lines[0].removeprefix("\ufeff").rstrip("\r\n") != "---":
        raise DescriptionError("the skill document has no frontmatter (`---` lines at the top)")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            return i
    raise DescriptionError("the frontmatter never closes: add a '---' line")


def _span(lines: list[str]) -> _Span:
    close = _frontmatter(lines)
    for i in range(1, close):
        if _KEY.match(lines[i].rstrip("\r\n")):
            end = i + 1
            # a block scalar or a folded plain value goes on while lines are indented
            while end < close and (lines[end][:1] in (" ", "\t")
                                   or not lines[end].strip()):
                end += 1
            while end - 1 > i and not lines[end - 1].strip():
                end -= 1  # trailing blank lines belong to what follows
            return _Span(i, end, close)
    raise DescriptionError("the frontmatter has no top-level `description:` key")


def _parse(lines: list[str], close: int) -> dict[str, object]:
    head = "".join(lines[1:close]).replace("\ufeff", "")
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        raise DescriptionError(f"the frontmatter does not parse: {exc}") from None
    if not isinstance(data, dict):
        raise DescriptionError("the frontmatter is not a mapping of keys")
    return data


def _split(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def fields(text: str) -> dict[str, object]:
    """The frontmatter's keys and values, as YAML reads them."""
    lines = _split(text)
    return _parse(lines, _frontmatter(lines))


def read(text: str) -> str:
    """The description's value, as YAML reads it."""
    value = fields(text).get("description")
    if not isinstance(value, str):
        raise DescriptionError("the frontmatter's `description` is not a string")
    return value


def problem(value: str) -> str | None:
    """Why `value` cannot be a description, or None."""
    if not value.strip():
        return "the description is empty"
    if len(value) > MAX_CHARS:
        return f"the description has {len(value)} characters; at most {MAX_CHARS}"
    if "<" in value or ">" in value:
        return "the description holds an angle bracket, which a harness reads as markup"
    if "\n" in value or "\r" in value:
        return "the description spans several lines; write one paragraph"
    hostile = invisible_problem(value) or unsafe_link_problem(value)
    return hostile.replace("a rule", "a description") if hostile else None


def _scalar(value: str) -> str:
    """The value as YAML: plain when that reads back the same, else double-quoted."""
    if _PLAIN_SAFE.match(value) and value == value.strip():
        try:
            if yaml.safe_load(f"k: {value}") == {"k": value}:
                return value
        except yaml.YAMLError:
            pass
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one


def replace(text: str, value: str) -> str:
    """`text` with the description set to `value`; every other byte as it was.

    Raises DescriptionError when the value is out of bounds or the result would not
    parse to the same frontmatter with only the description changed."""
    why = problem(value)
    if why:
        raise DescriptionError(why)
    lines = _split(text)
    span = _span(lines)
    before = _parse(lines, span.close)
    first = lines[span.first]
    ending = "\r\n" if first.endswith("\r\n") else "\n"
    last = lines[span.end - 1]
    tail = last[len(last.rstrip("\r\n")):]  # the value's last line ending, kept as it was
    new = f"description: {_scalar(value)}{tail if tail else ''}"
    if not tail and span.end < len(lines):
        new += ending
    out = lines[:span.first] + [new] + lines[span.end:]
    result = "".join(out)
    after_lines = _split(result)
    after = _parse(after_lines, _frontmatter(after_lines))
    if after.get("description") != value or {k: v for k, v in after.items()
                                             if k != "description"} != \
            {k: v for k, v in before.items() if k != "description"}:
        raise DescriptionError("the new description would change another frontmatter key")
    return result
