"""Checks in words, and texts that pass them, for teaching the optimizer.

A small optimizer copies what it is shown. So the reflection prompt states each failing
check in plain words and, where one can be derived from the check itself, the line that
passes it: `## Impact` for a section, and for `(?i)severity\\s*[:=]\\s*[1-4]` the typed
line `Severity: <1-4>`, never one value (the check leaves the value to the task; a
constant passes only the tasks that want it). The words and the examples are each op's
own, in `check_ops.OPS`; this module applies them to a `Check`.
"""

from __future__ import annotations

import re

from gitsleep.core.check_ops import OPS, TRACE_OPS
from gitsleep.core.models import Check
from gitsleep.core.regex_literal import TYPED_SLOT, fills
from gitsleep.core.trace import pair_arg


def describe_check(check: Check) -> str:
    """A failing check in plain words, for the reflection prompt."""
    spec = OPS.get(check.op)
    if spec is None:
        return f"the check {check.label()} must pass"
    return spec.describe(check.text)


def example_for_check(check: Check) -> str | None:
    """A concrete text that passes `check`, or None when none can be given.

    `equals` gets None on purpose: a skill rule cannot make every answer one text.
    """
    spec = OPS.get(check.op)
    return None if spec is None else spec.example(check.text)


def is_section_check(check: Check) -> bool:
    """Whether the check asks for a section heading (its arg names it)."""
    spec = OPS.get(check.op)
    return spec is not None and spec.quotes == "heading"


def wants_text(check: Check) -> bool:
    """Whether the check's arg is the very text the answer must contain (`contains`)."""
    spec = OPS.get(check.op)
    return spec is not None and spec.quotes == "text"


def is_line_check(check: Check) -> bool:
    """Whether one line of text can pass the check on its own (see `passes`)."""
    spec = OPS.get(check.op)
    return spec is not None and spec.satisfied_by is not None


_LABELLED = re.compile(r"^[^:\n]{1,40}:(?:\s|$)")


def rule_for_check(check: Check, text: str | None = None) -> str | None:
    """An imperative rule that quotes what `check` wants, or None when no text can be
    quoted. A small agent obeys `Every answer must have a section headed "## Impact".`
    where it ignores a bare `## Impact`. `text`, when given and passing the check, is
    quoted instead of the derived example (the optimizer's own value is kept). A
    trajectory check gets the rule that asks for the call it judges."""
    if check.op in TRACE_OPS:
        return _tool_rule(check)
    example = example_for_check(check)
    if example is None:
        return None
    if is_section_check(check):
        return f'Every answer must have a section headed "{example}".'
    own = text if text and passes(check, text) else None
    literal = own or example
    choose = choice_note(literal)
    if _LABELLED.match(literal):
        return f'Every answer must have a line "{literal}"{choose}.'
    return f'Every answer must contain the text "{literal}"{choose}.'


def _tool_rule(check: Check) -> str | None:
    """What a trajectory check asks of the agent, as a rule. A check that also judges the
    call's arguments by a regex gets the same rule: the call is needed whatever the
    arguments, and the rule quotes nothing of the regex (it leaves them to the task)."""
    if check.op == "tool_called":
        return (f'Before you answer, call the "{check.text}" tool; answer from what it '
                "returns, not from memory.")
    if check.op == "tool_not_called":
        return f'Never call the "{check.text}" tool.'
    if check.op == "max_tool_calls":
        return f"Make at most {check.text} tool call(s) before you answer."
    pair = pair_arg(check.text)
    if pair is None:
        return None
    return f'Call the "{pair[0]}" tool before you call the "{pair[1]}" tool.'


def choice_note(text: str) -> str:
    """`, with <1-4> chosen for each task` when `text` holds typed placeholders, else ''."""
    slots = list(dict.fromkeys(m.group(0) for m in TYPED_SLOT.finditer(text)))
    return f", with {' and '.join(slots)} chosen for each task" if slots else ""


def passes(check: Check, text: str) -> bool:
    """Whether `text` alone meets a check one line can pass (`contains`, `regex`); False
    for the other ops. A typed placeholder (`Severity: <1-4>`) counts as any one of its
    options: the line has the shape the check wants, the agent picks the value (so
    `Severity: <1-4>` serves `Severity:\\s*[34]` too)."""
    spec = OPS.get(check.op)
    if spec is None or spec.satisfied_by is None:
        return False
    return any(spec.satisfied_by(filled, check.text) for filled in fills(text))
