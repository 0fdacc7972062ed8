"""Section checks read an answer as CommonMark does (markdown-it-py), not line by line."""

from __future__ import annotations

import pytest

from gitsleep.core import judges
from gitsleep.core.models import Check


def present(name: str, answer: str) -> bool:
    return judges.check_passes(Check("section_present", name), answer)[0]


def contains(name: str, answer: str) -> bool:
    return judges.check_passes(Check("section_contains", name), answer)[0]


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_a_comment_inside_a_fenced_code_block_is_not_a_heading(fence: str) -> None:
    answer = f"Run this:\n\n{fence}sh\n# Key Risks\necho hi\n{fence}\n\nDone.\n"
    assert not present("Key Risks", answer)
    assert not contains("Risks", answer)
    assert present("Key Risks", answer + "\n## Key Risks\n- none\n")


def test_an_unclosed_fence_runs_to_the_end_and_hides_what_follows() -> None:
    assert not present("Key Risks", "```python\n# Key Risks\nx = 1\n")


def test_an_indented_code_block_is_not_a_heading_nor_a_label() -> None:
    answer = "Example:\n\n    # Key Risks\n    Confidence: high\n"
    assert not present("Key Risks", answer)
    assert not present("Confidence", answer)


@pytest.mark.parametrize("underline", ["=========", "---------", "==="])
def test_a_setext_heading_is_a_heading(underline: str) -> None:
    answer = f"Intro line.\n\nKey Risks\n{underline}\n\nNone today.\n"
    assert present("Key Risks", answer)
    assert contains("Risks", answer)


def test_atx_headings_with_closing_hashes_and_inline_markup() -> None:
    assert present("Key Risks", "## Key Risks ##\n")
    assert present("Key Risks", "## **Key Risks**\n")
    assert present("Key Risks", "### The `Key Risks`\n")
    assert not present("Key Risks", "##Key Risks\n")  # no space: a paragraph
    assert not contains("Risks", "Some text about risks.\n")


def test_bold_leads_count_in_paragraphs_lists_and_quotes_but_not_in_code() -> None:
    assert present("Decision", "**Decision:** ship it.\n")
    assert present("Decision", "- **Decision**: ship it.\n")
    assert present("Decision", "> **Decision** ship it.\n")
    assert not present("Decision", "```\n**Decision:** ship it.\n```\n")
    assert not present("Decision", "We made a **Decision** today.\n")  # not a lead


def test_labels_count_at_a_line_start_outside_code() -> None:
    assert present("Confidence", "Summary first.\nConfidence: medium\n")
    assert present("Confidence", "1. Confidence: high\n")
    assert not present("Confidence", "~~~\nConfidence: high\n~~~\n")
    assert not present("Confidence", "My confidence: high\n")  # not at the start
