"""`gitsleep init`: a working setup in one command, without touching what is already there.

Writes `.gitsleep.yml` (offline backend, so it runs with no key), an example skill with
an empty learned block, example tasks in all three splits, the nightly workflow, and
ignores gitsleep's run artifacts in `.gitignore`. Existing files are kept unless
`--force`; `.gitignore` is only ever appended to.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from gitsleep import paths, repo_paths
from gitsleep.config import config_path
from gitsleep.errors import UsageError

SKILL_PATH = "skills/example-skill/SKILL.md"
TASKS_PATH = "evals/example-skill/tasks.jsonl"
WORKFLOW_PATH = ".github/workflows/gitsleep.yml"
IGNORED = (".gitsleep/runs/", ".gitsleep/cache/")


def template(name: str) -> bytes:
    """A file shipped in `gitsleep/templates/`."""
    return (resources.files("gitsleep") / "templates" / name).read_bytes()


def workflow_template() -> bytes | None:
    """The nightly workflow shipped with the examples, or None if this install lacks it."""
    try:
        source = paths.examples_dir() / "workflows" / "gitsleep-nightly.yml"
        return source.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


def write_file(target: Path, content: bytes, *, force: bool) -> str:
    """Write `content` unless the file exists (or replace it with `force`); say what happened."""
    if target.exists() or target.is_symlink():
        if not force:
            return "exists, kept"
        target.unlink()  # never write through a symlink into another place
        target.write_bytes(content)
        return "replaced"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return "created"


def ensure_ignored(gitignore: Path, entries: tuple[str, ...] = IGNORED) -> list[str]:
    """Append the entries `.gitignore` lacks; existing bytes stay exactly as they were."""
    data = gitignore.read_bytes() if gitignore.exists() else b""
    present = {line.strip() for line in data.decode("utf-8", "replace").splitlines()}
    covering = {".gitsleep", ".gitsleep/", "/.gitsleep", "/.gitsleep/"}
    if present & covering:
        return []
    missing = [e for e in entries if not present & {e, e.rstrip("/"), "/" + e, "/" + e.rstrip("/")}]
    if not missing:
        return []
    newline = b"\r\n" if b"\r\n" in data else b"\n"
    lines = [b"# gitsleep run diagnostics and response cache"] + [e.encode() for e in missing]
    prefix = newline if data and not data.endswith(b"\n") else b""
    with gitignore.open("ab") as handle:
        handle.write(prefix + newline.join(lines) + newline)
    return missing


def write_problem(root: Path, target: Path, *, append: bool, contained: bool) -> str | None:
    """Why `init` must not write `target`, or None. Checked for every file before any
    is written, so init does all of its work or none.

    `contained`: the write must resolve inside `root` (a committed `skills` or
    `.gitignore` link must not carry it elsewhere). `append`: the file is written through
    (`.gitignore`), not replaced.
    """
    rel = _shown(root, target)
    folder = root
    for part in target.relative_to(root).parts[:-1]:
        folder = folder / part
        if folder.is_symlink() and not folder.exists():
            return f"{rel}: {_shown(root, folder)} is a broken symlink or a symlink loop"
        if folder.exists() and not folder.is_dir():
            return (f"{rel}: {_shown(root, folder)} is a file, not a folder: move it away, "
                    "then run init again")
    try:
        real = repo_paths.real_path(target if append else target.parent)
    except repo_paths.SymlinkLoop:
        return f"{rel}: is a symlink loop ({repo_paths.LOOP}): remove the link"
    if contained and not real.is_relative_to(repo_paths.real_path(root)):
        return (f"{rel}: leads outside the repository (to {real}) through a symlink: "
                "init writes only inside the repository; remove the link")
    if target.is_dir() and not target.is_symlink():
        return f"{rel}: is a folder, not a file: move it away, then run init again"
    return None


def _inside_git_repo(path: Path) -> bool:
    return any((p / ".git").exists() for p in (path.resolve(), *path.resolve().parents))


@click.command("init")
@click.option("--force", is_flag=True, help="Replace files that already exist.")
@click.pass_context
def command(ctx: click.Context, force: bool) -> None:
    """Write .gitsleep.yml, an example skill and tasks, and the nightly workflow."""
    obj = ctx.obj or {}
    try:
        repo = repo_paths.real_path(Path(obj.get("repo") or "."))
    except repo_paths.SymlinkLoop:
        raise UsageError(f"--repo {obj.get('repo')}: is a symlink loop") from None
    cfg = config_path(repo, obj.get("config"))
    planned: list[tuple[Path, bytes | None]] = [
        (cfg, template("gitsleep.yml")),
        (repo / SKILL_PATH, template("SKILL.md")),
        (repo / TASKS_PATH, template("tasks.jsonl")),
        (repo / WORKFLOW_PATH, workflow_template()),
    ]
    gitignore = repo / ".gitignore"
    checks = [(target, False, target != cfg or not obj.get("config"))
              for target, content in planned if content is not None]
    for target, append, contained in [*checks, (gitignore, True, True)]:
        if target.is_relative_to(repo):
            problem = write_problem(repo, target, append=append, contained=contained)
        else:  # an explicit --config elsewhere: the user chose the place
            problem = write_problem(target.parent, target, append=False, contained=False)
        if problem:
            raise UsageError(problem)
    for target, content in planned:
        shown = _shown(repo, target)
        if content is None:
            click.echo(f"skipped {shown}: this install has no workflow template", err=True)
            continue
        click.echo(f"{shown}: {write_file(target, content, force=force)}")
    added = ensure_ignored(gitignore)
    if added:
        click.echo(f".gitignore: added {', '.join(added)}")
    else:
        click.echo(".gitignore: already ignores gitsleep's run files")

    config_flag = f" --config {obj['config']}" if obj.get("config") else ""
    click.echo("\nNext steps:")
    if not _inside_git_repo(repo):
        click.echo("  0. git init   (gitsleep works on branches of a git repository)")
    click.echo(f"  1. gitsleep{config_flag} validate               "
               "check the setup (offline, no model calls)")
    click.echo(f"  2. gitsleep{config_flag} consolidate --dry-run  "
               "one epoch with the offline simulator, nothing committed")
    click.echo("  3. replace the example skill and tasks with your own, then in .gitsleep.yml set "
               "`backend: openai` and `model:`, and export OPENAI_API_KEY")
    click.echo("  4. commit the files; the workflow runs nightly and opens a pull request "
               "when the held-out score improves")


def _shown(repo: Path, target: Path) -> str:
    """`target` relative to the repository as written (no link followed), else in full."""
    try:
        return target.relative_to(repo).as_posix()
    except ValueError:
        return str(target)
