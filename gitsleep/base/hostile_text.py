"""Text that reads one way and does another: invisible characters and script links.

An edit is written into a document that people read and agents follow. Two kinds of
text in it are never a rule:

* Invisible characters: Unicode format characters (category Cf: zero-width spaces and
  joiners, bidi marks and overrides, the soft hyphen, word joiners, the BOM, tag
  characters), control characters, and the characters that render as nothing (the
  combining grapheme joiner, variation selectors, Hangul fillers, Mongolian and Khmer
  invisibles). They make a rule read differently from what it holds, and they split a
  secret so a scanner misses it while a reader (or a later cleaning step) joins it again.
  The redactor scans text with them removed (`without_invisible`).
* Links that run code: `javascript:`, `vbscript:` and `data:` URLs, in a Markdown link,
  a reference definition, an autolink, an HTML attribute or as a bare URL, whatever
  their case, with tabs or line breaks inside the scheme, HTML entities (`&#58;`,
  `&colon;`) or backslash escapes.

Hygiene applies both to every edit that writes text: a rule (`add`, `replace`) and an
answer template (`template`), which agents copy into their answers.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Category Cf as of Unicode 15.1 (a test checks it against this Python's unicodedata),
# controls other than tab, newline and carriage return, the line and paragraph
# separators, and the characters that render as nothing.
_CF = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    "\U000e0020-\U000e007f"
)
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029"
_BLANK = "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef"
INVISIBLE = re.compile(f"[{_CF}{_CONTROLS}{_BLANK}]")
# A variation selector right after a symbol picks its emoji or text form ("⚠️"): allowed.
_EMOJI_FORM = "\ufe0e\ufe0f"

# Schemes that run code or smuggle a document when a link is followed.
UNSAFE_SCHEMES = ("javascript", "vbscript", "data")
# Tabs and line breaks inside a scheme are dropped by browsers ("java&Tab;script:").
_SCHEME_NAME = "(?P<scheme>" + "|".join("[\t\r\n]*".join(s) for s in UNSAFE_SCHEMES) + ")"
_SCHEME = _SCHEME_NAME + r"[\t\r\n ]*:"
# Where a URL starts: a Markdown link or image `](`, a reference definition `[x]:`, an
# autolink `<`, an HTML attribute `href=`. Then spaces, `<` or quotes may come before it.
# Each part is matched on its own (see `_link_scheme`), so the search is linear.
_LINK_START = re.compile(
    r"\]\s*\(|^[ \t]*(?:[-*+][ \t]+)?\[[^\]\n]*\]\s*:|<|(?<![\w:-])[\w:-]+\s*=", re.MULTILINE
)
_URL_LEAD = re.compile(r"[\s<\"'`]*")
_SCHEME_AT = re.compile(_SCHEME, re.IGNORECASE)
# A bare URL: the scheme where a word starts, its colon followed by the URL itself (so
# prose such as "JavaScript: prefer const", `Always include "Data:"` or "Data: cite the
# source" stays a rule).
_BARE = re.compile(r"(?<![\w.+\-/?#&%~=])" + _SCHEME_NAME + r":(?=[\w/%(,;])", re.IGNORECASE)
_BACKSLASH_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def without_invisible(text: str) -> tuple[str, list[int]]:
    """`text` with every invisible character removed, and for each character kept its
    index in `text` (so a span found in the result maps back onto the original)."""
    kept: list[int] = []
    start = 0
    for match in INVISIBLE.finditer(text):
        kept.extend(range(start, match.start()))
        start = match.end()
    kept.extend(range(start, len(text)))
    return (text if len(kept) == len(text) else INVISIBLE.sub("", text)), kept


def _allowed(text: str, at: int) -> bool:
    """A variation selector that gives the symbol before it its emoji or text form."""
    return (text[at] in _EMOJI_FORM and at > 0
            and unicodedata.category(text[at - 1]) == "So")


def invisible_problem(text: str) -> str:
    """Why `text` cannot be a rule because of an invisible character, or ''."""
    for match in INVISIBLE.finditer(text):
        if _allowed(text, match.start()):
            continue
        char = match.group(0)
        name = unicodedata.name(char, "") or unicodedata.category(char)
        return (f"content contains an invisible character (U+{ord(char):04X} {name}); "
                "invisible text can hide what a rule says or split a secret")
    return ""


def _decoded(text: str) -> str:
    """The text as a renderer reads a URL in it: entities decoded (twice-encoded too),
    backslash escapes undone, invisible characters gone, full-width letters folded."""
    for _ in range(3):
        decoded = _BACKSLASH_ESCAPE.sub(r"\1", html.unescape(text))
        if decoded == text:
            break
        text = decoded
    text = without_invisible(text)[0]
    return unicodedata.normalize("NFKC", text)


def unsafe_link_problem(text: str) -> str:
    """Why `text` cannot be a rule because it links to a script or data URL, or ''."""
    decoded = _decoded(text)
    scheme = _link_scheme(decoded)
    if not scheme:
        bare = _BARE.search(decoded)
        scheme = bare.group("scheme") if bare else ""
    if not scheme:
        return ""
    scheme = re.sub(r"\s", "", scheme).lower()
    return (f"content contains a {scheme}: link; links that run code or embed data "
            "are never written into a document")


def _link_scheme(text: str) -> str:
    """The unsafe scheme of the first link target in `text`, or ''."""
    skipped_to = -1
    for start in _LINK_START.finditer(text):
        if start.end() <= skipped_to:
            continue  # inside a lead already skipped: it ends where that one did
        skipped_to = _URL_LEAD.match(text, start.end()).end()  # type: ignore[union-attr]
        scheme = _SCHEME_AT.match(text, skipped_to)
        if scheme:
            return scheme.group("scheme")
    return ""
