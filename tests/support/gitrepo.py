"""Real git repositories for tests: a working clone plus a bare `origin`, nothing mocked.

Call `isolate_git(monkeypatch, tmp_path)` first (or use the `git_env` fixture defined in the
test modules) so the machine's system and global git config cannot leak in; `make_repo`
then writes `user.name` / `user.email` into the repository's own config.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

_LEAKY_VARIABLES = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG_PARAMETERS",
    "EMAIL",
)


def isolate_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point git at an empty HOME and no system config for this test; return that HOME."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    for name in _LEAKY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "0")
    return home


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run `git <args>` in `cwd` and return stdout without the trailing newline."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed in {cwd}:\n{done.stderr}")
    return done.stdout.rstrip("\n")


def configure_identity(
    path: Path, name: str = "Test Person", email: str = "test@example.com"
) -> None:
    """Set a committer identity in the repository's own config (never globally)."""
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", email)
    git(path, "config", "commit.gpgsign", "false")


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    """Write each repo-relative path with its text or bytes, creating directories."""
    for relative, content in files.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")


def commit_files(
    path: Path, files: dict[str, str | bytes], message: str = "change files"
) -> str:
    """Write `files`, stage them, commit, and return the new commit's sha."""
    write_files(path, files)
    git(path, "add", "--", *files)
    git(path, "commit", "--quiet", "--no-verify", "-m", message)
    return git(path, "rev-parse", "HEAD")


def make_repo(
    tmp_path: Path, files: dict[str, str | bytes] | None = None, *, name: str = "work"
) -> tuple[Path, Path]:
    """A repository with one commit of `files` on `main`, pushed to a bare `origin`.

    Returns (working repository, bare origin). `main` tracks `origin/main`.
    """
    files = files or {"README.md": "# test repository\n"}
    work = tmp_path / name
    origin = tmp_path / f"{name}-origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(work))
    configure_identity(work)
    commit_files(work, files, "initial commit")
    git(work, "remote", "add", "origin", str(origin))
    git(work, "push", "--quiet", "-u", "origin", "main")
    return work, origin


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Variables that would point a run at a real forge or another model: never from the host.
HOST_ENV = ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
             "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL")


def example_files(name: str = "brief-writer") -> dict[str, str | bytes]:
    """Every file of the bundled example `name`, by its path inside the example."""
    root = EXAMPLES / name
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def example_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                 name: str = "brief-writer") -> tuple[Path, Path]:
    """A bundled example committed and pushed to a bare `origin` (runs ignored), with git
    and the environment isolated from the host. Returns (working repository, origin)."""
    isolate_git(monkeypatch, tmp_path)
    for variable in HOST_ENV:
        monkeypatch.delenv(variable, raising=False)
    work, origin = make_repo(tmp_path, example_files(name))
    commit_files(work, {".gitignore": ".gitsleep/\n"}, "ignore gitsleep runs")
    git(work, "push", "--quiet", "origin", "main")
    return work, origin


def clone(origin: Path, dest: Path, *, depth: int | None = None) -> Path:
    """Clone `origin` to `dest` (shallow through a file:// URL when `depth` is given)."""
    source = origin.resolve().as_uri() if depth else str(origin)
    extra = ["--depth", str(depth)] if depth else []
    git(dest.parent, "clone", "--quiet", *extra, source, str(dest))
    configure_identity(dest)
    return dest


def snapshot(work: Path) -> dict[str, object]:
    """Everything of the user's checkout gitsleep must not touch, byte for byte.

    Taken without running git in `work` (a `git status` could refresh the index itself):
    every file outside `.git` with its bytes and mode, the index, HEAD, the stash ref and
    log, and any rebase state.
    """
    git_dir = work / ".git"
    tree: dict[str, tuple[bytes, int]] = {}
    for directory, subdirs, filenames in os.walk(work):
        subdirs[:] = [d for d in subdirs if not (Path(directory) == work and d == ".git")]
        for filename in filenames:
            path = Path(directory) / filename
            tree[path.relative_to(work).as_posix()] = (path.read_bytes(), path.stat().st_mode)
    state: dict[str, object] = {"files": tree}
    for name in ("index", "HEAD", "ORIG_HEAD", "refs/stash", "logs/refs/stash", "logs/HEAD"):
        path = git_dir / name
        state[name] = path.read_bytes() if path.exists() else None
    for name in ("rebase-merge", "rebase-apply"):
        directory = git_dir / name
        state[name] = (
            {p.relative_to(directory).as_posix(): p.read_bytes()
             for p in sorted(directory.rglob("*")) if p.is_file()}
            if directory.exists()
            else None
        )
    return state
