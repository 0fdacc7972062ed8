"""Honest learning: a learned block a reviewer would merge, not one that games the checks.

Seen on real models: an accepted block said `Every answer must have a line
"Severity: 3".` and its template said `Severity: 1`. The check accepted any of 1-4, so
one constant passed some tasks, and the block contradicted itself. This module holds
the facts gitsleep needs to refuse that before any scoring, to keep such answers from
passing the gate, and to warn a reviewer:

- `pin_problem`: a rule or template line that fixes one literal where the checks of the
  tasks allow a choice (a class, range or alternation in a regex, or several values the
  tasks' `contains` checks want for one label);
- `contradiction`: two rules, or a rule and the template, that give one label different
  literal values;
- `superseded`: the kept rule a new rule for the same label replaces;
- `hollow_reason`: an answer that repeats a placeholder of the learned template or a
  typed slot of a learned rule verbatim, or leaves a section or label the template
  requires empty;
- `over_reach` and `presence_only`: a rule that asks every answer for a text only some
  tasks want, with no task that checks its absence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gitsleep.base.problems import Problem, warning
from gitsleep.core import labels, worked
from gitsleep.core.check_ops import OPS
from gitsleep.core.models import Check, Task
from gitsleep.core.patterns import search
from gitsleep.core.regex_literal import TYPED_SLOT, has_choice, sample_fill, typed_form

_QUOTED = re.compile(r"\"([^\"\n]{1,120})\"|(?<!\w)'([^'\n]{1,120})'(?!\w)|`([^`\n]{1,120})`")
_BULLET = re.compile(r"^\s*[-*+]\s+")
# `Severity: 3`, `**Verdict:** approve`, `Risk level = high`: a label and its literal value
_LABEL_VALUE = re.compile(
    rf"^\s*{labels.LABEL}\s*(?P<value>[^\s<>\"'`][^<>\"'`]{{0,38}}?)?\s*[.!]?\s*$")
# Words that make a rule say how to choose (or give an example) rather than fix one value.
_CONDITION = re.compile(
    r"\b(?:if|when|whenever|unless|depending|depends|based\s+on|according\s+to|otherwise"
    r"|except|choose|pick|decide|or|such\s+as|for\s+example|for\s+instance|e\.g)\b"
    r"|\bfor\s+(?!every\b|each\b|all\b|any\b)\w",
    re.IGNORECASE,
)
_ANGLE = re.compile(r"<[^<>\n]{1,60}>")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(?P<name>\S.*?)\s*#*\s*$")
# a labelled line the template asks the agent to fill: `Risk level: <low|high>`, or a bare
# `Risk level:` (seen on a SQL-review skill: answers copied it empty)
_TEMPLATE_LABEL = re.compile(
    rf"^\s*{labels.BULLET}{labels.EMPHASIS}(?P<label>{labels.NAME}?){labels.EMPHASIS}"
    rf"\s*:\s*{labels.EMPHASIS}\s*(?:<[^<>\n]{{1,60}}>)?\s*$")
# What a rule quotes for every answer to carry: `Always include "X"`, `must contain ... "X"`
_DEMANDS = re.compile(
    r"\b(?:always|every\s+answer|each\s+answer|all\s+answers|must|include|includes|start"
    r"|begin|end)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(?:never|not|don'?t|avoid|omit|without|no)\b", re.IGNORECASE)


def _segments(line: str) -> list[str]:
    """The quoted parts of a rule, or the whole line (bullet removed) when none is quoted."""
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(line)]
    return quoted or [_BULLET.sub("", line, count=1)]


def literal_values(line: str) -> list[tuple[str, str, str]]:
    """(label folded, label as written, value) for each `Label: value` the line gives a
    literal value (a typed placeholder such as `<1-4>` is no literal)."""
    found = []
    for segment in _segments(line):
        match = _LABEL_VALUE.match(segment)
        if match and match.group("value") and any(ch.isalnum() for ch in match.group("value")):
            label = match.group("label").strip()
            value = match.group("value").strip().rstrip(".")
            found.append((" ".join(label.casefold().split()), label, value))
    return found


def is_conditional(line: str) -> bool:
    """Whether a rule says how to choose (a condition, or several options)."""
    return bool(_CONDITION.search(" ".join(_words_outside_quotes(line))))


def _words_outside_quotes(line: str) -> list[str]:
    return _QUOTED.sub(" ", line).split()


def pinned(line: str) -> list[tuple[str, str, str]]:
    """The labels an unconditional line fixes to exactly one literal value (a worked
    example shows one task's value, for that task only: it fixes none)."""
    if is_conditional(line) or worked.is_example(line):
        return []
    values = literal_values(line)
    labels = {label for label, _, _ in values}
    return (
        [v for v in values if len({x[2].casefold() for x in values if x[0] == v[0]}) == 1]
        if labels
        else []
    )


def label_classes(checks: Iterable[Check]) -> dict[str, set[str]]:
    """Per label, the values the tasks' `contains` checks want when they want two or more:
    across the tasks that label takes a choice of values, not one."""
    values: dict[str, set[str]] = {}
    for check in checks:
        if OPS.get(check.op) is not None and OPS[check.op].quotes == "text":
            for label, _, value in literal_values(check.text):
                values.setdefault(label, set()).add(value.casefold())
    return {label: found for label, found in values.items() if len(found) > 1}


def pin_problem(line: str, checks: Sequence[Check], *, template: bool = False,
                free_values: bool = True) -> str:
    """Why a rule or template line fixes one literal where the checks allow a choice, or ''.

    A template line is a shape, never a choice, so a value in it is a pin even next to a
    condition word; a rule that says how to choose ("1 or 2 when ...") is kept.
    `free_values=False` lets a rule fill a label whose value the check asks nothing about
    (the offline simulator's spec directive, `Always include "Confidence: medium"`)."""
    if TYPED_SLOT.search(line):
        return ""
    if not template and is_conditional(line):
        return ""
    for check in checks:
        if check.op != "regex" or not has_choice(check.text):
            continue
        for segment in _segments(line):
            match = search(check.text, segment)
            if match is not None:
                shape = typed_form(check.text) or ""
                return (
                    f"{line.strip()!r} fixes {match.group(0).strip()!r} for every answer, "
                    f"but the check `{check.text}` accepts a choice: keep the typed "
                    f"placeholder ({shape}) and add a rule that says how to choose the "
                    "value for each task"
                )
    if template or free_values:
        free = _free_value_pin(line, checks)
        if free:
            return free
    classes = label_classes(checks)
    for label, written, value in literal_values(line):
        if label in classes:
            options = "|".join(sorted(classes[label]))
            return (
                f"{line.strip()!r} fixes {written}: {value} for every answer, but the tasks "
                f"want different values ({options}): keep a typed placeholder "
                f"({written}: <{options}>) and add a rule that says how to choose"
            )
    return ""


def _free_value_pin(line: str, checks: Sequence[Check]) -> str:
    """A line that fills a label whose value the check leaves to each answer
    (`Confidence: medium` in a template, `Confidence: 100%` in a rule, for
    `[Cc]onfidence\\s*[:=]`: both accepted on real models), or ''. gitsleep's own
    derivations show the typed `Confidence: <text>`."""
    for check in checks:
        if check.op != "regex" or has_choice(check.text):
            continue
        shape = typed_form(check.text) or ""
        if not shape.endswith(": <text>") or search(check.text, line) is None:
            continue
        for _label, written, value in literal_values(line):
            return (
                f"{line.strip()!r} fixes {written}: {value} for every answer, but the check "
                f"`{check.text}` accepts a choice of value: keep the typed placeholder "
                f"({shape}) and add a rule that says how to choose the value for each task"
            )
    return ""


def contradiction(rules: Sequence[str], template: str | None) -> str:
    """Why a learned block contradicts itself (one label, two literal values), or ''."""
    seen: dict[str, tuple[str, str, str]] = {}  # label -> (label as written, value, where)
    sources = [(rule, f"rule {rule.strip()!r}", pinned(rule)) for rule in rules]
    for line in (template or "").split("\n"):
        sources.append((line, "the answer template", literal_values(line)))
    for _text, where, values in sources:
        for label, written, value in values:
            prior = seen.get(label)
            if prior is None:
                seen[label] = (written, value, where)
            elif prior[1].casefold() != value.casefold():
                return (
                    f"the learned block gives {written!r} two values: "
                    f"{prior[0]}: {prior[1]} ({prior[2]}) and {written}: {value} ({where}); "
                    "a value that depends on the task belongs in a typed placeholder and "
                    "a rule that says how to choose"
                )
    return ""


def superseded(line: str, rules: Sequence[str]) -> str | None:
    """The one kept rule that fixes a label this new line fixes to another value (so the
    new line replaces it through the gate instead of sitting beside it), or None."""
    mine = {label: value.casefold() for label, _, value in pinned(line)}
    if not mine:
        return None
    hits = [
        rule
        for rule in rules
        if any(
            label in mine and mine[label] != value.casefold() for label, _, value in pinned(rule)
        )
    ]
    return hits[0] if len(hits) == 1 else None


# -- integrity in scoring ------------------------------------------------------------------


def template_placeholders(template: str) -> list[str]:
    return list(dict.fromkeys(m.group(0) for m in _ANGLE.finditer(template)))


def rule_slots(rules: Iterable[str]) -> list[str]:
    """The typed slots of learned rules (`<1-4>`, `<approve|reject>`, `<text>`), which each
    answer fills; a rule's other angle text (`<answer> tags`) is not one."""
    return list(dict.fromkeys(m.group(0) for rule in rules for m in TYPED_SLOT.finditer(rule)))


@dataclass(frozen=True)
class LearnedShape:
    """What the learned blocks ask an answer to fill: their templates, and the typed slots
    of their rules (`Severity: <1-4>`, which held-out answers of a real night copied)."""

    templates: tuple[str, ...] = ()
    slots: tuple[str, ...] = ()


def hollow_reason(answer: str, shape: LearnedShape) -> str:
    """Why an answer does not pass whatever its checks say: it repeats a placeholder of a
    learned template or a slot of a learned rule verbatim, or leaves a section or label
    the template requires empty; '' when it does none of these (at once when the
    documents ask nothing to be filled, as most do: every scored answer passes here)."""
    if not shape.templates and not shape.slots:
        return ""
    lines = answer.split("\n")
    for template in shape.templates:
        for token in template_placeholders(template):
            if token in answer:
                return f"repeats the template placeholder {token} instead of filling it"
        for required in template.split("\n"):
            heading = _HEADING.match(required)
            if heading and _empty_section(lines, heading.group("name")):
                return f"leaves the required section {required.strip()!r} empty"
            label = _TEMPLATE_LABEL.match(required)
            if label and _empty_label(lines, label.group("label")):
                return f"leaves the required line {label.group('label').strip()!r}: empty"
    for token in shape.slots:
        if token in answer:
            return f"repeats the rule placeholder {token} instead of filling it"
    return ""


def bare_labels(template: str) -> list[str]:
    """The labelled lines a template leaves with nothing to fill (`Risk level:` with no
    `<slot>` and no list under it): an answer copies them empty."""
    lines = template.split("\n")
    found = []
    for line in lines:
        label = _TEMPLATE_LABEL.match(line)
        if label and "<" not in line and _empty_label(lines, label.group("label")):
            found.append(line.strip())
    return found


def _norm(text: str) -> str:
    return " ".join(text.strip().strip("*_").rstrip(":").casefold().split())


def _empty_section(lines: list[str], name: str) -> bool:
    """The answer has the heading, and nothing under it before the next heading of the
    same or a higher level (a sub-heading is content)."""
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading and _norm(heading.group("name")) == _norm(name):
            level = len(heading.group(1))
            for later in lines[i + 1 :]:
                other = _HEADING.match(later)
                if other and len(other.group(1)) <= level:
                    return True
                if later.strip():
                    return False
            return True
    return False


def _empty_label(lines: list[str], label: str) -> bool:
    pattern = re.compile(
        rf"^\s*(?:[-*+]\s+)?(?:\*\*|__)?{re.escape(label.strip())}(?:\*\*|__)?"
        r"\s*:\s*(?:\*\*|__)?\s*$",
        re.IGNORECASE,
    )
    for i, line in enumerate(lines):
        if pattern.match(line):
            after = next((later for later in lines[i + 1 :] if later.strip()), "")
            # a list or text on the lines below is the label's content ("Steps:\n1. ...")
            if not after or _HEADING.match(after) or _LABEL_LINE.match(after):
                return True
    return False


# a line that opens another label: `Owner:` (a bulleted `- high: ...` is content)
_LABEL_LINE = re.compile(rf"^\s*{labels.EMPHASIS}{labels.NAME}{labels.EMPHASIS}\s*:")


# -- over-reach ----------------------------------------------------------------------------


def demanded(line: str) -> list[str]:
    """The texts an unconditional rule asks every answer to carry."""
    outside = " ".join(_words_outside_quotes(line))
    if is_conditional(line) or not _DEMANDS.search(outside) or _NEGATION.search(outside):
        return []
    return [seg.strip() for seg in _segments(line) if _QUOTED.search(line) and seg.strip()]


def _wants(check: Check, text: str) -> bool:
    spec = OPS.get(check.op)
    if spec is None or not check.text.strip():
        return False
    if spec.quotes == "text":
        return check.text.casefold() in text.casefold() or text.casefold() in check.text.casefold()
    if spec.quotes == "pattern":
        return search(check.text, text) is not None
    if spec.quotes == "heading":
        return check.text.strip().lstrip("#").strip().casefold() in text.casefold()
    return False


def _label_of(text: str) -> str:
    match = _LABEL_VALUE.match(sample_fill(text))
    return " ".join(match.group("label").casefold().split()) if match else ""


def _forbids(check: Check, text: str) -> bool:
    """Whether a task's check fails an answer that carries `text`: it forbids the text, or
    wants another value for the same label (`Severity: [34]` against `Severity: 1`)."""
    spec = OPS.get(check.op)
    if spec is None or not check.text.strip():
        return False
    if spec.avoids:
        return check.text.casefold() in text.casefold()
    if spec.quotes in ("text", "pattern"):
        label = _label_of(text)
        example = spec.example(check.text) or ""
        return bool(label) and _label_of(example) == label and not _wants(check, sample_fill(text))
    return False


def over_reach(rules: Iterable[str], tasks: Sequence[Task]) -> list[str]:
    """A warning per text a rule asks of every answer while only some tasks want it and
    none checks that it is absent: the checks cannot see what the rule costs the rest."""
    warnings: list[str] = []
    total = len(tasks)
    for rule in rules:
        for text in demanded(rule):
            want = sum(1 for t in tasks if any(_wants(c, text) for c in t.judge.checks))
            forbid = sum(1 for t in tasks if any(_forbids(c, text) for c in t.judge.checks))
            if 0 < want < total and not forbid:
                warnings.append(
                    f"asks every answer for {text!r}; only {want} of {total} tasks "
                    f"want it; add tasks where {text!r} must not appear"
                )
    return list(dict.fromkeys(warnings))


MAX_PRESENCE_ADVICE = 3  # per skill: the advice is the same for every such text


def presence_problems(tasks: Sequence[Task]) -> list[Problem]:
    """`presence_only` as `validate` warnings (GS140), each on the task file of the first
    task that asks for the text."""
    return [
        warning(source, None, "GS140", message)
        for source, message in presence_only(tasks)[:MAX_PRESENCE_ADVICE]
    ]


def presence_only(tasks: Sequence[Task]) -> list[tuple[str, str]]:
    """Advice for `validate`: texts at most half the tasks ask for and no task checks the
    absence of (nor a different value for the same label). A rule "always include X"
    passes them all, and nothing would show what it costs the tasks that do not want X."""
    rule_tasks = [t for t in tasks if t.judge.kind == "rule"]
    total = len(rule_tasks)
    wanted: dict[str, int] = {}
    for task in rule_tasks:
        for check in dict.fromkeys(task.judge.checks):
            if check.op in ("contains", "regex") and check.text.strip():
                wanted[check.label()] = wanted.get(check.label(), 0) + 1
    checks = [c for t in rule_tasks for c in t.judge.checks]
    advice = []
    for task in rule_tasks:
        for check in task.judge.checks:
            label = check.label()
            count = wanted.pop(label, 0)
            if not 0 < count * 2 <= total:  # a text most tasks want is no trap
                continue
            example = check.text if check.op == "contains" else typed_form(check.text) or check.text
            if any(_forbids(other, example) for other in checks):
                continue
            advice.append(
                (
                    task.source,
                    f"{count} of {total} tasks check {label} and none checks that it is "
                    f"absent: a rule that asks every answer for {example!r} would pass "
                    f"them all; add tasks where {example!r} must not appear",
                )
            )
    return advice
