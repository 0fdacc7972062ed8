"""Answer skeletons derived from the checks, for `template` edits.

A 0.5B agent told in words to write a section `## Impact` and a line `Severity: N` did
so in 1 of 3 answers; shown a short fenced skeleton it wrote the heading in 4 of 4. So
when a failing check is about structure (a section, a labelled line, a regex that wants
a line), the reflection prompt offers a `template` edit whose lines come from the checks
themselves: a weak optimizer only has to copy it. Where a check leaves the value to the
task, the line keeps a typed placeholder (`Severity: <1-4>`), never one value: a
constant in the skeleton passed only the tasks that happened to want it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gitsleep.core.check_text import example_for_check, is_line_check, is_section_check
from gitsleep.core.models import Check
from gitsleep.core.regex_literal import merge_typed

MAX_LINES = 12
MAX_OPTIONS = 8  # a typed placeholder holds at most this many values (`TYPED_SLOT`)
_LABELLED = re.compile(r"^[^:\n]{1,40}:(?:\s|$)")


def structural_line(check: Check) -> list[str]:
    """The skeleton lines one check asks for: a heading and a placeholder under it, or
    a labelled line; [] when the check is not about the answer's structure."""
    example = example_for_check(check)
    if not example:
        return []
    if is_section_check(check):
        name = example.lstrip("#").strip().casefold()
        return [example, f"<write the {name} here>"]
    if is_line_check(check) and (_LABELLED.match(example) or example.startswith("#")):
        # a label carries a slot: a bare `Risk level:` was copied empty by every answer
        return [f"{example.rstrip()} <text>" if example.rstrip().endswith(":") else example]
    return []


def derive(checks: Iterable[Check]) -> str | None:
    """A skeleton for the structural checks, in the order given; None when none is. Two
    checks that want one label with different values (`Severity:\\s*[12]` on some tasks,
    `[34]` on others; `Verdict:\\s*reject` and `Verdict:\\s*approve`) give one line with
    every value: `Severity: <1-4>`, `Verdict: <reject|approve>`."""
    lines: list[str] = []
    for check in checks:
        for line in structural_line(check):
            merged = next(((i, m) for i, old in enumerate(lines)
                           for m in [merge_typed(old, line) or _one_label(old, line)] if m),
                          None)
            if merged is not None:  # one label whose value differs per task: one line
                lines[merged[0]] = merged[1]
            elif line not in lines:
                lines.append(line)
    return "\n".join(lines[:MAX_LINES]) if lines else None


_LABEL_VALUE = re.compile(r"^(?P<label>[^:<>\n]{1,40}):\s*(?P<value>\S.*?)\s*$")
_CHOICE = re.compile(r"^<([^<>|]+(?:\|[^<>|]+)+)>$")


def _one_label(first: str, second: str) -> str | None:
    """`Verdict: <reject|approve>` for `Verdict: reject` and `Verdict: approve`: one label
    whose literal values differ per task is one typed line, never a line per value (a hedge
    that every answer would copy); None for two different labels."""
    a, b = _LABEL_VALUE.match(first), _LABEL_VALUE.match(second)
    if a is None or b is None or \
            a.group("label").strip().casefold() != b.group("label").strip().casefold():
        return None
    options: list[str] = []
    for value in (a.group("value"), b.group("value")):
        choice = _CHOICE.match(value)
        if choice is None and "<" in value:
            return None  # a placeholder of another kind (`<text>`): not a choice of values
        options += choice.group(1).split("|") if choice else [value]
    distinct = list(dict.fromkeys(options))
    if len(distinct) < 2 or len(distinct) > MAX_OPTIONS:
        return None
    return f"{a.group('label')}: <{'|'.join(distinct)}>"
