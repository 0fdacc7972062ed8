"""Running git safely: every gitsleep git command goes through here (`git_run`, and
`BlobReader` for the one long-lived `git cat-file --batch` process).

gitsleep's own git commands run no program the repository configures (`SAFE_CONFIG`, given
to every git call as `-c` and, for GitPython's own calls, through `GIT_CONFIG_COUNT`): no
hooks (`core.hooksPath` points at the null device), no `core.fsmonitor` command, no
`gpg.program` from `log.showSignature`, no recursion into submodules. gitsleep validates the
documents it writes itself, and a hook or monitor made for people has no business in an
unattended run. What a commit or a push needs stays the user's: `commit.gpgsign`,
credential helpers, `core.sshCommand`, and clean/smudge filters (git-crypt, LFS: turning
them off would commit plaintext or pointers).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gitsleep.base.errors import GitError

if TYPE_CHECKING:  # GitPython is slow to import; `validate` must not pay for it
    import git

# Repository settings that would make gitsleep's git calls run programs: hooks, the fsmonitor
# command, gpg through `git log`, and submodule recursion (another repository's config).
SAFE_CONFIG: dict[str, str] = {
    "core.hooksPath": os.devnull,
    "core.fsmonitor": "false",
    "log.showSignature": "false",
    "submodule.recurse": "false",
    "push.recurseSubmodules": "no",
}


def last_line(text: str | bytes | None) -> str:
    """git's last non-empty line of output: the one that says what went wrong."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no message from git"


@dataclass(frozen=True)
class GitRun:
    """What one git process did: its exit status and its raw output."""

    status: int
    out: bytes
    err: bytes


def git_run(
    cwd: str | os.PathLike[str] | None,
    *args: str,
    config: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> GitRun:
    """The one way gitsleep runs git: `git -c SAFE_CONFIG... ARGS` in `cwd`, never raising.

    `env` adds to this process's environment; no input reads the null device, so git never
    waits on a terminal; a `timeout` that passes kills git and reads as status -1.
    """
    try:
        done = subprocess.run(  # noqa: S603 - git with arguments, never a shell
            _command(args, config), cwd=cwd, capture_output=True, check=False, timeout=timeout,
            input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
            env={**os.environ, **env} if env else None)
    except subprocess.TimeoutExpired:
        return GitRun(-1, b"", f"git timed out after {timeout} s".encode())
    return GitRun(done.returncode, done.stdout, done.stderr)


def _command(args: tuple[str, ...], config: Mapping[str, str] | None = None) -> list[str]:
    """`git -c SAFE_CONFIG... ARGS`: no hook, fsmonitor or gpg program of the repository runs."""
    command = ["git"]
    for key, value in {**SAFE_CONFIG, **(config or {})}.items():
        command += ["-c", f"{key}={value}"]
    return [*command, *args]


class BlobReader:
    """One `git cat-file --batch` process in `repo`, started like every `git_run` (with
    `SAFE_CONFIG`): blob contents by sha, one at a time. Close it when done."""

    def __init__(self, repo: str | os.PathLike[str]) -> None:
        self.proc = subprocess.Popen(  # noqa: S603 - fixed git argv, never a shell
            _command(("cat-file", "--batch")), cwd=repo, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def read(self, sha: str) -> bytes:
        """The blob `sha`; GitError when it is no readable blob."""
        stdin: IO[bytes] | None = self.proc.stdin
        stdout: IO[bytes] | None = self.proc.stdout
        assert stdin is not None and stdout is not None
        stdin.write(sha.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise GitError(f"git cat-file failed: object {sha} is not a readable blob")
        size = int(header[2])
        data = stdout.read(size)
        stdout.read(1)  # the newline after each object
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _decoded(data: bytes, strip: bool) -> str:
    text = data.decode("utf-8", "surrogateescape")
    return text[:-1] if strip and text.endswith("\n") else text


def try_git(
    runner: git.Git, *args: str, config: dict[str, str] | None = None, strip: bool = True
) -> tuple[int, str, str]:
    """Run `git <args>` where `runner` points (its directory and environment); return
    (status, stdout, stderr) without raising.

    Like GitPython, in the C locale (git's messages in English) and, with `strip`, without
    stdout's final newline. Every call gets `SAFE_CONFIG` (see the module docstring).
    """
    done = git_run(runner.working_dir, *args, config=config,
                   env={"LANGUAGE": "C", "LC_ALL": "C", **runner.environment()})
    return done.status, _decoded(done.out, strip), _decoded(done.err, True)


def harden(runner: git.Git) -> git.Git:
    """Give `runner` `SAFE_CONFIG` for every command it runs, GitPython's own included.

    Uses `GIT_CONFIG_COUNT` (git 2.31+), after any entries the environment already has.
    """
    try:
        start = max(int(os.environ.get("GIT_CONFIG_COUNT", "0") or 0), 0)
    except ValueError:
        start = 0
    env = {"GIT_CONFIG_COUNT": str(start + len(SAFE_CONFIG))}
    for index, (key, value) in enumerate(SAFE_CONFIG.items(), start):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    runner.update_environment(**env)
    return runner


def run_git(runner: git.Git, *args: str, config: dict[str, str] | None = None) -> str:
    """Run `git <args>` and return its output; a failure is a GitError in git's own words."""
    status, out, err = try_git(runner, *args, config=config)
    if status != 0:
        verb = next((a for a in args if not a.startswith("-")), "")
        raise GitError(f"git {verb} failed: {last_line(err or out)}")
    return out


def ref_sha(repo: git.Repo, ref: str) -> str | None:
    """The commit a ref points at, or None when it does not exist."""
    status, out, _ = try_git(repo.git, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return out.strip() if status == 0 and out.strip() else None


def is_ancestor(repo: git.Repo, ancestor: str, descendant: str) -> bool:
    status, _, err = try_git(repo.git, "merge-base", "--is-ancestor", ancestor, descendant)
    if status > 1:
        raise GitError(f"git merge-base failed: {last_line(err)}")
    return status == 0


def git_out(repo: Path, *args: str) -> str:
    """stdout of `git ARGS` in `repo`, or "" when git fails (a missing ref, no notes)."""
    return git_bytes(repo, *args).decode("utf-8", "replace")


def git_bytes(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    """stdout of `git ARGS` in `repo` as bytes (b"" when git fails): commit messages, notes
    and files are whatever someone wrote, not necessarily UTF-8."""
    done = git_run(repo, *args, stdin=stdin)
    return done.out if done.status == 0 else b""


def read_blobs(repo: Path, names: list[str], max_bytes: int) -> dict[str, bytes | None]:
    """object name -> its content, for all of `names` in two git processes (one
    `cat-file --batch-check`, one `--batch`); None for a missing object, one that is no
    blob, or one over `max_bytes` (a note anyone could push is never read whole)."""
    if not names:
        return {}
    checked = git_bytes(repo, "cat-file", "--batch-check",
                        stdin="".join(f"{name}\n" for name in names).encode())
    wanted = []
    for name, line in zip(names, checked.decode("utf-8", "replace").splitlines(),
                          strict=False):
        found = line.split()
        if (len(found) == 3 and found[1] == "blob" and found[2].isdigit()
                and int(found[2]) <= max_bytes):
            wanted.append(name)
    contents: dict[str, bytes | None] = dict.fromkeys(names)
    if not wanted:
        return contents
    out = git_bytes(repo, "cat-file", "--batch",
                    stdin="".join(f"{name}\n" for name in wanted).encode())
    at = 0
    for name in wanted:  # "<sha> blob <size>\n<content>\n", in the order asked
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split()
        if len(header) != 3 or not header[2].isdigit():
            break
        size = int(header[2])
        contents[name] = out[end + 1:end + 1 + size]
        at = end + 1 + size + 1
    return contents


@dataclass(frozen=True)
class TreeEntry:
    """One file of a git tree, as `ls-tree -r -l` lists it."""

    mode: str
    sha: str
    size: int
    path: str  # relative to the tree, '/'-separated


def tree_entries(repo: Path, tree: str) -> list[TreeEntry]:
    """Every file of the git tree `tree` (recursive; links and submodules listed as such)."""
    done = git_run(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", tree)
    if done.status != 0:
        raise GitError(f"git ls-tree failed: {last_line(done.err)}")
    entries = []
    for raw in done.out.split(b"\0"):
        if not raw:
            continue
        meta, _, path_bytes = raw.partition(b"\t")
        mode, _kind, sha, size = meta.decode().split()
        entries.append(TreeEntry(mode, sha, int(size) if size.isdigit() else 0,
                                 path_bytes.decode("utf-8", "surrogateescape")))
    return entries
