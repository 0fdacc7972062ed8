"""Put untrusted text (task ids, model replies, rationales) into Markdown safely.

A pull-request body mixes our layout with text a model or a task file wrote. That text
must not close a code fence, split a table cell, open an HTML comment that hides the
rest of the body, or notify people (`@name`) and cross-link issues (`owner/repo#1`).
Redact first, then escape: escaping can split a secret so a redactor would miss it.
"""

from __future__ import annotations

import re

# Line breaks and other control characters, plus the bidi overrides that can make a
# table cell read differently from what it holds.
_BREAKS = re.compile(r"\r\n|[\x00-\x1f\x7f\x85\u2028\u2029]")
_BIDI = re.compile(r"[\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")
_BACKTICKS = re.compile(r"`+")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
ZWSP = "\u200b"


def one_line(text: str) -> str:
    """The text on one line: every line break or control character becomes a space."""
    return _BIDI.sub("", _BREAKS.sub(" ", text))


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when something was cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def escape(text: str) -> str:
    """Inline prose or a table cell: one line, no HTML, no Markdown syntax, no mentions."""
    text = one_line(text)
    # `<` opens tags and comments and `&name;` an entity; a `>` inside a line is plain text
    # (it quotes only at a line start), so `->` stays readable wherever the body is shown.
    text = _ENTITY.sub("&amp;", text).replace("<", "&lt;")
    text = _SPECIAL.sub(r"\\\1", text)
    text = re.sub(r"^(\s*)>", r"\1\\>", text)
    text = text.replace("@", "@" + ZWSP)  # no @user / @org/team notifications
    return re.sub(r"#(?=\d)", "#" + ZWSP, text)  # no owner/repo#123 cross-references


def longest_backtick_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS.findall(text)), default=0)


def code_span(text: str) -> str:
    """Inline code that shows `text` literally on one line, whatever backticks it holds.

    Not for table cells: GitHub splits cells on `|` even inside code.
    """
    text = one_line(text)
    if not text.strip():
        return escape(text) or "(empty)"
    ticks = "`" * (longest_backtick_run(text) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fence(text: str, info: str = "") -> str:
    """A fenced code block that no line of `text` can close."""
    ticks = "`" * max(3, longest_backtick_run(text) + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{ticks}{one_line(info).replace('`', '')}\n{body}{ticks}"


def table(header: list[str], rows: list[list[str]], align: str = "") -> str:
    """A GFM table from cells that are already escaped. `align`: one of l/r per column."""
    marks = {"l": ":---", "r": "---:"}
    sep = [marks.get(align[i] if i < len(align) else "", "---") for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
