"""Untrusted text put into a pull-request body: it never closes our fences, splits our
tables, hides the rest of the body or notifies anyone."""

from __future__ import annotations

from gitsleep.core.markdown import ZWSP, clip, code_span, escape, fence, one_line, table


def test_one_line_drops_breaks_controls_and_bidi_overrides() -> None:
    assert one_line("a\r\nb\nc\x00d\u2028e") == "a b c d e"
    assert one_line("safe\u202eevil") == "safeevil"


def test_clip_marks_a_cut_and_leaves_short_text_alone() -> None:
    assert clip("short", 10) == "short"
    assert clip("0123456789", 5) == "0123…" and len(clip("0123456789", 5)) == 5


def test_escape_turns_markup_mentions_and_references_into_text() -> None:
    text = escape("<!-- hide --> *bold* | cell @team owner/repo#12 &amp;")
    assert "<" not in text and "\\*bold\\*" in text and "\\|" in text
    assert f"@{ZWSP}team" in text and f"#{ZWSP}12" in text
    assert "&amp;amp;" in text
    assert escape("> quoted") == "\\> quoted"
    assert escape("a -> b") == "a -> b"  # an arrow inside a line stays readable


def test_code_spans_and_fences_outlast_the_backticks_they_hold() -> None:
    assert code_span("a ``b`` c") == "```a ``b`` c```"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("") == "(empty)"
    block = fence("```\nrm -rf /\n```", info="sh`")
    assert block.startswith("````sh\n") and block.endswith("\n````")


def test_a_table_has_its_alignment_row() -> None:
    assert table(["a", "b"], [["1", "2"]], "lr") == "| a | b |\n| :--- | ---: |\n| 1 | 2 |"
