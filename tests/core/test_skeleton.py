"""Answer skeletons from the structural checks: a heading with a placeholder, a labelled
line with a typed slot, one line for a label whose value differs per task."""

from __future__ import annotations

from gitsleep.core.models import Check
from gitsleep.core.skeleton import MAX_LINES, derive, structural_line


def test_sections_and_labels_become_lines_in_the_order_given() -> None:
    checks = [Check("section_present", "Impact"),
              Check("regex", r"(?m)^Severity:\s*[12]"), Check("regex", r"(?m)^Severity:\s*[34]")]
    assert derive(checks) == "## Impact\n<write the impact here>\nSeverity: <1-4>"


def test_a_check_about_words_not_structure_gives_no_line() -> None:
    assert structural_line(Check("contains", "hello")) == []
    assert derive([Check("contains", "hello"), Check("max_chars", "300")]) is None


def test_a_skeleton_stays_short() -> None:
    many = [Check("section_present", f"Part {i}") for i in range(20)]
    assert len((derive(many) or "").splitlines()) == MAX_LINES
