"""A plain JSONL of `{prompt, answer, feedback}`: any other tool's history, one exchange a line.

`feedback` is the person's follow-up (a string, or a list of strings): "no, add a Key Risks
section" becomes a rule check exactly as a follow-up message in a transcript does.
Optional fields: `id` (the session id; default `<file>:<line>`), `time` or `timestamp`,
`cwd`, `skill` (the skill the exchange used).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from gitsleep.flows.harvest.sessions import ReadStats, Session, records

FILE_PATTERN = "*.jsonl"  # the files a folder given to harvest is searched for


def read(path: Path, stats: ReadStats, keep_cwd: Callable[[str], bool]) -> Iterator[Session]:
    """One session per line that has a prompt."""
    for number, line in records(path, stats):
        prompt = line.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            stats.skip("line without a prompt")
            continue
        ident = line.get("id")
        session = Session("jsonl", str(ident) if isinstance(ident, (str, int)) and
                          not isinstance(ident, bool) else f"{path.name}:{number}", path)
        if session.place(line.get("cwd"), keep_cwd):
            yield session
            continue
        session.stamp(line.get("time", line.get("timestamp")))
        if isinstance(line.get("skill"), str):
            session.skills_used.add(line["skill"])
        session.add_user(prompt)
        if isinstance(line.get("answer"), str):
            session.add_answer(line["answer"])
        feedback = line.get("feedback")
        for item in feedback if isinstance(feedback, list) else [feedback]:
            if isinstance(item, str) and item.strip():
                session.add_user(item)
        yield session
