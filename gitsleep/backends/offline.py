"""The offline backend: a deterministic simulator of the agent, optimizer and judge.

It exists for `gitsleep demo`, the test suite and trying gitsleep without a key. It goes
through exactly the same code path as a real backend; only `complete` is simulated, and
every result it produces says so (`simulated = True`, model name `offline`). The rules
it follows are in `shared/spec/offline-backend.md` and the README.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from gitsleep.backends.base import Backend, ModelCall
from gitsleep.models import Answer
from gitsleep.numbers import whole_number
from gitsleep.regex_literal import literal_for_regex

_Q = r"[\"'](.+?)[\"']"
DIRECTIVES = [
    ("include", re.compile(rf"\balways include {_Q}", re.IGNORECASE)),
    ("start", re.compile(rf"\b(?:start|begin) with {_Q}", re.IGNORECASE)),
    ("end", re.compile(rf"\bend with {_Q}", re.IGNORECASE)),
    ("never", re.compile(rf"\bnever (?:say|include) {_Q}", re.IGNORECASE)),
    ("limit", re.compile(r"\bkeep answers under (\d+) characters\b", re.IGNORECASE)),
    ("heading", re.compile(r"\buse the heading [\"'](#+ .+?)[\"']", re.IGNORECASE)),
]


@dataclass
class _Plan:
    """The answer's shape after reading every directive in document order."""

    start: tuple[int, str] | None = None
    end: tuple[int, str] | None = None
    headings: list[tuple[int, str]] = field(default_factory=list)
    includes: list[tuple[int, str]] = field(default_factory=list)
    nevers: list[tuple[int, str]] = field(default_factory=list)
    limit: int | None = None


def read_directives(documents: list[str]) -> _Plan:
    plan = _Plan()
    order = 0
    for doc in documents:
        for line in doc.splitlines():
            for kind, pattern in DIRECTIVES:
                m = pattern.search(line)
                if not m:
                    continue
                order += 1
                value = m.group(1)
                if kind == "include":
                    plan.includes.append((order, value))
                elif kind == "start":
                    plan.start = (order, value)
                elif kind == "end":
                    plan.end = (order, value)
                elif kind == "never":
                    plan.nevers.append((order, value))
                elif kind == "limit":
                    plan.limit = int(min(whole_number(value), sys.maxsize))
                else:
                    plan.headings.append((order, value))
                break
    return plan


def generic_body(prompt: str) -> list[str]:
    """A plain answer restating the prompt: long enough to fail a tight `max_chars`."""
    topic = " ".join(prompt.split())
    return [
        f"Here is a response to the request: {topic}",
        "I considered the request carefully and addressed each part of it in turn.",
        "The points above cover the main context, the open questions and sensible next steps.",
    ]


def simulate_answer(documents: list[str], prompt: str) -> str:
    """Obey the documents' directives literally; later directives win on conflict."""
    plan = read_directives(documents)
    directive: list[tuple[int, str]] = []
    if plan.start:
        directive.append(plan.start)
    directive += plan.headings
    body = [(0, line) for line in generic_body(prompt)]
    tail = list(plan.includes) + ([plan.end] if plan.end else [])

    def scrub(order: int, line: str) -> str:
        for never_order, phrase in plan.nevers:
            if never_order > order:  # a directive after this line's own wins
                line = re.sub(re.escape(phrase), "", line, flags=re.IGNORECASE)
        return line

    head = [scrub(o, t) for o, t in directive]
    middle = [scrub(o, t) for o, t in body]
    end = [scrub(o, t) for o, t in tail]
    if plan.limit is None:
        return "\n".join(head + middle + end)
    kept_middle: list[str] = []
    for line in middle:  # directive lines are kept first; body lines fill what is left
        if len("\n".join(head + kept_middle + [line] + end)) <= plan.limit:
            kept_middle.append(line)
    return "\n".join(head + kept_middle + end)[: plan.limit]


def _include_a_match(pattern: str) -> str | None:
    """`Always include "<a literal the pattern matches>"`; no edit when the pattern leaves
    the value to the task (`[1-4]`, `(approve|reject)`, `\\d+`): the simulated optimizer
    cannot say how to choose, and one constant is the rule issue 25 forbids."""
    literal = literal_for_regex(pattern)
    return f'Always include "{literal}"' if literal else None


# The spec's table "failed check -> proposed directive", one row per op that gets an edit
# (min_chars, no_refusal and equals get none). Its words are the simulator's own: they are
# the directives `simulate_answer` obeys, not `check_text.describe_check`'s.
PROPOSED: dict[str, Callable[[str], str | None]] = {
    "contains": lambda text: f'Always include "{text}"',
    "section_present": lambda text: f'Use the heading "## {text}"',
    "section_contains": lambda text: f'Use the heading "## {text}"',
    "not_contains": lambda text: f'Never say "{text}"',
    "max_chars": lambda text: f"Keep answers under {text} characters",
    "regex": _include_a_match,
}


def directive_for(op: str, arg: object) -> str | None:
    """The directive the simulated optimizer proposes for one failed check."""
    propose = PROPOSED.get(op)
    return None if propose is None else propose("" if arg is None else str(arg))


def simulate_proposal(context: dict) -> str:
    """Edits that fix the failed checks shown, most frequent first, never a rejected one."""
    counts: Counter[tuple[str, str]] = Counter()
    first_seen: dict[tuple[str, str], int] = {}
    for failure in context.get("failures", []):
        for op, arg in failure.get("failed", []):
            key = (op, "" if arg is None else str(arg))
            counts[key] += 1
            first_seen.setdefault(key, len(first_seen))
    rejected = {" ".join(r.casefold().split()) for r in context.get("rejected", [])}
    existing = {" ".join(r.casefold().split()) for r in context.get("rules", [])}
    edits = []
    for (op, arg), n in sorted(counts.items(), key=lambda kv: (-kv[1], first_seen[kv[0]])):
        directive = directive_for(op, arg)
        if directive is None:
            continue
        norm = " ".join(directive.casefold().split())
        if norm in rejected or norm in existing:
            continue
        edits.append(
            {
                "op": "add",
                "content": directive,
                "rationale": f"{n} failing train task(s) need: {op} {arg}",
            }
        )
        if len(edits) >= int(context.get("budget", 4)):
            break
    return json.dumps({"edits": edits})


def simulate_judge(context: dict) -> str:
    """A stand-in grader: the share of the rubric's quoted phrases present in the answer."""
    rubric = str(context.get("rubric", ""))
    answer = str(context.get("answer", "")).casefold()
    phrases = re.findall(r"[\"']([^\"']+)[\"']", rubric)
    if not phrases:
        return json.dumps({"score": 0.5, "reason": "simulated judge: no quoted phrase"})
    found = sum(1 for p in phrases if p.casefold() in answer)
    return json.dumps(
        {"score": found / len(phrases), "reason": f"simulated judge: {found}/{len(phrases)}"}
    )


class OfflineBackend(Backend):
    """Deterministic simulator. Same inputs, same outputs; no network, no key."""

    name = "offline"
    simulated = True

    def complete(self, call: ModelCall) -> Answer:
        context = dict(call.context or {})
        if call.purpose == "answer":
            documents = context.get("documents")
            if documents is None:
                documents = [c for role, c in call.messages if role == "system"]
            prompt = "\n".join(c for role, c in call.messages if role == "user")
            text = simulate_answer(list(documents), prompt)
        elif call.purpose == "propose":
            text = simulate_proposal(context)
        elif call.purpose == "judge":
            text = simulate_judge(context)
        else:
            return Answer(text=None, error=f"offline backend: unknown call purpose {call.purpose}")
        prompt_chars = sum(len(c) for _, c in call.messages)
        return Answer(text=text, prompt_tokens=prompt_chars // 4, completion_tokens=len(text) // 4)
