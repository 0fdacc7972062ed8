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
    `[34]` on others) give one line with every value: `Severity: <1-4>`."""
    lines: list[str] = []
    for check in checks:
        for line in structural_line(check):
            merged = next(((i, m) for i, old in enumerate(lines)
                           for m in [merge_typed(old, line)] if m), None)
            if merged is not None:  # one label whose value differs per task: one line
                lines[merged[0]] = merged[1]
            elif line not in lines:
                lines.append(line)
    return "\n".join(lines[:MAX_LINES]) if lines else None
