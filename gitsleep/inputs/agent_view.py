"""The files an agent is shown with a document: Claude Code's `@path` imports, followed.

A document's imports are read as Claude Code reads them: relative to the importing
file, up to `MAX_HOPS` hops deep, each imported file's own imports expanded in it. Only
files inside the repository are followed (a headless run never approves an import from
elsewhere, and no night can read your home folder); a cycle is refused, since no order
of expansion shows it; the assembled text is bounded. What is returned goes into the
documents mapping (see `gitsleep.core.view`): the core shows it, never edits it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.core.documents import imports
from gitsleep.core.view import expand, import_key
from gitsleep.inputs import repo_paths

MAX_HOPS = 5  # Claude Code follows imports up to five hops deep
MAX_VIEW_BYTES = 512 * 1024  # the text one document's imports add, all hops together


@dataclass(frozen=True)
class Skipped:
    """An import the agent's view leaves as written, and why (validate warns)."""

    where: str  # the importing file, repository-relative
    line: int
    target: str
    why: str


@dataclass(frozen=True)
class ImportView:
    """What one document's imports add: the texts by documents-mapping key, and the
    imports left unexpanded (home files, files outside the repository, too deep)."""

    texts: dict[str, str]
    skipped: tuple[Skipped, ...]


def _inside(root: Path, path: Path) -> Path | None:
    try:
        real = repo_paths.real_path(path)
    except repo_paths.SymlinkLoop:
        return None
    return real if real.is_relative_to(root.resolve()) else None


def _read(path: Path, shown: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{shown}: imported file is not UTF-8 (byte {exc.start}); save it "
                         "as UTF-8") from None
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read imported file: {exc.strerror}") from None


class _Walk:
    """One document's imports, read depth first, with the budget they share."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.size = 0
        self.skipped: list[Skipped] = []

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def expanded(self, real: Path, chain: tuple[Path, ...], hops: int) -> str:
        """`real`'s text with its own imports expanded (`chain`: the files importing it)."""
        text = _read(real, self.rel(real))
        self.size += len(text.encode("utf-8"))
        if self.size > MAX_VIEW_BYTES:
            raise UsageError(f"{self.rel(chain[0])}: the files it imports come to more than "
                             f"{MAX_VIEW_BYTES // 1024} KB; import fewer or smaller files")
        return expand(text, self.resolve(real, text, (*chain, real), hops, top=False))

    def resolve(self, real: Path, text: str, chain: tuple[Path, ...], hops: int, *,
                top: bool) -> dict[str, str]:
        resolved: dict[str, str] = {}
        for line, target in imports(text):
            if target in resolved:
                continue
            if target.startswith("~/"):
                if top:
                    self.skipped.append(Skipped(self.rel(real), line, target,
                                                "a file in your home folder, which no night "
                                                "can read"))
                continue
            candidate = real.parent / target
            if not candidate.is_file():
                continue  # an @mention in prose, not a file
            inside = _inside(self.root, candidate)
            if inside is None:
                if top:
                    self.skipped.append(Skipped(self.rel(real), line, target,
                                                "a file outside the repository, which a "
                                                "headless run does not load"))
                continue
            if inside in chain:
                cycle = " -> ".join(self.rel(p) for p in (*chain, inside))
                raise UsageError(f"{self.rel(chain[0])}: imports form a cycle ({cycle}); "
                                 "remove one of the imports")
            if hops >= MAX_HOPS:
                self.skipped.append(Skipped(self.rel(real), line, target,
                                            f"more than {MAX_HOPS} hops deep, where Claude "
                                            "Code stops following imports"))
                continue
            resolved[target] = self.expanded(inside, chain, hops + 1)
        return resolved


def import_view(root: Path, rel: str, text: str, role: str) -> ImportView:
    """The imported texts of the document at `rel` (whose text is `text`), keyed for the
    documents mapping as `role`'s; raises UsageError on a cycle or a view too large."""
    walk = _Walk(root)
    own = walk.root / rel
    real = _inside(walk.root, own) or own
    found = walk.resolve(real, text, (real,), 0, top=True)
    return ImportView({import_key(role, target): value for target, value in found.items()},
                      tuple(walk.skipped))
