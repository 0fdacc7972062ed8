"""The description as a bounded surface: its value changes, no other byte."""

from __future__ import annotations

import pytest
import yaml

from gitsleep.core import description as d

DOC = ("---\nname: notes\ndescription: Writes notes.\nmetadata:\n  owner: docs\n---\n"
       "# Notes\n\n<!-- gitsleep:learned:start -->\n- keep\n<!-- gitsleep:learned:end -->\n")


def test_only_the_value_changes() -> None:
    after = d.replace(DOC, "Writes release notes for a version.")
    assert after == DOC.replace("Writes notes.", "Writes release notes for a version.")
    assert d.read(after) == "Writes release notes for a version."


@pytest.mark.parametrize("value", ["Use it: when notes are due", "#1 for notes", "'quoted'",
                                   "yes", "Notes — for releases, “quoted”"])
def test_a_value_yaml_would_misread_is_quoted_and_reads_back(value: str) -> None:
    after = d.replace(DOC, value)
    assert d.read(after) == value
    head = after.split("---\n")[1]
    assert yaml.safe_load(head)["metadata"] == {"owner": "docs"}
    assert after.split("description: ")[0] == DOC.split("description: ")[0]
    assert after.split("\nmetadata:")[1] == DOC.split("\nmetadata:")[1]


def test_crlf_a_bom_and_a_folded_block_keep_every_other_byte() -> None:
    doc = ("\ufeff---\r\nname: notes\r\ndescription: >\r\n  Writes notes\r\n  for people.\r\n"
           "license: MIT\r\n---\r\n# Notes\r\n")
    after = d.replace(doc, "Writes release notes.")
    assert after == ("\ufeff---\r\nname: notes\r\ndescription: Writes release notes.\r\n"
                     "license: MIT\r\n---\r\n# Notes\r\n")


@pytest.mark.parametrize(("value", "why"), [
    ("x" * 1025, "1025 characters; at most 1024"),
    ("Use <notes> for it", "angle bracket"),
    ("two\nlines", "several lines"),
    ("  ", "empty"),
])
def test_a_value_out_of_bounds_is_refused(value: str, why: str) -> None:
    with pytest.raises(d.DescriptionError, match=why):
        d.replace(DOC, value)


def test_a_document_without_a_description_cannot_be_edited() -> None:
    with pytest.raises(d.DescriptionError, match="no top-level `description:` key"):
        d.replace("---\nname: notes\n---\n# Notes\n", "Writes notes.")
    with pytest.raises(d.DescriptionError, match="no frontmatter"):
        d.replace("# Notes\n", "Writes notes.")


@pytest.mark.parametrize(("value", "why"), [
    ("Notes\u200b for releases", "invisible"),
    ("See [notes](javascript:alert(1))", "javascript"),
])
def test_hostile_text_cannot_become_a_description(value: str, why: str) -> None:
    with pytest.raises(d.DescriptionError, match=why):
        d.replace(DOC, value)
