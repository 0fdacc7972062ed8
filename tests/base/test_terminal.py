"""Untrusted text reaches the terminal with its control characters shown, never run."""

from __future__ import annotations

from gitsleep.base.terminal import visible


def test_escape_sequences_and_c1_controls_are_shown_as_escapes() -> None:
    assert visible("\x1b[2Jcleared") == "\\x1b[2Jcleared"
    assert visible("\x9b31mred") == "\\x9b31mred"  # 8-bit CSI, no ESC needed
    assert visible("ring\x07") == "ring\\x07"
    assert visible("over\rwrite") == "over\\rwrite"


def test_layout_stays_and_crlf_is_a_line_end() -> None:
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible("one\r\ntwo") == "one\ntwo"


def test_bidi_overrides_read_as_what_they_are() -> None:
    assert visible("abc\u202edef") == "abc\\u202edef"
    assert visible("family \U0001f468\u200d\U0001f469") == "family \U0001f468\u200d\U0001f469"
