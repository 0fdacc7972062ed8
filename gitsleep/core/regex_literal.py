"""What an untrusted regular expression asks of an answer, for teaching the optimizer.

A small optimizer copies what it is shown: shown `Severity: 1` for
`(?i)severity\\s*[:=]\\s*[1-4]`, it wrote `Severity: 1` into a rule for every answer,
although the right severity depends on the incident. So where the pattern
leaves a choice (a class or range such as `[1-4]`, an alternation such as
`(approve|reject)`, a `\\d+`), `typed_form` keeps a typed placeholder the agent fills
(`Severity: <1-4>`, `Verdict: <approve|reject>`, `Count: <number>`), and
`literal_for_regex` gives no literal at all: one constant would pass only the tasks that
happen to want it. Both verify what they build with the judge's own time-bounded search
(a typed form with each placeholder filled by one of its options).
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable
from typing import Any

from gitsleep.core.patterns import REPEATS, search, sre_c, sre_parse

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# A typed placeholder: `<1-4>`, `<approve|reject>`, `<number>`, `<text>`.
TYPED_SLOT = re.compile(r"<(\d+-\d+|[^<>|\s][^<>|]{0,40}(?:\|[^<>|]{1,40}){1,7}|number|text)>")

_MAX_LITERAL = 200
_MAX_OPTIONS = 10  # an alternation of more options than this is free text, not a choice
_SPACE_AFTER = ":=,;.)]}!?|>-"  # an optional space after these reads naturally
_FREE_TEXT = "medium"  # what fills a "Label:" the pattern asks no value for
_SLOT_SAMPLE = {"number": "1", "text": "x"}
_WORD = "add"  # what fills a lone `\\S` or `\\w` after a space (`feat: \\S`: `feat: add`)


class _Out:
    """The text being built twice: as shown (typed placeholders) and as a sample that the
    pattern must match (each placeholder filled with its first option)."""

    def __init__(self, typed: bool, natural: bool = True) -> None:
        self.typed = typed
        self.natural = natural  # a separator where the pattern allows one, a word for `\\S`
        self.shown: list[str] = []
        self.sample: list[str] = []
        self.choices = 0  # places where the pattern leaves the value open

    def add(self, text: str) -> None:
        self.shown.append(text)
        self.sample.append(text)

    def slot(self, shown: str, sample: str) -> bool:
        """A choice: a typed placeholder in typed mode; in literal mode, no literal."""
        self.choices += 1
        if not self.typed:
            return False
        self.shown.append(f"<{shown}>")
        self.sample.append(sample)
        return True

    def text(self) -> str:
        return "".join(self.sample)

    def take_word(self) -> str:
        """Remove and return the letters and digits the text ends with (outside any slot)."""
        taken = ""
        while self.shown and self.shown[-1] == self.sample[-1] and len(self.shown[-1]) == 1 \
                and self.shown[-1].isalnum():
            taken = self.shown.pop() + taken
            self.sample.pop()
        return taken

    def __len__(self) -> int:
        return len(self.text())

    def copy(self) -> _Out:
        other = _Out(self.typed, self.natural)
        other.shown, other.sample, other.choices = list(self.shown), list(self.sample), self.choices
        return other


def literal_for_regex(pattern: str) -> str | None:
    """A short literal that `re.search(pattern, literal)` matches, or None.

    None as well when the pattern leaves a value open (a class, a range, an alternation,
    `\\d+`): no one literal is right for every task then (see `typed_form`). Lookarounds
    and backreferences give None, and so does any literal that does not verify.
    """
    built = _build(pattern, typed=False)
    return None if built is None else built[0]


def typed_form(pattern: str) -> str | None:
    """The line the pattern wants with a typed placeholder where it leaves a choice
    (`Severity: <1-4>`), the plain literal where it leaves none; None when neither can be
    derived and verified."""
    built = _build(pattern, typed=True)
    return None if built is None else built[0]


def has_choice(pattern: str) -> bool:
    """Whether the pattern leaves the answer a choice of values (a typed placeholder)."""
    built = _build(pattern, typed=True)
    return built is not None and built[1] > 0


def sample_fill(text: str) -> str:
    """`text` with each typed placeholder filled by its first option, for checking that a
    line of that shape serves a check; never written anywhere."""

    def first(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner in _SLOT_SAMPLE:
            return _SLOT_SAMPLE[inner]
        if re.fullmatch(r"\d+-\d+", inner):
            return inner.split("-")[0]
        return inner.split("|")[0].strip()

    return TYPED_SLOT.sub(first, text)


def _options(inner: str) -> list[str]:
    if inner in _SLOT_SAMPLE:
        return [_SLOT_SAMPLE[inner]]
    if re.fullmatch(r"\d+-\d+", inner):
        low, high = (int(x) for x in inner.split("-"))
        return [str(n) for n in range(low, min(high, low + _MAX_OPTIONS) + 1)]
    return [o.strip() for o in inner.split("|")]


def fills(text: str) -> list[str]:
    """`text` once per option of its first typed placeholder (the others filled with their
    first option): a line of this shape serves a check when any of these passes it."""
    match = TYPED_SLOT.search(text)
    if match is None:
        return [text]
    rest = sample_fill(text[match.end():])
    return [sample_fill(text[: match.start()]) + option + rest
            for option in _options(match.group(1))]


def merge_typed(first: str, second: str) -> str | None:
    """One typed line for two that differ only in their placeholder's options
    (`Severity: <1|2>` and `Severity: <3|4>` give `Severity: <1-4>`: one label, whose value
    differs per task), or None when they differ otherwise."""
    a, b = TYPED_SLOT.search(first), TYPED_SLOT.search(second)
    if a is None or b is None or TYPED_SLOT.search(first, a.end()) or \
            TYPED_SLOT.search(second, b.end()):
        return None
    if first[: a.start()] != second[: b.start()] or first[a.end() :] != second[b.end() :]:
        return None
    options = list(dict.fromkeys(_options(a.group(1)) + _options(b.group(1))))
    if all(len(o) == 1 and o.isdigit() for o in options):
        options.sort()
    return f"{first[: a.start()]}<{_slot_name(options)}>{first[a.end() :]}"


@functools.lru_cache(maxsize=4096)  # pure; hygiene and honesty ask per line and per check
def _build(pattern: str, *, typed: bool) -> tuple[str, int] | None:
    try:
        re.compile(pattern)
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    ignorecase = bool(parsed.state.flags & sre_c.SRE_FLAG_IGNORECASE)
    for natural in (True, False):  # as a person writes it; else the shortest match
        out = _Out(typed, natural)
        try:
            if not _walk(list(parsed), out, ignorecase):
                return None
        except RecursionError:
            return None
        found = _verified(pattern, out)
        if found is not None:
            return found
    return None


def _verified(pattern: str, out: _Out) -> tuple[str, int] | None:
    """The text built (as shown, with its count of choices), when the pattern matches it."""
    shown, sample = "".join(out.shown), "".join(out.sample)
    candidates = []
    if sample.rstrip().endswith(":"):
        # A label the pattern asks no value for: the value is the agent's to give. Shown as a
        # typed placeholder (a template or example never fixes it to "medium"); the
        # plain literal keeps "medium", which the offline simulator's spec fixes.
        value = "<text>" if out.typed else _FREE_TEXT
        candidates.append((shown.rstrip() + " " + value, sample.rstrip() + " " + _FREE_TEXT))
    candidates += [(shown, sample), (shown.strip(), sample.strip())]
    for shown_text, sample_text in candidates:
        if (
            sample_text.strip()
            and len(shown_text) <= _MAX_LITERAL
            and not CONTROL_CHARS.search(shown_text)
            and "\n" not in shown_text
            and search(pattern, sample_text) is not None
        ):
            return shown_text, out.choices
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


def _walk(items: list[tuple[Any, Any]], out: _Out, ignorecase: bool) -> bool:
    """Append a text for `items` to `out`; False when the pattern has no safe one."""
    for at, (op, av) in enumerate(items):
        if len(out) > _MAX_LITERAL:
            return False
        if op == sre_c.LITERAL:
            ch = chr(av)
            out.add(ch.upper() if ignorecase and not out.text().strip() else ch)
        elif op == sre_c.NOT_LITERAL:
            out.add("a" if chr(av) != "a" else "b")
        elif op == sre_c.ANY:
            out.add("x")
        elif op == sre_c.IN:
            if _is_digits([(op, av)]):  # `\d`: a digit the task decides
                if not out.slot("0-9", "0"):
                    return False
                continue
            options = _choice([[(op, av)]], ignorecase)
            if options is not None:
                if not out.slot(_slot_name(options), options[0]):
                    return False
                continue
            if out.natural and out.text().endswith(" ") and _accepts_word(av):
                out.add(_WORD)  # `feat: \\S` wants a word there: `feat: add`, never `feat: a`
                continue
            picked = _class_char(av, at_start=not out.text().strip(), ignorecase=ignorecase)
            if picked is None:
                return False
            out.add(picked)
        elif op == sre_c.AT:
            continue  # zero width; the final check verifies it
        elif op == sre_c.BRANCH:
            options = _choice([list(alt) for alt in av[1]], ignorecase)
            if options is not None:
                # the parser factors a common prefix out: `(accept|approve)` is `a` and
                # `(ccept|pprove)`; the word before the choice goes back into each option
                prefix = out.take_word()
                options = [prefix + o for o in options]
                if not out.slot(_slot_name(options), options[0]):
                    return False
                continue
            for alternative in av[1]:
                trial = out.copy()
                if _walk(list(alternative), trial, ignorecase):
                    out.shown, out.sample, out.choices = trial.shown, trial.sample, trial.choices
                    break
            else:
                return False
        elif op == sre_c.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            local = (ignorecase or bool(add_flags & sre_c.SRE_FLAG_IGNORECASE)) and not (
                del_flags & sre_c.SRE_FLAG_IGNORECASE
            )
            options = _choice([list(sub)], local)
            if options is not None:  # `(approve|reject)`, its common prefix factored out
                if not out.slot(_slot_name(options), options[0]):
                    return False
                continue
            if not _walk(list(sub), out, local):
                return False
        elif op in REPEATS:
            if not _walk_repeat(av, out, ignorecase, items[at + 1:]):
                return False
        elif getattr(sre_c, "ATOMIC_GROUP", None) is not None and op == sre_c.ATOMIC_GROUP:
            if not _walk(list(av), out, ignorecase):
                return False
        else:  # lookarounds, backreferences, conditionals
            return False
    return True


def _choice(alternatives: list[list[tuple[Any, Any]]], _ignorecase: bool) -> list[str] | None:
    """The values a piece of pattern accepts when it offers a real choice of values (two
    or more that differ beyond case and hold a letter or digit); None otherwise."""
    options: list[str] = []
    for alternative in alternatives:
        expanded = _expand(alternative)
        if expanded is None:
            return None
        options += expanded
    distinct: dict[str, str] = {}
    for option in options:
        if any(ch.isalnum() for ch in option):
            distinct.setdefault(option.casefold(), option)
    if len(distinct) < 2 or len(distinct) > _MAX_OPTIONS:
        return None
    return list(distinct.values())


def _expand(items: list[tuple[Any, Any]]) -> list[str] | None:
    """Every text a short, finite piece of pattern matches (at most a few), or None."""
    texts = [""]
    for op, av in items:
        if op == sre_c.LITERAL:
            parts: list[str] | None = [chr(av)]
        elif op == sre_c.IN:
            parts = _class_members(av)
        elif op == sre_c.BRANCH:
            parts = []
            for alternative in av[1]:
                sub = _expand(list(alternative))
                if sub is None:
                    return None
                parts += sub
        elif op == sre_c.SUBPATTERN:
            parts = _expand(list(av[3]))
        elif op == sre_c.AT:
            continue
        else:
            return None
        if parts is None:
            return None
        texts = [t + p for t in texts for p in parts]
        if len(texts) > _MAX_OPTIONS * 4:
            return None
    return texts


def _class_members(items: list[tuple[Any, Any]]) -> list[str] | None:
    """The characters of a small class, in order; None for negated, large or category ones."""
    members: list[str] = []
    for op, av in items:
        if op == sre_c.LITERAL:
            members.append(chr(av))
        elif op == sre_c.RANGE and av[1] - av[0] < 10:
            members += [chr(c) for c in range(av[0], av[1] + 1)]
        else:
            return None
    return members


def _slot_name(options: list[str]) -> str:
    """`1-4` for a run of single digits, `approve|reject` otherwise."""
    if len(options) >= 3 and all(len(o) == 1 and o.isdigit() for o in options):
        digits = [int(o) for o in options]
        if digits == list(range(digits[0], digits[0] + len(digits))):
            return f"{options[0]}-{options[-1]}"
    return "|".join(options)


def _walk_repeat(av: tuple[int, int, Any], out: _Out, ignorecase: bool,
                 after: list[tuple[Any, Any]]) -> bool:
    low, _high, sub = av
    sub = list(sub)
    if low > _MAX_LITERAL:
        return False
    separator = _separator(sub, out, after) if low <= 1 else ""
    if separator:
        out.add(separator)
        return True
    if _is_space_class(sub):
        if low == 0:
            before = out.text()
            if before and before[-1] in _SPACE_AFTER:
                out.add(" ")
        else:
            out.add(" " * low)
        return True
    if low >= 1 and _is_digits(sub):  # `\d+`: a number the task decides
        return out.slot("number", "1" * low)
    if low >= 1 and _accepts_free_text(sub) and out.text().rstrip().endswith(":"):
        if not out.text().endswith(" "):
            out.add(" ")
        return out.slot("text", _FREE_TEXT)
    return all(_walk(sub, out, ignorecase) for _ in range(low))


def _separator(sub: list[tuple[Any, Any]], out: _Out, after: list[tuple[Any, Any]]) -> str:
    """What a person writes between two words where the pattern allows a separator
    (`verdict\\W*reject`: `Verdict: reject`, never `Verdictreject`): `: ` when the piece
    takes a colon (a space after it when it takes one too), ` ` when it takes only a
    space; '' when the text does not end in a word, the pattern goes on with something
    other than a word (`severity\\W*[:=]` keeps its own colon) or it is not the natural form."""
    if not out.natural or not out.text()[-1:].isalnum() or not _starts_a_word(after):
        return ""
    takes = _single_class(sub)
    if takes is None:
        return ""
    if takes(":"):
        return ": " if takes(" ") and not _takes_space_next(after) else ":"
    return " " if takes(" ") and not _takes_space_next(after) else ""


def _single_class(sub: list[tuple[Any, Any]]) -> Callable[[str], bool] | None:
    """A test of one character for a piece that is one literal or one class, else None."""
    if len(sub) != 1:
        return None
    op, av = sub[0]
    if op == sre_c.LITERAL:
        return lambda ch: ch == chr(av)
    if op == sre_c.IN:
        return lambda ch: _in_class(ch, av)
    return None


def _takes_space_next(after: list[tuple[Any, Any]]) -> bool:
    """Whether the pattern's next piece is an optional space (`:?\\s*`): it gives the space."""
    return bool(after) and after[0][0] in REPEATS and after[0][1][0] == 0 \
        and _is_space_class(list(after[0][1][2]))


def _starts_a_word(items: list[tuple[Any, Any]]) -> bool:
    """Whether what the pattern asks next begins with a letter or digit (optional spaces
    and a colon of its own skipped: `:?\\s*reject` still goes on with a word)."""
    for op, av in items:
        if op == sre_c.AT:
            continue
        if op in REPEATS and av[0] == 0 and _single_class(list(av[2])) is not None:
            continue  # an optional separator of its own: look past it
        if op == sre_c.LITERAL:
            return chr(av).isalnum()
        if op == sre_c.IN:
            return any(_in_class(ch, av) for ch in string.ascii_letters + string.digits)
        if op in (sre_c.BRANCH,):
            return all(_starts_a_word(list(alt)) for alt in av[1])
        if op == sre_c.SUBPATTERN:
            return _starts_a_word(list(av[3]))
        if op in REPEATS:
            return _starts_a_word(list(av[2]))
        return False
    return False


def _accepts_word(items: list[tuple[Any, Any]]) -> bool:
    """Whether a character class takes every letter of the word put where it wants one."""
    return all(_in_class(ch, items) for ch in _WORD)


def _is_digits(sub: list[tuple[Any, Any]]) -> bool:
    if len(sub) != 1 or sub[0][0] != sre_c.IN:
        return False
    return all(_in_class(str(d), sub[0][1]) for d in range(10)) and not _in_class("a", sub[0][1])


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
