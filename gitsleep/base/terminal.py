"""Text for a terminal: untrusted text shows its control characters, it never runs them.

An agent's output, a model's reply, a task file or a trailer someone pushed reach the
screen through gitsleep. Printed raw, a control character in them is an instruction to
the terminal, not text: ESC starts CSI (clear the screen, move the cursor, recolour),
OSC 52 (write the clipboard), OSC 8 (a link that reads as something else) and DCS
(make the terminal answer on its input); the 8-bit C1 controls do the same without ESC;
BEL rings; backspace and carriage return overwrite what was printed. Bidi overrides and
line separators make a line read differently from what it holds.

`visible` writes each of them as its Python escape (`\\x1b`, `\\u202e`), so the user
sees what the text held. Tabs and newlines stay (blocks keep their shape); CRLF is a
line end. Escape after redacting: the redactor reads through invisible characters.
"""

from __future__ import annotations

import re

from gitsleep.base.hostile_text import INVISIBLE

# Kept: tab and newline (layout), the zero-width joiner and the emoji/text variation
# selectors (they belong to the emoji they follow and drive nothing).
_KEPT = frozenset("\t\n\u200d\ufe0e\ufe0f")


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if char in _KEPT:
        return char
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 \
        else f"\\U{code:08x}"


_UNSAFE = re.compile(f"\r|{INVISIBLE.pattern}")


def visible(text: str) -> str:
    """`text` with every control, format and invisible character escaped, for a terminal."""
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))
