"""Invisible characters and script or data links: found however they are spelled."""

from __future__ import annotations

from gitsleep.base.hostile_text import invisible_problem, unsafe_link_problem, without_invisible


def test_invisible_characters_are_removed_and_indices_map_back() -> None:
    text, kept = without_invisible("a\u200bb\u202ec")
    assert text == "abc" and kept == [0, 2, 4]
    assert without_invisible("plain") == ("plain", [0, 1, 2, 3, 4])


def test_an_invisible_character_is_named_but_an_emoji_form_is_fine() -> None:
    assert "U+200B" in invisible_problem("Use\u200b the heading")
    assert invisible_problem("Mark done with \u2714\ufe0f") == ""
    assert invisible_problem("plain text") == ""


def test_script_and_data_links_are_found_through_their_disguises() -> None:
    for text in ("[x](javascript:alert(1))", "[x](JaVa\tScRiPt:alert(1))",
                 "[x](&#106;avascript:alert(1))", "see data:text/html;base64,PHNjcmlwdD4=",
                 "[x](\uff4aavascript:alert(1))"):
        assert "link" in unsafe_link_problem(text), text
    assert unsafe_link_problem("[docs](https://example.com/javascript:)") == ""
    assert unsafe_link_problem("the data: section") == ""
