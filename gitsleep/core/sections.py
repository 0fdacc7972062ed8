"""Read an answer's sections as CommonMark does (markdown-it-py), for the section checks.

A `# line` inside a fenced or indented code block is code, not a heading; a setext heading
(a line underlined with `===` or `---`) is one; a heading's inline markup (`## **Risks**`)
is not part of its text. Bold leads (`**Name**`) and `Name:` labels count at the start of
a paragraph line, in lists and quotes too.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark")  # the section ops read answers as GitHub would
_BOLD = re.compile(r"^\*\*(.+?)\*\*")


@lru_cache(maxsize=1024)
def _outline(answer: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(heading texts, prose lines) of an answer, casefolded. Prose lines are the source
    lines of paragraphs (in lists and quotes too), where bold leads and labels live."""
    headings: list[str] = []
    lines: list[str] = []
    tokens = _MARKDOWN.parse(answer)
    for index, token in enumerate(tokens):
        if token.type != "inline":
            continue
        if index and tokens[index - 1].type == "heading_open":
            text = "".join(c.content for c in token.children or ()
                           if c.type in ("text", "code_inline"))
            headings.append(text.strip().casefold())
        else:
            lines.extend(line.strip().casefold() for line in token.content.splitlines())
    return tuple(headings), tuple(lines)


def headings(answer: str) -> tuple[str, ...]:
    """The answer's heading texts, casefolded."""
    return _outline(answer)[0]


def section_present(answer: str, name: str) -> bool:
    """A heading that ends with `name`, a bold lead that does, or a `name:` label."""
    want = name.strip().casefold()
    found, lines = _outline(answer)
    if any(h.endswith(want) for h in found):
        return True
    for s in lines:
        bold = _BOLD.match(s)
        if bold and bold.group(1).strip().rstrip(":").strip().endswith(want):
            return True
        if s.startswith(want + ":"):
            return True
    return False
