"""The pre-commit hooks, run by the real pre-commit against a snapshot of this project.

pre-commit installs the hooks' environment from the package registry, which takes a while,
so the module installs it once: the failing cases run `pre-commit run` with a config that
points at the snapshot and share one PRE_COMMIT_HOME. `pre-commit try-repo` always uses a
fresh throw-away store, so it runs once, on the clean repository.

The snapshot is a copy of the working tree committed into a temporary git repository:
`try-repo` on the checkout itself would only see tracked files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the real pre-commit tool installs the hooks

PROJECT = Path(__file__).resolve().parents[1]
SNAPSHOT_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".venv-aider", "venv", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache",
    ".ruff_cache", ".hypothesis", ".gitsleep", "build", "dist", "results",
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "gitsleep tests", "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "gitsleep tests", "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
HOOKS = ("gitsleep-validate", "gitsleep-learned-block")

START = "<!-- gitsleep:learned:start -->"
END = "<!-- gitsleep:learned:end -->"
CONFIG = """\
version: 1
backend: offline
skills:
  - name: notes
    skill: skills/notes/SKILL.md
    tasks:
      - path: evals/notes.jsonl
"""
SKILL = f"---\nname: notes\ndescription: Writes notes.\n---\n\n# Notes\n\n{START}\n{END}\n"
JUDGE = {"kind": "rule", "checks": [{"op": "contains", "arg": "Risks"}]}


def task(tid: str, split: str, prompt: str | None = None, judge: dict | None = None) -> str:
    return json.dumps({"id": tid, "split": split, "prompt": prompt or f"Write about {tid}.",
                       "judge": judge or JUDGE}) + "\n"


GOOD_TASKS = task("t1", "train") + task("v1", "val") + task("h1", "test")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True,
                   capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This project as a committed git repository: (path, commit)."""
    dest = tmp_path_factory.mktemp("hook-repo") / "gitsleep"
    shutil.copytree(PROJECT, dest, ignore=SNAPSHOT_IGNORE, symlinks=True)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "snapshot for the hook tests")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True,
                         capture_output=True, text=True).stdout.strip()
    return dest, rev


@pytest.fixture(scope="module")
def pre_commit_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One pre-commit cache for the module, and no credentials in the hooks' environment."""
    env = {**os.environ, **GIT_ENV,
           "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home"))}
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY", "PRE_COMMIT_COLOR"):
        env.pop(name, None)
    return env


def user_repo(root: Path, files: dict[str, str]) -> Path:
    """A git repository with a gitsleep setup: the clean one, updated by `files`."""
    contents = {".gitsleep.yml": CONFIG, "skills/notes/SKILL.md": SKILL,
                "evals/notes.jsonl": GOOD_TASKS, **files}
    for rel, text in contents.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    return root


def pre_commit(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def run_hooks(root: Path, hook_repo: tuple[Path, str], env: dict[str, str],
              files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path, rev = hook_repo
    hooks = "".join(f"      - id: {hook}\n" for hook in HOOKS)
    config = f"repos:\n  - repo: {path}\n    rev: {rev}\n    hooks:\n{hooks}"
    repo = user_repo(root, {".pre-commit-config.yaml": config, **files})
    return pre_commit(repo, env, "run", "--all-files", "--color", "never")


def test_try_repo_passes_on_a_clean_repository(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_env: dict[str, str]
) -> None:
    repo = user_repo(tmp_path, {})
    result = pre_commit(repo, pre_commit_env, "try-repo", str(hook_repo[0]), "--all-files",
                        "--color", "never")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "gitsleep validate" in result.stdout and "gitsleep learned block" in result.stdout
    assert "Failed" not in result.stdout


def test_clean_repository_passes_both_hooks(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_env: dict[str, str]
) -> None:
    result = run_hooks(tmp_path, hook_repo, pre_commit_env, {})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("Passed") == 2


@pytest.mark.parametrize(
    ("case", "files", "failing", "expected"),
    [
        ("broken regex",
         {"evals/notes.jsonl": GOOD_TASKS + task("v2", "val", judge={
             "kind": "rule", "checks": [{"op": "regex", "arg": "[Cc]onfidence(:"}]})},
         "gitsleep validate",
         "evals/notes.jsonl:4: GS123 task 'v2': check 1: invalid regex"),
        ("duplicate id",
         {"evals/notes.jsonl": GOOD_TASKS + task("t1", "train", prompt="Other.")},
         "gitsleep validate",
         "evals/notes.jsonl:4: GS112 duplicate task id 't1' (first at evals/notes.jsonl:1)"),
        ("corrupt learned block",
         {"skills/notes/SKILL.md": SKILL.replace(END, "- a rule\n" + START + "\n" + END)},
         "gitsleep learned block",
         "skills/notes/SKILL.md:10: GS210 nested learned-block markers"),
        ("planted token",
         {"evals/notes.jsonl": GOOD_TASKS + task("v3", "val", prompt="Log in with gh"
                                                 + "p_" + "Z9y8X7w6" * 5 + " please.")},
         "gitsleep validate",
         "evals/notes.jsonl:4: GS300 contains what looks like a GitHub token"),
    ],
)
def test_hooks_fail_with_their_message(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_env: dict[str, str],
    case: str, files: dict[str, str], failing: str, expected: str,
) -> None:
    result = run_hooks(tmp_path, hook_repo, pre_commit_env, files)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    failed = [line.split(".")[0] for line in result.stdout.splitlines()
              if line.endswith("Failed")]
    assert failing in failed, output
    assert expected in output, output
    assert "Z9y8X7w6" not in output, "a planted secret is never echoed"


def test_learned_block_hook_takes_a_file_named_like_an_option(
    tmp_path: Path, hook_repo: tuple[Path, str], pre_commit_env: dict[str, str]
) -> None:
    """pre-commit appends the staged names to the entry: `-more.md` was read as the option
    `-m` (exit 2, commit blocked) until the hook's default args ended the options with `--`."""
    result = run_hooks(tmp_path, hook_repo, pre_commit_env, {"-more.md": "# notes\n"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("Passed") == 2
    assert "No such option" not in result.stdout + result.stderr
