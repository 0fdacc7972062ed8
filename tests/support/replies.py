"""Optimizer reply fixtures (tests/fixtures/replies/) shared by the parsing and hygiene tests."""

from __future__ import annotations

from pathlib import Path

REPLIES = Path(__file__).resolve().parent.parent / "fixtures" / "replies"
# The issue's own example of a failing regex check.
SEVERITY = r"(?i)severity\s*[:=]\s*[1-4]"


def reply(name: str) -> str:
    """One stored reply, byte for byte."""
    return (REPLIES / name).read_text(encoding="utf-8")
