"""Masking before anything harvested is written, committed or sent to a model.

Secrets go through the same `Redactor` as every other output of gitsleep; on top of it,
transcripts hold what task files should not: absolute home paths (they name the person
and their machine) and e-mail addresses. Each kind is counted, so the output can say
how much was masked.
"""

from __future__ import annotations

import re
from collections import Counter

from gitsleep.base.redact import MARKER_PATTERN, Redactor

EMAIL_MARKER = "[REDACTED:email]"
_MARKER = re.compile(MARKER_PATTERN)
_EMAIL = re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}"
                    r"(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b")
# A home folder, the part up to and with the user name: /home/<user>, /Users/<user>,
# /root, C:\Users\<user> (any case, either slash, JSON-escaped backslashes too), the
# Windows home seen from WSL (/mnt/c/Users/<user>), a WSL home seen from Windows
# (\\wsl.localhost\<distro>\home\<user>, \\wsl$\...), ostree systems (/var/home/<user>)
# and macOS's data volume (/System/Volumes/Data/Users/<user>).
_SEP = r"[\\/]+"
_HOME = re.compile(
    r"(?<![\w~.\\/-])(?i:"
    rf"(?:/mnt/[a-z]|[a-z]:|/System/Volumes/Data)?{_SEP}Users{_SEP}"
    rf"|(?:/var)?/home/"
    rf"|[\\/]{{2,}}wsl(?:\.localhost|\$){_SEP}[^\s\\/\"'`<>|:]+{_SEP}home{_SEP}"
    r"|/root\b)"
    r"(?:(?<=/root)|[^\s/\\\"'`<>|:]+)")
_MASKED_HOME = re.compile(r"(?:^|[\s\"'`(])~(?:[/\\]|$)")


class Masker:
    """Masks secrets, home paths and e-mail addresses, and counts each."""

    def __init__(self, redactor: Redactor, home: str | None = None) -> None:
        self.redactor = redactor
        self.home = (home or "").rstrip("/\\")
        self.counts: Counter[str] = Counter()

    def mask(self, text: str) -> str:
        before = len(_MARKER.findall(text))
        text = self.redactor.redact(text)
        self.counts["secrets"] += len(_MARKER.findall(text)) - before
        if len(self.home) > 1:
            found = text.count(self.home)
            if found:
                self.counts["home paths"] += found
                text = text.replace(self.home, "~")
        text, found = _HOME.subn("~", text)
        self.counts["home paths"] += found
        text, found = _EMAIL.subn(EMAIL_MARKER, text)
        self.counts["e-mail addresses"] += found
        return text

    def clip(self, text: str, limit: int) -> str:
        """`text` masked whole, then cut to `limit` characters (see `redact.clip`): a cut
        made first would leave a piece of a key, a path or an address unmasked."""
        return self.redactor.clip(text, limit, mask=self.mask)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> str:
        kinds = ("secrets", "home paths", "e-mail addresses")
        return ", ".join(f"{self.counts[k]} {k}" for k in kinds)


def has_marker(text: str) -> bool:
    """Whether masked text is in it (a check must never ask for a masked value)."""
    return bool(_MARKER.search(text) or _MASKED_HOME.search(text))
