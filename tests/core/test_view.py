"""The agent's view: a document with the imports the edges resolved expanded in place."""

from __future__ import annotations

from gitsleep.core import view
from gitsleep.core.documents import apply_edits
from gitsleep.core.models import Edit


def test_an_import_line_becomes_the_imported_text_and_prose_keeps_its_place() -> None:
    text = "# Memory\n\n@AGENTS.md\n\nAlso see @style.md today.\n```\n@AGENTS.md\n```\n"
    shown = view.expand(text, {"AGENTS.md": "- Be brief.\n", "style.md": "plain words"})
    assert shown == ("# Memory\n\n- Be brief.\n\nAlso see plain words today.\n```\n"
                     "@AGENTS.md\n```\n")


def test_crlf_documents_keep_their_endings_and_unresolved_imports_stay() -> None:
    assert view.expand("@a.md\r\nsee @~/x.md\r\n", {"a.md": "one\ntwo\n"}) == \
        "one\r\ntwo\r\nsee @~/x.md\r\n"


def test_an_edit_to_the_importing_file_is_shown_with_the_imported_text() -> None:
    documents = {"skill": "# S\n", "memory": "@AGENTS.md\n",
                 "memory@AGENTS.md": "- From AGENTS.\n"}
    edited = apply_edits(documents["memory"] or "",
                         [Edit(op="add", target="memory", content="Say hello.")])[0]
    shown = view.shown({**documents, "memory": edited}, "memory") or ""
    assert shown.startswith("- From AGENTS.\n") and "- Say hello." in shown
    assert view.shown(documents, "skill") == "# S\n"  # another role's imports are not its
