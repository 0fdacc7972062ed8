"""Worked examples: a learned rule that shows one train task and the value it wants.

DSPy's bootstrapped few-shot picks demonstrations from passing train traces; a small
agent learns a judgment from a case more readily than from a condition in words. A
worked example is one line of the learned block:

    Example: for "<a verbatim excerpt of a train task>", the answer has "<value>".

It is kept only when the train data supports it: the excerpt is part of one train task's
text (never a val or held-out task: only train prompts are passed in), and the value
passes that task's checks of every varying key while failing another group's (the
example shows that task's choice, not one for all). The optimizer cannot invent one. The
reflection offers one per group, built from a passing train answer when there is one
(else from the task's check), so the examples cover the groups (`offers`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from gitsleep.core.check_text import example_for_check
from gitsleep.core.groups import VaryingKey, group_of, passed_groups
from gitsleep.core.models import Check, Task, TaskResult
from gitsleep.core.patterns import search
from gitsleep.core.regex_literal import TYPED_SLOT

MAX_EXAMPLES = 4  # worked examples in one learned block: a few, never a copy of train
EXCERPT = 160  # characters of a task's text an example may quote
MIN_EXCERPT = 20  # shorter is no case a reader can recognise
MAX_VALUE = 80
EXAMPLE = re.compile(
    r"^\s*Example:\s+for\s+\"(?P<excerpt>[^\"\n]{1,400})\",\s+the\s+answer\s+has\s+"
    r"\"(?P<value>[^\"\n]{1,200})\"\.?\s*$",
    re.IGNORECASE,
)


def is_example(line: str) -> bool:
    return EXAMPLE.match(line) is not None


def _norm(text: str) -> str:
    return " ".join(text.casefold().split())


def problem(line: str, train: Sequence[Task], keys: Sequence[VaryingKey]) -> str:
    """Why a worked example is not supported by a train task and its checks, or ''."""
    match = EXAMPLE.match(line)
    if match is None:
        return ""
    excerpt, value = match.group("excerpt"), match.group("value")
    if not MIN_EXCERPT <= len(excerpt) <= EXCERPT or len(value) > MAX_VALUE:
        return (f"a worked example quotes {MIN_EXCERPT} to {EXCERPT} characters of a train "
                f"task and a value of at most {MAX_VALUE}")
    owners = [t for t in train if _norm(excerpt) in _norm(t.prompt)]
    if len(owners) != 1:
        return ("a worked example must quote the text of exactly one train task: "
                f"{len(owners)} train task(s) hold {excerpt[:60]!r}")
    task = owners[0]
    mine = [(key, group_of(key, task)) for key in keys]
    if not any(group is not None for _, group in mine):
        return "a worked example shows a value whose checks vary per task; this one's do not"
    for key, group in mine:
        if group is None:
            continue
        passed = passed_groups(value, key)
        if group not in passed or len(passed) == len(key.groups):
            return (f"a worked example's value {value!r} is not what the checks of "
                    f"{task.id} want ({group.wants()})")
    return ""


def offers(keys: Sequence[VaryingKey], results: Sequence[TaskResult],
           tasks: Mapping[str, Task]) -> list[str]:
    """One worked example per group of each key, from the group's first train task with a
    scored answer that passes its checks (the value as that answer wrote it), else its
    first task (the value its check asks for, when that is one literal)."""
    answers = {r.task_id: s.answer or "" for r in results for s in r.samples[:1]
               if s.score is not None and s.score.hard == 1.0}
    lines = []
    for key in keys:
        for group in key.groups:
            for task_id in sorted(group.task_ids, key=lambda i: i not in answers):
                line = _example_of(tasks[task_id], group.want, answers.get(task_id, ""))
                if line and problem(line, [tasks[task_id]], [key]) == "":
                    lines.append(line)
                    break
    return lines


def _example_of(task: Task, want: Sequence[Check], answer: str) -> str:
    value = ""
    for check in want:
        if check.op == "regex" and answer:
            found = search(check.text, answer)
            value = found.group(0).strip() if found else ""
        if not value:
            literal = example_for_check(check) or ""
            value = "" if TYPED_SLOT.search(literal) else literal
        if value:
            break
    excerpt = _excerpt(task.prompt)
    if not value or '"' in value or '"' in excerpt or len(value) > MAX_VALUE:
        return ""
    return f'Example: for "{excerpt}", the answer has "{value}".'


def _excerpt(prompt: str) -> str:
    """The task's text, one line, cut at a word to at most EXCERPT characters."""
    text = " ".join(prompt.split())
    if len(text) <= EXCERPT:
        return text
    cut = text[:EXCERPT]
    return cut[: cut.rfind(" ")] if " " in cut else cut
