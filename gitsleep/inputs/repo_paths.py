"""Where the repository's paths really lead: symlinks followed, loops caught.

Every path gitsleep reads or writes comes from the repository, and a pull request can
commit a symlink as easily as a file. So configured paths are resolved before any model
call: two fields that lead to one file (memory linked to the skill, a document that is a
task file, two skills sharing a skill document) are refused, because gitsleep writes each
document on its own and `git add` of a link stages nothing, which lost a whole epoch's
accepted rules. A document reached through a link is refused for the same reason. And
gitsleep's own folders (`.gitsleep/cache`, `.gitsleep/runs`) must resolve inside the
repository: a committed `.gitsleep` link must not move its writes elsewhere, and the
cache's path holds no link at all (one inside the repository would let a commit choose the
answers a run reads).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gitsleep.base.errors import UsageError
from gitsleep.git_forge.gitrun import git_out, git_run
from gitsleep.inputs.config import Config, SkillConfig, field_line, key_path

WORK_DIR = ".gitsleep"
CACHE_DIR = ".gitsleep/cache"
RUNS_DIR = ".gitsleep/runs"
LOOP = os.strerror(errno.ELOOP)  # "Too many levels of symbolic links"


class SymlinkLoop(Exception):
    """A path whose symlinks never end (a link to itself, or two links to each other)."""


def real_path(path: Path) -> Path:
    """`path` with every symlink followed (it need not exist); SymlinkLoop on a loop.

    Python 3.10-3.12 raise RuntimeError for a loop and 3.13 returns quietly, so the
    result is checked with one stat as well.
    """
    try:
        resolved = path.resolve()
    except RuntimeError:
        raise SymlinkLoop(str(path)) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkLoop(str(path)) from None
        raise
    try:
        os.stat(resolved)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SymlinkLoop(str(path)) from None
    return resolved


def leads_outside(root: Path, relative: str) -> str | None:
    """Why writing at `root/relative` would leave the repository, or None when it stays."""
    try:
        real = real_path(root / relative)
        inside = real.is_relative_to(real_path(root))
    except SymlinkLoop:
        return f"is a symlink loop ({LOOP})"
    except OSError as exc:
        return f"cannot be resolved ({exc.strerror or exc})"
    return None if inside else f"leads outside the repository (to {real}) through a symlink"


def writable_dir(root: Path, relative: str, *, fix: str = "remove the link") -> Path:
    """The real folder for gitsleep's writes at `root/relative`, or a UsageError (exit 2)."""
    why = leads_outside(root, relative)
    if why:
        raise UsageError(f"{relative}: {why}: gitsleep writes only inside the repository; {fix}")
    return real_path(root / relative)


def tracked_cache_entries(repo: Path) -> frozenset[str]:
    """The cache's files git tracks, relative to the cache folder (`ab/abcd....json`)."""
    done = git_run(repo, "ls-files", "-z", "--full-name", "--", CACHE_DIR)
    if done.status != 0:  # not a git repository: nothing is tracked
        return frozenset()
    prefix = git_out(repo, "rev-parse", "--show-prefix").strip() + CACHE_DIR + "/"
    names = done.out.decode("utf-8", "surrogateescape").split("\0")
    return frozenset(name.removeprefix(prefix) for name in names if name.startswith(prefix))


def linked_part(root: Path, relative: str) -> tuple[str, str] | None:
    """(the first part of `relative` below `root` that is a symlink, where it points), or
    None when no part of the path is a link."""
    parts = Path(relative).parts
    for count in range(1, len(parts) + 1):
        path = root.joinpath(*parts[:count])
        if path.is_symlink():
            return "/".join(parts[:count]), os.readlink(path)
    return None


def cache_link_problem(root: Path) -> str | None:
    """Why the answer cache must not be read: a symlink on its path, even one that stays
    in the repository. The link is committed by whoever wrote the change, so through it a
    pull request would choose the answers its own review reads."""
    found = linked_part(root, CACHE_DIR)
    if found is None:
        return None
    link, target = found
    return (f"{CACHE_DIR}: the path to gitsleep's answer cache goes through the symlink "
            f"'{link}' (to {target}): a committed link would choose the answers a run reads "
            "as the model's; remove the link (the folder is made on the first run) or set "
            "`cache: false`")


def work_dir_problem(root: Path) -> tuple[str, str] | None:
    """(path, reason) for the first of gitsleep's own folders that leads out, or None."""
    for relative in (WORK_DIR, CACHE_DIR, RUNS_DIR):
        why = leads_outside(root, relative)
        if why:
            return relative, why
    return None


# --- configured paths that alias -------------------------------------------------------


@dataclass(frozen=True)
class PathIssue:
    """One configured path that aliases another, or a document reached through a link."""

    code: str  # GS002 two fields are one file | GS003 a document behind a symlink
    loc: tuple[str | int, ...]  # ("skills", 0, "memory"): for the config line
    skills: frozenset[str]  # the skills it concerns
    message: str  # starts with the field, ends with the fix

    @property
    def field(self) -> str:
        return key_path(self.loc)


@dataclass(frozen=True)
class _Entry:
    loc: tuple[str | int, ...]
    skill: str
    relative: str
    document: bool
    linked: bool  # reached through a symlink (the real path differs)
    real: str  # repo-relative real path


def _entries(root: Path, skills: Sequence[tuple[tuple[str | int, ...], SkillConfig]]
             ) -> Iterable[tuple[_Entry, object]]:
    """Each configured path that resolves inside the repository, with an identity key.

    Loops and paths leading out are skipped here: the readers report them (GS100/GS200).
    """
    top = real_path(root)
    for prefix, skill in skills:
        fields: list[tuple[tuple[str | int, ...], str, bool]] = [
            ((*prefix, "skill"), skill.skill, True)]
        if skill.memory:
            fields.append(((*prefix, "memory"), skill.memory, True))
        fields += [((*prefix, "tasks", j, "path"), t.path, False)
                   for j, t in enumerate(skill.tasks)]
        for loc, relative, document in fields:
            try:
                real = real_path(root / relative)
            except (SymlinkLoop, OSError):
                continue
            if not real.is_relative_to(top):
                continue
            try:
                info = os.stat(real)
                key: object = (info.st_dev, info.st_ino)  # also catches case-insensitive names
            except OSError:
                key = real
            entry = _Entry(loc, skill.name, relative, document,
                           real != top / relative, real.relative_to(top).as_posix())
            yield entry, key


def path_issues(root: Path, skills: Sequence[tuple[tuple[str | int, ...], SkillConfig]]
                ) -> list[PathIssue]:
    """Configured paths that are one file, and documents reached through a symlink.

    `skills` pairs each skill with the key path its fields hang from, e.g.
    (("skills", 0), skill). Two skills may share a task file (tasks are only read) or a
    memory document (a repository-wide AGENTS.md); nothing else may be shared.
    """
    groups: dict[object, list[tuple[int, _Entry]]] = {}
    for index, (entry, key) in enumerate(_entries(root, skills)):
        groups.setdefault(key, []).append((index, entry))
    issues: list[tuple[int, PathIssue]] = []
    for group in groups.values():
        # the real file (not a link) is what the others are compared with
        anchor = next((e for _, e in group if not e.linked), group[0][1])
        for index, entry in group:
            field = key_path(entry.loc)
            fix = None if entry is anchor else _alias_fix(anchor, entry)
            if fix is not None:
                how = ", through a symlink" if entry.linked or anchor.linked else ""
                issues.append((index, PathIssue(
                    "GS002", entry.loc, frozenset({anchor.skill, entry.skill}),
                    f"{field}: {entry.relative} is the same file as {key_path(anchor.loc)} "
                    f"({anchor.relative}{how}): {fix}")))
            elif entry.document and entry.linked:
                issues.append((index, PathIssue(
                    "GS003", entry.loc, frozenset({entry.skill}),
                    f"{field}: {entry.relative} is reached through a symlink (the file is "
                    f"{entry.real}): point it at {entry.real}; gitsleep writes and commits "
                    "the document itself, and through a link it would commit nothing")))
    return [issue for _, issue in sorted(issues, key=lambda pair: pair[0])]


def _alias_fix(earlier: _Entry, entry: _Entry) -> str | None:
    """How to undo two fields being one file, or None when that is allowed."""
    if not earlier.document and not entry.document:
        if earlier.skill != entry.skill or earlier.relative == entry.relative:
            return None  # shared task files are fine; a repeated entry is GS001
        return "list the task file once"
    if earlier.document and entry.document:
        if earlier.skill != entry.skill and earlier.loc[-1] == entry.loc[-1] == "memory":
            return None  # one repository-wide AGENTS.md: each skill's branch edits it alone
        if earlier.skill == entry.skill:
            return ("give the memory a file of its own: gitsleep writes the skill and the "
                    "memory separately, so one would overwrite the other's rules")
        return ("give each skill its own documents: each skill's branch commits its "
                "documents, and two branches editing one file conflict")
    return "gitsleep writes documents and only reads tasks: keep tasks in a file of their own"


def config_issues(root: Path, config: Config) -> list[PathIssue]:
    """`path_issues` for every skill of the config."""
    return path_issues(root, [(("skills", i), s) for i, s in enumerate(config.skills)])


def preflight(root: Path, config: Config, config_file: Path, skills: Iterable[str], *,
              runs: bool) -> None:
    """Before any model call: refuse aliasing paths of the chosen skills and gitsleep
    folders that lead out of the repository, with one line naming file, field and fix."""
    chosen = set(skills)
    for issue in config_issues(root, config):
        if issue.skills & chosen:
            line = field_line(config_file, issue.loc)
            where = f"{config_file}:{line}" if line else str(config_file)
            raise UsageError(f"{where}: {issue.message}")
    if config.cache:
        writable_dir(root, CACHE_DIR, fix="remove the link or set `cache: false`")
        linked = cache_link_problem(root)
        if linked:
            raise UsageError(linked)
    if runs:
        writable_dir(root, RUNS_DIR, fix="remove the link or pass --output-dir")


def check_skill_paths(root: Path, skill: SkillConfig) -> None:
    """One skill's paths in the tree an epoch reads (for `consolidate`, the base commit)."""
    for issue in path_issues(root, [((), skill)]):
        raise UsageError(f"skill {skill.name}: {issue.message}")
