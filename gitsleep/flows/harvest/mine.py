"""The heuristic miner, and the checks every mined candidate must pass to become a task.

The first real user request of a session is the prompt. A follow-up that corrects the
agent ("no, add a Key Risks section", "you forgot the confidence line", "don't mention
pricing", "keep it under 300 characters") says what a good answer holds: it becomes a rule
check when it maps cleanly onto one op (`section_present`, `contains`, `not_contains`,
`max_chars`). Anything vaguer is not guessed at; a session whose corrections give no
check has no judge, and is dropped with that reason.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gitsleep.core.check_ops import ANSWER_OPS, OPS
from gitsleep.flows.harvest.privacy import Masker, has_marker
from gitsleep.flows.harvest.sessions import Session
from gitsleep.inputs.tasks import parse_judge

MIN_PROMPT_CHARS = 15
MAX_PHRASE_WORDS = 6
MAX_PHRASE_CHARS = 60
ID_PREFIX = "h-"

_CLAUSES = re.compile(r"(?<=[.!?;])\s+|\n+|\s+(?:and|but)\s+(?=(?:also\s+)?(?:add|include|"
                      r"put|remove|drop|don't|do not|keep|make)\b)", re.IGNORECASE)
_LEAD = re.compile(r"^(?:(?:no|nope|not quite|nah|hmm+|actually|wait|ok(?:ay)?|also|and|"
                   r"but|then|now|please|pls|can you|could you|would you|you should|"
                   r"you need to|you have to|i said|i asked you to|i asked for)\b[\s,.!:-]*)+",
                   re.IGNORECASE)
_POSITIVE = (
    re.compile(r"^(?:you\s+)?(?:forgot|missed|left out|omitted|skipped|didn't include|"
               r"did not include|didn't add|did not add)(?:\s+to\s+(?:add|include|mention|"
               r"put))?\s+(?P<x>.+)$", re.IGNORECASE),
    re.compile(r"^(?:add|include|mention|put|insert)(?:\s+back)?\s+(?P<x>.+)$", re.IGNORECASE),
    re.compile(r"^(?:it(?:'s| is| was)|the \w+ (?:is|was)|you're|you are)\s+missing\s+"
               r"(?P<x>.+)$", re.IGNORECASE),
    re.compile(r"^(?:there(?:'s| is) no|where(?:'s| is)(?: the)?)\s+(?P<x>.+?)\??$",
               re.IGNORECASE),
    re.compile(r"^(?:it\s+)?(?:needs|should have|should include|must have|must include)\s+"
               r"(?P<x>.+)$", re.IGNORECASE),
)
_NEGATIVE = (
    re.compile(r"^(?:don't|do not|never|stop|please don't)\s+(?:include|mention|use|add|say|"
               r"write|put)\s+(?P<x>.+)$", re.IGNORECASE),
    re.compile(r"^(?:remove|drop|delete|leave out|get rid of|take out)\s+(?P<x>.+)$",
               re.IGNORECASE),
)
_LIMIT = re.compile(r"\b(?:under|below|at most|no more than|less than|shorter than|within|"
                    r"max(?:imum)?(?: of)?)\s+(?P<n>\d{1,6})\s*(?P<unit>characters|chars|"
                    r"words)\b", re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]{1,80})\"|“([^”]{1,80})”|`([^`]{1,80})`|'([^']{2,80})'")
_ARTICLE = re.compile(r"^(?:a|an|the|some|my|our|this|that|one)\s+", re.IGNORECASE)
_TRAILING = re.compile(r"\s+(?:at|to|in|on|into|near|for|from|of)\s+(?:the\s+)?(?:top|end|"
                       r"bottom|start|beginning|it|this|that|answer|brief|reply|response|"
                       r"document|note|notes|output|summary|message|text)\b.*$|\s+(?:please|"
                       r"too|as well|again|this time|like i asked|like before)\b.*$",
                       re.IGNORECASE)
_SECTION = re.compile(r"^(?:(?:section|heading|header)\s+(?:called|named|titled)?\s*"
                      r"(?P<a>.+)|(?P<b>.+?)\s+(?:section|heading|header))$", re.IGNORECASE)
_PART = re.compile(r"\s+(?:line|part|paragraph|field|note|bit|label)$", re.IGNORECASE)
_VAGUE = frozenset({"it", "this", "that", "them", "those", "these", "more", "less", "some",
                    "something", "details", "detail", "context", "stuff", "things", "more detail",
                    "more details", "an example", "examples", "example", "the rest"})


@dataclass
class Candidate:
    """A task proposed from one session, before validation."""

    prompt: str
    judge: Any  # the judge in its JSON form
    session: Session
    origin: str  # rules | llm


def first_request(session: Session) -> str | None:
    """The first user turn that reads as a request (not a greeting or a one-word nudge)."""
    for turn in session.turns:
        if len(turn.user) >= MIN_PROMPT_CHARS and len(turn.user.split()) >= 3:
            return turn.user
    return None


def checks_from(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rule checks a correction maps onto cleanly, and why the other clauses did not map."""
    checks: list[dict[str, Any]] = []
    misses: list[str] = []
    for clause in _CLAUSES.split(text):
        clause = clause.strip().rstrip(".!?;:,").strip()
        if not clause:
            continue
        limit = _LIMIT.search(clause)
        if limit:
            if limit.group("unit").lower() == "words":
                misses.append("a word limit has no rule op (max_chars counts characters)")
            else:
                checks.append({"op": "max_chars", "arg": int(limit.group("n"))})
            continue
        body = _LEAD.sub("", clause).strip()
        for patterns, positive in ((_NEGATIVE, False), (_POSITIVE, True)):
            match = next((m for p in patterns if (m := p.match(body))), None)
            if match:
                check, why = _check_for(match.group("x"), positive)
                if check:
                    checks.append(check)
                else:
                    misses.append(why)
                break
    unique = list({(c["op"], str(c["arg"]).casefold()): c for c in checks}.values())
    return unique, misses


def _check_for(phrase: str, positive: bool) -> tuple[dict[str, Any] | None, str]:
    quoted = _QUOTED.search(phrase)
    section = False
    if quoted:
        text = next(g for g in quoted.groups() if g)
        section = bool(re.search(r"\b(?:section|heading|header)\b", phrase, re.IGNORECASE))
    else:
        text = _TRAILING.sub("", phrase.strip())
        text = _ARTICLE.sub("", text).strip(" \t.,:;!?\"'")
        named = _SECTION.match(text)
        if named:
            section = True
            text = _ARTICLE.sub("", (named.group("a") or named.group("b") or "").strip())
        else:
            text = _PART.sub("", text)
    text = text.strip(" \t.,:;!?")
    if not text or not re.search(r"\w", text) or text.casefold() in _VAGUE:
        return None, "the correction does not name what was wrong"
    if len(text) > MAX_PHRASE_CHARS or len(text.split()) > MAX_PHRASE_WORDS:
        return None, "the correction is not a short phrase a check can test"
    if section and positive:
        return {"op": "section_present", "arg": text}, ""
    return {"op": "contains" if positive else "not_contains", "arg": text}, ""


def heuristic(session: Session) -> tuple[list[Candidate], str]:
    """At most one candidate per session, or the reason there is none."""
    prompt = first_request(session)
    if prompt is None:
        return [], "no user request in the session"
    start = next(i for i, t in enumerate(session.turns) if t.user == prompt)
    checks: list[dict[str, Any]] = []
    misses: list[str] = []
    for turn in session.turns[start + 1:]:
        found, missed = checks_from(turn.user)
        checks.extend(found)
        misses.extend(missed)
    checks = list({(c["op"], str(c["arg"]).casefold()): c for c in checks}.values())
    if not checks:
        why = misses[0] if misses else "no correction that maps onto a rule check"
        return [], why
    return [Candidate(prompt, {"kind": "rule", "checks": checks}, session, "rules")], ""


def task_id(prompt: str) -> str:
    """Stable: the hash of the normalised prompt (case and whitespace do not matter)."""
    normal = " ".join(prompt.casefold().split())
    return ID_PREFIX + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:12]


def prompt_key(prompt: str) -> str:
    return " ".join(prompt.casefold().split())


def to_record(candidate: Candidate, masker: Masker) -> tuple[dict[str, Any] | None, str]:
    """The masked task record, or None and why the candidate cannot be a task."""
    prompt = masker.mask(candidate.prompt)
    judge = _mask_judge(candidate.judge, masker)
    if judge is None:
        return None, "judge is not an object"
    if judge.get("checks") == [] and candidate.judge.get("checks"):
        return None, "a check would need a masked value (secret, path or e-mail)"
    if len(prompt) < MIN_PROMPT_CHARS or len(prompt.split()) < 3:
        return None, "the prompt is not a request (too short)"
    if candidate.origin == "llm" and repeats_a_correction(prompt, candidate.session):
        return None, "the prompt repeats the person's correction (it would give the check away)"
    if isinstance(judge.get("checks"), list):
        kept = _sound_checks(judge["checks"], candidate.session)
        if judge["checks"] and not kept:
            return None, ("no valid judge (its checks ask for one answer verbatim or "
                          "contradict the person's correction)")
        judge["checks"] = kept
    problems: list[str] = []
    parsed = parse_judge(judge, "candidate",
                         lambda severity, _code, message: problems.append(message)
                         if severity == "error" else None)
    if parsed is None:
        reason = problems[0].removeprefix("candidate: ") if problems else "no judge"
        return None, f"no valid judge ({reason})"
    if parsed.kind == "exact":
        return None, "no valid judge (an exact answer from one session is not a check)"
    session = candidate.session
    moment = session.ended or session.started
    record: dict[str, Any] = {
        "id": task_id(prompt),
        "prompt": prompt,
        "judge": judge,
        "review": "pending",
        "source": {
            "tool": session.tool,
            "session": masker.mask(session.session_id),
            "time": moment.strftime("%Y-%m-%dT%H:%M:%SZ") if moment else None,
            "miner": candidate.origin,
        },
    }
    return record, ""


def _follow_ups(session: Session) -> list[str]:
    request = first_request(session)
    turns = [t.user for t in session.turns]
    return turns[turns.index(request) + 1:] if request in turns else turns[1:]


def repeats_a_correction(prompt: str, session: Session) -> bool:
    """Whether the prompt holds a follow-up's words: such a task tells the agent the fix,
    so it cannot show whether the skill document helps."""
    text = " ".join(prompt.casefold().split())
    for follow_up in _follow_ups(session):
        for clause in _CLAUSES.split(follow_up):
            body = " ".join(_LEAD.sub("", clause.strip()).casefold().split()).rstrip(".!?;:,")
            if len(body) >= 12 and body in text:
                return True
    return False


PERSON_ONLY_OPS = frozenset(op for op in OPS if op not in ANSWER_OPS)  # command, workspace ops


def _sound_checks(checks: list[Any], session: Session) -> list[Any]:
    """The checks worth keeping: no `equals` (one session's answer verbatim is not a
    rule), no `not_contains` of what the person asked to add, and only ops that read the
    answer: a `command` runs a program and a workspace check needs a fixture, and neither
    may come from a transcript (only a person commits them)."""
    wanted = {str(c["arg"]).casefold() for turn in _follow_ups(session)
              for c in checks_from(turn)[0] if c["op"] in ("contains", "section_present")}
    return [c for c in checks if not (isinstance(c, dict) and (
        c.get("op") in PERSON_ONLY_OPS
        or c.get("op") == "equals"
        or c.get("op") == "not_contains" and str(c.get("arg", "")).casefold() in wanted))]


def _mask_judge(judge: Any, masker: Masker) -> dict[str, Any] | None:
    """The judge with its text masked; a check whose arg would need a masked value is
    left out (an answer can never contain `[REDACTED]`)."""
    if not isinstance(judge, dict):
        return None
    masked: dict[str, Any] = {}
    for key, value in judge.items():
        if key == "checks" and isinstance(value, list):
            masked[key] = [c for c in (_mask_check(c, masker) for c in value) if c is not None]
        elif isinstance(value, str) and key in ("rubric", "answer"):
            masked[key] = masker.mask(value)
        else:
            masked[key] = value
    return masked


def _mask_check(check: Any, masker: Masker) -> Any:
    if not isinstance(check, dict) or not isinstance(check.get("arg"), str):
        return check
    if has_marker(Masker(masker.redactor, masker.home).mask(check["arg"])):
        return None
    return {**check, "arg": masker.mask(check["arg"])}
