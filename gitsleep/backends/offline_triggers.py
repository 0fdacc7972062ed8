"""The offline simulator's picks and description proposals (a gitsleep addition to the
offline backend's rules; docs/triggers.md states them).

Picking: the skill whose name and description share the most words with the query
(words of three letters or more, lower-cased, a plural's `s` or `ies` made singular,
common words left out); a tie goes to the skill listed first; no shared word picks no skill.

Proposing: keep the description's words that none of the wrongly taken queries uses,
and add the missed queries' words that no sibling's description uses, as one sentence.
It reads only the train queries it is shown, so a description it writes can still fail
val for a real reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_STOP_WORDS = """
a an and any are as at be by can could do does for from get give have help how i if in
into is it its me my need of on one or our please so some that the their them then there
these this to up us use used using want was we what when where which who why will with
would you your new make let just like all about also
"""
STOP = frozenset(_STOP_WORDS.split())


def words(text: str) -> list[str]:
    """Content words, in order, each once."""
    out: list[str] = []
    for raw in _WORD.findall(text.lower()):
        if len(raw) < 3 or raw in STOP:
            continue
        word = raw
        if len(raw) > 4 and raw.endswith("ies"):
            word = raw[:-3] + "y"
        elif len(raw) > 3 and raw.endswith("s") and not raw.endswith("ss"):
            word = raw[:-1]
        if word not in out:
            out.append(word)
    return out


def simulate_pick(pick: Mapping[str, Any]) -> str:
    """The reply to a pick call: `{"skill": name}` or `{"skill": null}`."""
    query = set(words(str(pick.get("query", ""))))
    best: str | None = None
    best_overlap = 0
    for name, description in pick.get("catalog", []):
        overlap = len(query & set(words(f"{name.replace('-', ' ')} {description}")))
        if overlap > best_overlap:
            best, best_overlap = str(name), overlap
    return json.dumps({"skill": best})


def _sentence(keep: Iterable[str]) -> str:
    listed = list(keep)
    return "Use for " + ", ".join(listed) + "." if listed else ""


def simulate_description(propose: Mapping[str, Any]) -> str:
    """The reply to a description proposal: `{"description": "..."}`."""
    taken: set[str] = set()
    for query in propose.get("taken", []):
        taken.update(words(str(query)))
    missed: list[str] = []
    for query in propose.get("missed", []):
        missed += [w for w in words(str(query)) if w not in missed]
    siblings: set[str] = set()
    for _, description in propose.get("siblings", []):
        siblings.update(words(str(description)))
    name = str(propose.get("skill", ""))
    kept = [w for w in words(str(propose.get("description", ""))) if w not in taken]
    added = [w for w in missed if w not in siblings and w not in taken and w not in kept]
    text = f"{name.replace('-', ' ').capitalize()}. {_sentence([*kept, *added])}".strip()
    return json.dumps({"description": text[:1024]})


def simulated_trigger_reply(context: Mapping[str, Any]) -> str | None:
    """The simulator's reply when the call is a pick or a description proposal."""
    if isinstance(context.get("pick"), Mapping):
        return simulate_pick(context["pick"])
    if isinstance(context.get("trigger_propose"), Mapping):
        return simulate_description(context["trigger_propose"])
    return None


__all__: Sequence[str] = ("simulate_description", "simulate_pick", "simulated_trigger_reply",
                          "words")
