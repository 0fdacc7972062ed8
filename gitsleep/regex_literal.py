"""A literal text that an untrusted regular expression matches, for teaching the optimizer.

A small optimizer copies what it is shown: `(?i)severity\\s*[:=]\\s*[1-4]` gives
`Severity: 1`. `literal_for_regex` walks the parsed pattern and only answers when the
sample it builds really matches (with the judge's own time-bounded search).
"""

from __future__ import annotations

import re
from typing import Any

from gitsleep.patterns import REPEATS, search, sre_c, sre_parse

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")

_MAX_LITERAL = 200
_SPACE_AFTER = ":=,;.)]}!?|>-"  # an optional space after these reads naturally
_FREE_TEXT = "medium"  # what fills a "Label: <anything>" slot


def literal_for_regex(pattern: str) -> str | None:
    """A short literal that `re.search(pattern, literal)` matches, or None.

    Walks the parsed pattern choosing natural characters: a capital at the start under
    (?i) or [Cc], one space for an optional space after punctuation, the first character
    of a class, the lowest digit of a range, "medium" after a "Label:". Lookarounds and
    backreferences give None, and so does any literal that does not verify (with the
    judge's own time-bounded search, so the literal passes the check it was made for).
    """
    try:
        re.compile(pattern)
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    out: list[str] = []
    ignorecase = bool(parsed.state.flags & sre_c.SRE_FLAG_IGNORECASE)
    try:
        if not _walk(list(parsed), out, ignorecase):
            return None
    except RecursionError:
        return None
    literal = "".join(out)
    candidates = []
    if literal.rstrip().endswith(":"):
        candidates.append(literal.rstrip() + " " + _FREE_TEXT)
    candidates += [literal, literal.strip()]
    for candidate in candidates:
        if (
            candidate.strip()
            and len(candidate) <= _MAX_LITERAL
            and not CONTROL_CHARS.search(candidate)
            and "\n" not in candidate
            and search(pattern, candidate) is not None
        ):
            return candidate
    return None


_CATEGORY_SAMPLE = {
    sre_c.CATEGORY_DIGIT: "0",
    sre_c.CATEGORY_NOT_DIGIT: "a",
    sre_c.CATEGORY_SPACE: " ",
    sre_c.CATEGORY_NOT_SPACE: "a",
    sre_c.CATEGORY_WORD: "a",
    sre_c.CATEGORY_NOT_WORD: " ",
}
_CATEGORY_RE = {
    sre_c.CATEGORY_DIGIT: r"\d",
    sre_c.CATEGORY_NOT_DIGIT: r"\D",
    sre_c.CATEGORY_SPACE: r"\s",
    sre_c.CATEGORY_NOT_SPACE: r"\S",
    sre_c.CATEGORY_WORD: r"\w",
    sre_c.CATEGORY_NOT_WORD: r"\W",
}


def _walk(items: list[tuple[Any, Any]], out: list[str], ignorecase: bool) -> bool:
    """Append a literal for `items` to `out`; False when the pattern has no safe literal."""
    for op, av in items:
        if len(out) > _MAX_LITERAL:
            return False
        if op == sre_c.LITERAL:
            ch = chr(av)
            out.append(ch.upper() if ignorecase and not "".join(out).strip() else ch)
        elif op == sre_c.NOT_LITERAL:
            out.append("a" if chr(av) != "a" else "b")
        elif op == sre_c.ANY:
            out.append("x")
        elif op == sre_c.IN:
            picked = _class_char(av, at_start=not "".join(out).strip(), ignorecase=ignorecase)
            if picked is None:
                return False
            out.append(picked)
        elif op == sre_c.AT:
            continue  # zero width; the final check verifies it
        elif op == sre_c.BRANCH:
            for alternative in av[1]:
                trial = list(out)
                if _walk(list(alternative), trial, ignorecase):
                    out[:] = trial
                    break
            else:
                return False
        elif op == sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            local = (ignorecase or bool(add_flags & sre_c.SRE_FLAG_IGNORECASE)) and not (
                del_flags & sre_c.SRE_FLAG_IGNORECASE
            )
            if not _walk(list(sub), out, local):
                return False
        elif op in REPEATS:
            if not _walk_repeat(av, out, ignorecase):
                return False
        elif getattr(sre_c, "ATOMIC_GROUP", None) is not None and op == sre_c.ATOMIC_GROUP:
            if not _walk(list(av), out, ignorecase):
                return False
        else:  # lookarounds, backreferences, conditionals
            return False
    return True


def _walk_repeat(av: tuple[int, int, Any], out: list[str], ignorecase: bool) -> bool:
    low, _high, sub = av
    sub = list(sub)
    if low > _MAX_LITERAL:
        return False
    if _is_space_class(sub):
        if low == 0:
            before = "".join(out)
            if before and before[-1] in _SPACE_AFTER:
                out.append(" ")
        else:
            out.append(" " * low)
        return True
    if low >= 1 and _accepts_free_text(sub) and "".join(out).rstrip().endswith(":"):
        if not "".join(out).endswith(" "):
            out.append(" ")
        out.append(_FREE_TEXT)
        return True
    return all(_walk(sub, out, ignorecase) for _ in range(low))


def _is_space_class(sub: list[tuple[Any, Any]]) -> bool:
    return (
        len(sub) == 1
        and sub[0][0] == sre_c.IN
        and sub[0][1] == [(sre_c.CATEGORY, sre_c.CATEGORY_SPACE)]
    ) or sub == [(sre_c.LITERAL, ord(" "))]


def _accepts_free_text(sub: list[tuple[Any, Any]]) -> bool:
    if len(sub) != 1:
        return False
    op, av = sub[0]
    if op == sre_c.ANY:
        return True
    return op == sre_c.IN and all(_in_class(ch, av) for ch in _FREE_TEXT)


def _in_class(ch: str, items: list[tuple[Any, Any]]) -> bool:
    negate = False
    hit = False
    for op, av in items:
        if op == sre_c.NEGATE:
            negate = True
        elif op == sre_c.LITERAL:
            hit = hit or ch == chr(av)
        elif op == sre_c.RANGE:
            hit = hit or av[0] <= ord(ch) <= av[1]
        elif op == sre_c.CATEGORY:
            expr = _CATEGORY_RE.get(av)
            hit = hit or bool(expr and re.fullmatch(expr, ch))
    return hit != negate


def _class_char(items: list[tuple[Any, Any]], *, at_start: bool, ignorecase: bool) -> str | None:
    """A natural member of a character class."""
    if items and items[0][0] == sre_c.NEGATE:
        for ch in ("a", "x", "0", " ", "-", "."):
            if _in_class(ch, items):
                return ch
        return None
    options: list[str] = []
    for op, av in items:
        if op == sre_c.LITERAL:
            options.append(chr(av))
        elif op == sre_c.RANGE:
            options.append(chr(av[0]))
        elif op == sre_c.CATEGORY and av in _CATEGORY_SAMPLE:
            options.append(_CATEGORY_SAMPLE[av])
    if not options:
        return None
    if at_start:
        capitals = [ch for ch in options if ch.isupper()]
        if capitals:
            return capitals[0]
        if ignorecase and options[0].isalpha():
            return options[0].upper()
    return options[0]
