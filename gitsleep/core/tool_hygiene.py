"""An edit must state a rule, never carry what a tool answered or a tool folder holds.

The optimizer sees the calls a failing agent made, results included, and the tasks'
notes are what the tools serve. A learned rule that copies them would hand every later
answer a task's data (and a note's words would pass for a rule, whoever wrote the note).
An edit that repeats a run of `MIN_RUN` words of any such text is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gitsleep.core.models import Edit, EditOutcome, SampleResult, Task, TaskResult

MIN_RUN = 8  # words in a row that make a copy (a rule rarely shares 8 with a note)
MAX_SOURCE_WORDS = 200_000  # of all the sources together: a bound on the work, not a limit
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _runs(words: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + MIN_RUN]) for i in range(len(words) - MIN_RUN + 1)}


def tool_texts(samples: Iterable[SampleResult], tasks: Iterable[Task]) -> list[str]:
    """What the optimizer may have seen of tools: each result of the shown answers' calls,
    and each file the tasks' tools serve."""
    found = [c.result for s in samples for c in s.trace or () if c.result]
    seen: set[str | None] = set()
    for task in tasks:
        for tool in task.tools:
            if tool.tree not in seen or tool.tree is None:
                seen.add(tool.tree)
                found += [text for _, text in tool.files]
    return found


def drop_copies(edits: Sequence[Edit], refused: Sequence[EditOutcome],
                shown: Iterable[TaskResult], tasks: Iterable[Task]
                ) -> tuple[list[Edit], list[EditOutcome]]:
    """The edits that copy no run of MIN_RUN words of what the tools answered the `shown`
    results' agents or of a file the `tasks`' tools serve, and `refused` with the others
    added."""
    sources = tool_texts([s for r in shown for s in r.samples], tasks)
    if not sources or not edits:
        return list(edits), list(refused)
    runs: set[tuple[str, ...]] = set()
    budget = MAX_SOURCE_WORDS
    for text in sources:
        words = _words(text)[:budget]
        budget -= len(words)
        runs |= _runs(words)
        if budget <= 0:
            break
    kept: list[Edit] = []
    dropped = list(refused)
    for edit in edits:
        if edit.op != "delete" and _runs(_words(edit.content)) & runs:
            dropped.append(EditOutcome(edit, "rejected", (
                "content copies what a tool answered or a tool's folder holds (8 or more "
                "words in a row): state the rule in its own words, never the data")))
        else:
            kept.append(edit)
    return kept, dropped
