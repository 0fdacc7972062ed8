"""Workspaces: a repository folder, as committed, that an agent works in and checks judge.

The sandbox's edges: the run's setup reads the folder from git at its tree once and hands
the backend a `TreeSource` (`gitsleep.sandbox.trees`); each call gets its own copy;
this module installs the skill's package in it, checks that a folder on disk can be one
(`folder_problem_on_disk`), and after the agent ran judges the task's checks there: the
workspace ops through `gitsleep.core.sandbox` (pure), `command` checks through
`gitsleep.sandbox.check_program`, after the fixture files their argv names are put back as
committed (the agent must not grade itself); the agent's diff for the optimizer.

This module knows nothing of click or the forge; it raises UsageError for bad input
(exit 2)."""

from __future__ import annotations

import difflib
import os
import posixpath
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from gitsleep.core.sandbox import (
    changed_files_max,
    file_contains,
    file_exists,
    judged_in_workspace,
    oversized,
    workspace_key,
)
from gitsleep.sandbox.cleanup import remove_tree
from gitsleep.sandbox.trees import Tree, TreeSource, escaping_link

if TYPE_CHECKING:
    from gitsleep.core.models import Check

DIFF_MAX_CHARS = 2000  # the agent's diff as the optimizer sees it, per failing task
DIFF_FILE_BYTES = 64 * 1024  # what the diff reads of one file
DIFF_CLIPPED = "... (diff clipped)"


# --- naming a folder ---------------------------------------------------------------------

# --- reading a folder at a commit ----------------------------------------------------------


def _linked_part(root: Path, folder: str) -> str | None:
    """The first part of the path `folder` (from `root`) that is a symlink, or None: a run
    reads the folder from git at `<commit>:<folder>`, and git does not follow links."""
    path = root
    for part in PurePosixPath(folder).parts:
        path = path / part
        if path.is_symlink():
            return path.relative_to(root).as_posix()
    return None


def folder_problem_on_disk(root: Path, folder: str) -> str | None:
    """Why `folder` (already a sound name, see `folder_problem`) is not a folder of the
    checkout at `root` that a workspace can be made of, or None: it must exist, stay in
    the repository with links followed, and hold no link that leads out of it."""
    path = root / folder
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return "cannot be resolved (a symlink loop): replace the link with the folder"
    if not resolved.is_relative_to(root.resolve()):
        return ("leaves the repository through a symlink: keep the workspace folder inside "
                "the repository")
    if not path.exists():
        return "does not exist: create and commit the folder, or fix the task's workspace"
    if not resolved.is_dir():
        return "is not a folder: point the task's workspace at a folder of the repository"
    linked = _linked_part(root, folder)
    if linked:
        return (f"goes through the symlink {linked!r}: git keeps the link, not the folder, "
                "so a run cannot read it there; name the folder the link points to")
    for top, dirs, files in os.walk(resolved, followlinks=False):
        for name in [*dirs, *files]:
            if (Path(top) / name).is_symlink():
                relative = (Path(top) / name).relative_to(resolved).as_posix()
                problem = escaping_link(resolved, relative)
                if problem:
                    return f"holds {problem}"
    return None


# --- one cache per run, one copy per call --------------------------------------------------


# --- what the agent changed ----------------------------------------------------------------

def _side(root: Path, relative: str, overlay: Mapping[str, bytes]) -> bytes | str | None:
    """One side of a file's diff: its bytes (the head), a link's target as text, or None
    when it is absent. `overlay` wins: what was installed over the fixture."""
    if relative in overlay:
        return overlay[relative][:DIFF_FILE_BYTES]
    path = root / relative
    if path.is_symlink():
        return f"symlink -> {os.readlink(path)}\n"
    if not path.is_file():
        return None
    with path.open("rb") as fh:
        return fh.read(DIFF_FILE_BYTES)


def unified_diff(
    before: Path,
    after: Path,
    changed: Sequence[str],
    *,
    overlay: Mapping[str, bytes] | None = None,
    redact: Callable[[str], str] | None = None,
    limit: int = DIFF_MAX_CHARS,
) -> str:
    """The agent's change as a unified diff of the `changed` paths between the folder it
    got (`before`, the pristine fixture, with `overlay` installed over it) and the folder it
    left (`after`): what the optimizer reads of a failing workspace task. Redacted whole
    first, then clipped to `limit` at a line end, so a cut never leaves part of a secret."""
    parts: list[str] = []
    for relative in changed:
        old = _side(before, relative, overlay or {})
        new = _side(after, relative, {})
        if isinstance(old, bytes) and b"\0" in old or isinstance(new, bytes) and b"\0" in new:
            parts.append(f"Binary file {relative} changed\n")
            continue
        old_text = old.decode("utf-8", "replace") if isinstance(old, bytes) else old
        new_text = new.decode("utf-8", "replace") if isinstance(new, bytes) else new
        names = (f"a/{relative}" if old is not None else "/dev/null",
                 f"b/{relative}" if new is not None else "/dev/null")
        lines = list(difflib.unified_diff(
            (old_text or "").splitlines(keepends=True), (new_text or "").splitlines(keepends=True),
            fromfile=names[0], tofile=names[1]))
        if not lines:  # an empty file added or removed, or only its mode changed
            lines = [f"--- {names[0]}\n", f"+++ {names[1]}\n"]
        for line in lines:
            parts.append(line if line.endswith("\n") else line + "\n")
    text = "".join(parts)
    if redact is not None:
        text = redact(text)
    if len(text) <= limit:
        return text
    room = max(0, limit - len(DIFF_CLIPPED))
    cut = text.rfind("\n", 0, room)
    return text[: cut + 1 if cut >= 0 else room] + DIFF_CLIPPED


# --- the workspace check ops ---------------------------------------------------------------

def named_fixture_files(pristine: Path, argv: Sequence[str]) -> list[str]:
    """The files of the pristine fixture that items of a check's argv name, as paths
    relative to it: its program (`./check.sh`) and any file it is given (`sh check.sh`,
    `python tests/verify.py`). Folders, links and paths through a link of the fixture are
    not files a check names (putting one back would replace the fixture's own link)."""
    root = pristine.resolve()
    found: list[str] = []
    for item in argv:
        text = item.replace("\\", "/")
        if not text or text.startswith("/") or "\0" in text:
            continue
        relative = posixpath.normpath(text)
        if relative in (".", "..") or relative.startswith("../") or relative in found:
            continue
        path = pristine / relative
        try:  # a `-c` script may be longer than any file name
            regular = stat.S_ISREG(path.lstat().st_mode)  # a link is not followed
            direct = path.resolve() == root / relative  # no link on the way
        except (OSError, RuntimeError):
            continue
        if regular and direct:
            found.append(relative)
    return found


def put_back(folder: Path, pristine: Path, relative: str) -> None:
    """Copy one fixture file from the pristine copy over the agent's folder, whatever the
    agent left at that path or on the way to it (a rewritten file, a link, a folder): a
    check must never run a program or read a file the agent wrote in its place."""
    target = folder
    for part in relative.split("/")[:-1]:
        target = target / part
        if target.is_symlink() or (target.exists() and not target.is_dir()):
            target.unlink()  # a link is removed, never followed out of the folder
        target.mkdir(exist_ok=True)
    dest = target / relative.split("/")[-1]
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    elif dest.exists() or dest.is_symlink():
        dest.unlink()
    shutil.copy2(pristine / relative, dest)


def put_back_named(folder: Path, pristine: Path, argv: Sequence[str]) -> str:
    """Put back every fixture file a check's argv names (see `put_back`); why one could not
    be (the check then fails without running: it would run what the agent left), or ''."""
    for relative in named_fixture_files(pristine, argv):
        try:
            put_back(folder, pristine, relative)
        except OSError as exc:
            return (f"{relative} could not be put back from the fixture "
                    f"({exc.strerror or exc}); the check was not run")
    return ""


def argv_path_problem(folder: Path, argv: Sequence[str], *, links: bool = True) -> str:
    """Why a check's argv may not run in `folder`, or '': an item that is a relative path
    holding '..' (the kernel follows a link before it goes up, so `lib/../check.sh` can
    leave the folder however `check.sh` is put back), or one that goes through a symlink
    in the folder (a link the agent left in place of what the check reads). Options
    (`-x`, `--x=y`) and text with spaces are not paths."""
    for item in argv:
        text = item.replace("\\", "/")
        if not text or text.startswith(("/", "-")) or any(c.isspace() for c in text):
            continue
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            return (f"the check's path {item!r} holds '..': name the file from the "
                    "workspace folder without going up")
        path = folder
        for count, part in enumerate(parts if links else (), start=1):
            path = path / part
            if path.is_symlink():
                link = "/".join(parts[:count])
                return (f"the check's path {item!r} goes through the symlink {link!r}: "
                        "a check reads only what the workspace holds, not through a link")
            if not path.is_dir():
                break
    return ""


def judge_checks(
    folder: Path,
    checks: Sequence[Check],
    changed: Sequence[str],
    *,
    answer_file: Path | None = None,
    pristine: Path | None = None,
    **command_options: Any,
) -> dict[int, tuple[bool, str]]:
    """(passed, reason) by check index for every check that reads the workspace or runs a
    program, judged over `folder` after the agent ran (`changed`: what it changed). Text
    checks are left to the judge, which reads the answer. Before a command runs, the
    files its argv names are put back from `pristine` (the fixture as committed), so an
    agent that rewrote `./check.sh` to `exit 0` does not grade itself. Raises
    CheckCannotRun (exit 3) when a check program cannot start."""
    from gitsleep.core.check_ops import OPS, command_argv, file_text_arg
    from gitsleep.sandbox.check_program import run_check

    outcomes: dict[int, tuple[bool, str]] = {}
    too_big = oversized(folder)  # the agent's unbounded files are named, never judged
    for index, check in enumerate(checks):
        spec = OPS.get(check.op)
        if spec is None or not judged_in_workspace(check.op):  # the same set as the cache key
            continue
        if too_big:
            outcomes[index] = (False, too_big)
            continue
        if spec.runs_program:
            argv = command_argv(check.text)
            if argv is None:
                outcomes[index] = (False, "the command check's arg is not an argv list")
                continue
            # '..' first; links after the named fixture files are put back (that removes
            # the agent's links on their way), so what is left is a link the check reads
            problem = argv_path_problem(folder, argv, links=False)
            if not problem and pristine is not None:
                problem = put_back_named(folder, pristine, argv)
            problem = problem or argv_path_problem(folder, argv)
            if problem and "could not be put back" not in problem:
                problem += "; the check was not run"
            outcomes[index] = (False, problem) if problem else run_check(
                argv, folder, answer_file=answer_file, **command_options)
        elif check.op == "file_exists":
            outcomes[index] = file_exists(folder, check.text)
        elif check.op == "file_contains":
            path, kind, value = file_text_arg(check.text)
            outcomes[index] = (file_contains(folder, path, regex=value) if kind == "regex"
                               else file_contains(folder, path, text=value))
        elif check.op == "changed_files_max":
            outcomes[index] = changed_files_max(changed, int(check.text))
        else:
            outcomes[index] = (False, f"no workspace judge for {check.op}")
    return outcomes


# --- tasks and calls -------------------------------------------------------------------------


def package_of(context: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The skill package an answer call carries (see `call_context`), or None."""
    found = (context or {}).get("package")
    return found if isinstance(found, Mapping) else None


def install_package(cache: TreeSource, found: Mapping[str, Any], workspace: Path,
                    beside: str) -> dict[str, bytes]:
    """Copy the skill's package (read once per run, like a workspace) into the
    folder of `beside`, the installed skill document's workspace path; return what it
    installed (workspace path -> head of the content), for the diff's first side. The
    skill document is written after this, so a package that holds it never wins."""
    tree = cache.prepare_tree(Path(str(found["repo"])), str(found["tree"]),
                              str(found["folder"]))
    base = posixpath.dirname(posixpath.normpath(beside.replace("\\", "/")))
    dest = workspace / base if base else workspace
    dest.mkdir(parents=True, exist_ok=True)
    cache.copy(tree, dest)
    installed: dict[str, bytes] = {}
    for path in sorted(tree.path.rglob("*")):
        if path.is_file() and not path.is_symlink():
            relative = path.relative_to(tree.path).as_posix()
            with path.open("rb") as fh:
                installed[posixpath.join(base, relative) if base else relative] = fh.read(
                    DIFF_FILE_BYTES)
    return installed


def judge_answer(folder: Path, found: Mapping[str, Any], changed: Sequence[str], answer: str,
                 *, redact: Callable[[str], str], pristine: Path,
                 **command_options: Any) -> tuple[tuple[int, bool, str], ...]:
    """The task's workspace and command checks (`found`: the call's workspace context)
    judged in `folder` after the agent ran, the answer in a scratch file outside it (named
    by $GITSLEEP_ANSWER), the files a command names put back from `pristine` first (see
    `judge_checks`): the outcomes an answer carries, by check index. Raises
    CheckCannotRun (exit 3) when a check program cannot start."""
    from gitsleep.core.models import Check

    raw = found.get("checks")
    checks = tuple(Check(op, arg) for op, arg in raw) if isinstance(raw, list) else ()
    scratch = Path(tempfile.mkdtemp(prefix="gitsleep-answer-"))
    try:
        answer_path = scratch / "answer.txt"
        answer_path.write_text(answer, encoding="utf-8")
        outcomes = judge_checks(folder, checks, changed, answer_file=answer_path,
                                pristine=pristine, redact=redact, **command_options)
    finally:
        remove_tree(scratch)
    return tuple((index, ok, why) for index, (ok, why) in sorted(outcomes.items()))


def agent_diff(tree: Tree, folder: Path, changed: Sequence[str], packaged: Mapping[str, bytes],
               installed: Mapping[str, str], *, redact: Callable[[str], str]) -> str:
    """The agent's change for the optimizer: against the fixture with the package and the
    installed documents over it (what the agent was given, not what it wrote)."""
    overlay = {**packaged, **{k: v.encode("utf-8") for k, v in installed.items()}}
    return unified_diff(tree.path, folder, changed, redact=redact, overlay=overlay)


def workspace_of(context: Mapping[str, Any] | None, purpose: str) -> Mapping[str, Any] | None:
    """The task folder an answer call carries (see `call_context`), or None."""
    found = (context or {}).get("workspace") if purpose == "answer" else None
    return found if isinstance(found, Mapping) else None


def call_key(context: Mapping[str, Any] | None, purpose: str,
             pass_env: Sequence[str] = ()) -> str:
    """What a cached answer depends on besides the call itself, for a backend's cache salt:
    the workspace's tree, the checks judged there (the answer carries their outcomes) and
    the variables passed to them (`checks.pass_env`), and the installed package's tree (a
    changed script re-runs); '' for neither."""
    found = workspace_of(context, purpose)
    key = "" if found is None else workspace_key(str(found.get("tree")),
                                                  context_checks(found))
    if found is not None and pass_env:
        key += "\0pass_env:" + ",".join(sorted(set(pass_env)))
    package = package_of(context) if purpose == "answer" else None
    return key + ("" if package is None else f"\0package:{package.get('tree')}")


def context_checks(context: Mapping[str, Any]) -> list[list[Any]]:
    """[index, op, arg] of every check of a workspace call's context that is judged in the
    workspace (for its cache key): a cached answer's outcomes are stored by index, so an
    edited `file_contains` text, a new bound or a moved check must miss. Text checks are
    left out: the judge reads them from the answer afresh on every run."""
    return [[index, str(op), arg] for index, (op, arg) in enumerate(context.get("checks", ()))
            if judged_in_workspace(str(op))]


