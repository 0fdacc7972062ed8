"""Bare fragments: a heading or a label is not an instruction a small agent follows.

Measured with Qwen2.5-Coder 0.5B: a learned bullet `- ## Key Risks` or `- Severity: 3`
changed nothing, while `The response must contain the text '## Key Risks'` did. So a
rule line that is only a heading (`## Impact`), a labelled value (`Severity: 3`,
`**Confidence:**`) or the bare text a `contains` check wants is rewritten into an
imperative sentence quoting what the failing check it maps onto wants
(`Every answer must have a section headed "## Impact".`). A fragment that maps onto no
failing check is rejected, with a reason that shows a rule to write instead. A labelled
value the check leaves to the task (`Severity: 3` for `Severity:\\s*[1-4]`) never gets
here: hygiene refuses it first (`honesty.pin_problem`); the typed `Severity: <1-4>` is
rewritten like any fragment and keeps its placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gitsleep.core import labels
from gitsleep.core.check_text import (
    example_for_check,
    is_line_check,
    is_section_check,
    passes,
    rule_for_check,
    wants_text,
)
from gitsleep.core.models import Check

_HEADING = re.compile(r"^#{1,6}\s*(?P<text>\S.*)$")
_INLINE_HEADING = re.compile(r"\s+(?=#{1,6}\s+\S)")
_LABEL = re.compile(rf"^{labels.LABEL}\s*(?P<value>[^.!?]{{0,40}})$")
# Words that make a line ask something of the agent: such a line is a sentence, not a
# fragment, even when it is short.
_ASKS = re.compile(
    r"\b(?:always|never|must|should|shall|include|includes|use|add|write|start|begin|end|put"
    r"|keep|make|avoid|do|don'?t|state|list|give|mention|ensure|every|each|answer|answers"
    r"|prefer|follow|cite|quote|explain|describe|summari[sz]e|report|format|omit|remove"
    r"|reply|respond|return|limit)\b",
    re.IGNORECASE,
)


def _bare(line: str) -> str:
    return line.strip().strip("*_`\"'").strip()


def is_fragment(line: str, failing: Sequence[Check]) -> bool:
    """A heading, a short labelled value, or just the text a `contains` check wants."""
    text = line.strip()
    if _ASKS.search(_HEADING.sub(r"\g<text>", text)):
        return False
    if _HEADING.match(text):
        return True
    label = _LABEL.match(text)
    if label and len(label.group("value").split()) <= 4:
        return True
    bare = _bare(text).rstrip(".").casefold()
    return any(wants_text(c) and bare == c.text.strip().casefold() for c in failing)


def _maps_onto(text: str, check: Check) -> bool:
    """Whether a fragment's text (heading marks removed) names what `check` wants."""
    arg = check.text.strip()
    if not arg:
        return False
    if is_section_check(check):
        name = _bare(text).rstrip(":").strip().casefold()
        return name == arg.lstrip("#").strip().casefold()
    if is_line_check(check):
        if passes(check, text):
            return True
        label = _LABEL.match(_bare(text))
        example = example_for_check(check) or ""
        return label is not None and example.casefold().startswith(
            label.group("label").strip().casefold() + ":")
    return False


def serves(line: str, check: Check) -> bool:
    """Whether a skeleton line gives `check` what it wants (a heading it names, a line
    that passes it)."""
    text = line.strip()
    if is_section_check(check):
        return bool(_HEADING.match(text)) and _maps_onto(_HEADING.sub(r"\g<text>", text), check)
    return passes(check, text)


def _rule_for(line: str, check: Check) -> str | None:
    text = _HEADING.sub(r"\g<text>", line.strip())
    if is_section_check(check):
        return rule_for_check(check)
    example = example_for_check(check) or ""
    # an empty label ("Confidence:") is better quoted with the example's value
    own = _bare(text)
    prefix = example.casefold().startswith(own.casefold()) and len(example) > len(own)
    if own.endswith(":") or prefix:
        own = ""
    return rule_for_check(check, own or None)


def _pieces(line: str, failing: Sequence[Check]) -> list[str]:
    """`Severity: 1 ## Impact` is two fragments run together on one line (the 1.5B optimizer
    writes that): split it before a heading mark when every piece is a fragment."""
    parts = _INLINE_HEADING.split(line.strip())
    if len(parts) > 1 and all(is_fragment(part, failing) for part in parts):
        return parts
    return [line]


def rewrite(lines: Sequence[str], failing: Sequence[Check]) -> tuple[list[str], str]:
    """The lines with each bare fragment rewritten as a rule, or why one cannot be."""
    out: list[str] = []
    for line in (piece for whole in lines for piece in _pieces(whole, failing)):
        if not is_fragment(line, failing):
            out.append(line)
            continue
        text = _HEADING.sub(r"\g<text>", line.strip())
        rule = next((r for c in _ordered(failing) if _maps_onto(text, c)
                     for r in [_rule_for(line, c)] if r), None)
        if rule is None:
            return list(lines), _problem(line, failing)
        out.append(rule)
    return out, ""


def _ordered(failing: Sequence[Check]) -> list[Check]:
    """Section checks first: `## Impact` is the section before it is the text."""
    return sorted(failing, key=lambda c: not is_section_check(c))


def _problem(line: str, failing: Sequence[Check]) -> str:
    example = next((r for c in _ordered(failing) for r in [rule_for_check(c)] if r), None)
    instead = f", for example: {example}" if example else ""
    return (f"{line.strip()!r} is a bare heading or label, not an instruction, and no failing "
            "check asks for it: write an imperative sentence that names what every answer "
            f"must contain and quotes the exact text{instead}")
