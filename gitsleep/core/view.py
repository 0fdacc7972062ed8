"""The text an agent is shown, kept apart from the file an edit goes to.

A `CLAUDE.md` whose text is `@AGENTS.md` is one line on disk, but Claude Code shows the
agent AGENTS.md's text in its place. The edges read the imported files (inside the
repository, a bounded number of hops, cycles refused) and hand their expanded text down
in the documents mapping, under a key naming the document that imports them and the
import as written (`memory@AGENTS.md`). The core edits only the `skill` / `memory`
text; every time the agent is shown a document, its imports are expanded again from
the current text, so an edit to the importing file's learned block is seen together with
the imported text.
"""

from __future__ import annotations

from collections.abc import Mapping

from gitsleep.core.documents import imports

ROLES = ("skill", "memory")


def import_key(role: str, target: str) -> str:
    """The documents-mapping key of the text `role`'s document imports as `@target`."""
    return f"{role}@{target}"


def is_import_key(key: str) -> bool:
    return "@" in key


def expand(text: str, resolved: Mapping[str, str]) -> str:
    """`text` with each `@target` import (outside code) replaced by `resolved[target]`.

    A line that is the import alone becomes the imported text (its own line ending kept);
    an import inside a sentence is replaced where it stands. Imports with no resolved
    text (an @mention, a home file) stay as written."""
    found = [(line, target) for line, target in imports(text) if target in resolved]
    if not found:
        return text
    lines = text.split("\n")
    for number, target in found:
        line = lines[number - 1]
        body = line.rstrip("\r")
        inserted = resolved[target].rstrip("\n").replace("\n", "\r\n" if body != line else "\n")
        if body.strip() == f"@{target}":
            lines[number - 1] = inserted + line[len(body):]
        else:
            lines[number - 1] = line.replace(f"@{target}", inserted, 1)
    return "\n".join(lines)


def shown(documents: Mapping[str, str | None], role: str) -> str | None:
    """The text the agent is shown for `role` (`skill` or `memory`): the document with the
    imports the edges resolved expanded; None when there is no such document."""
    text = documents.get(role)
    if not text:
        return text
    prefix = import_key(role, "")
    resolved = {key[len(prefix):]: value for key, value in documents.items()
                if key.startswith(prefix) and value is not None}
    return expand(text, resolved) if resolved else text


def shown_documents(documents: Mapping[str, str | None]) -> dict[str, str | None]:
    """Both roles as the agent is shown them."""
    return {role: shown(documents, role) for role in ROLES}
