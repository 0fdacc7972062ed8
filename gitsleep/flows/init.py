"""What `gitsleep init` writes: a working setup in one command, without touching what is
already there.

Writes `.gitsleep.yml` (offline backend, so it runs with no key), an example skill with
an empty learned block, example tasks in all three splits, two workflows (the nightly one
and the pull-request review one), and ignores gitsleep's run artifacts in `.gitignore`.
Existing files are kept unless `--force`; `.gitignore` is only ever appended to. Outside
a git repository it writes nothing.
"""

from __future__ import annotations

import json
import re
from importlib import metadata, resources
from pathlib import Path

from gitsleep.base import bundled
from gitsleep.base.errors import UsageError
from gitsleep.git_forge.gitrun import git_out
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import config_path

SKILL_PATH = "skills/example-skill/SKILL.md"
TASKS_PATH = "evals/example-skill/tasks.jsonl"
WORKFLOW_PATH = ".github/workflows/gitsleep.yml"
REVIEW_WORKFLOW_PATH = ".github/workflows/gitsleep-review.yml"  # `gitsleep review` on PRs
IGNORED = (".gitsleep/runs/", ".gitsleep/cache/")


def template(name: str) -> bytes:
    """A file shipped in `gitsleep/templates/`."""
    return (resources.files("gitsleep") / "templates" / name).read_bytes()


def workflow_template(name: str = "gitsleep-nightly.yml") -> bytes | None:
    """The nightly workflow shipped with the examples, or None if this install lacks it."""
    try:
        source = bundled.examples_dir() / "workflows" / name
        return source.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None


_GITHUB_REPO = re.compile(
    r"(?:https://github\.com/|git@github\.com:|ssh://git@github\.com/)"
    r"(?P<repo>[\w.-]+/[\w.-]+?)(?:\.git)?/?$")
# The placeholders the shipped workflow and config template hold until init (or a person)
# fills them in. gitsleep has no release tags yet, so a pin names a commit.
OWNER_REPO = "OWNER/gitsleep"
PLACEHOLDER_REF = "COMMIT_SHA"
_OWNER_STEP = re.compile(
    r"#   1\. Replace OWNER and COMMIT_SHA below.*?\n(?=#   2\.)", re.DOTALL)
_FULL_SHA = re.compile(r"[0-9a-f]{40}")
_COPY_STEP = re.compile(r"# Copy this file to (\S+), then:")
# the placeholder pin's comment, true only while the placeholder is there
_UNPINNED_IGNORE = " # zizmor: ignore[unpinned-uses] placeholders: a commit SHA"
_REF = re.compile(r"[\w][\w.+/-]*")


def github_repo(url: str) -> str | None:
    """`owner/name` from a GitHub clone URL (https, ssh or scp-like), else None."""
    found = _GITHUB_REPO.match(url.strip())
    return found.group("repo") if found else None


def direct_url() -> str | None:
    """pip's record of where this gitsleep was installed from (`direct_url.json`), if any."""
    try:
        return metadata.distribution("gitsleep").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


def recorded_commit(recorded: str | None) -> str | None:
    """The full commit SHA of a `pip install git+...@<rev>` (pip's `vcs_info.commit_id`):
    the one pin that resolves without a release tag. None for a directory, an editable
    checkout, an archive or a wheel: nothing says which commit that was."""
    try:
        data = json.loads(recorded or "")
    except ValueError:
        return None
    vcs = data.get("vcs_info") if isinstance(data, dict) else None
    if not isinstance(vcs, dict) or vcs.get("vcs") != "git":
        return None
    commit = vcs.get("commit_id")
    return commit if isinstance(commit, str) and _FULL_SHA.fullmatch(commit) else None


def installed_commit() -> str | None:
    """The commit this gitsleep was installed from, when pip recorded one."""
    return recorded_commit(direct_url())


def installed_from() -> str | None:
    """The GitHub repository this gitsleep came from: the URL pip recorded for a
    `pip install git+https://github.com/...`, else the origin of the source checkout."""
    recorded = direct_url()
    if recorded:
        try:
            found = github_repo(str(json.loads(recorded).get("url", "")))
        except ValueError:
            found = None
        if found:
            return found
    return origin_repo(Path(__file__).resolve().parent)


def origin_repo(folder: Path) -> str | None:
    """`owner/name` of the GitHub `origin` of the git checkout holding `folder`, if any."""
    url = git_out(folder, "remote", "get-url", "origin")  # gitrun's safe settings, as every call
    return github_repo(url) if url else None


def fill_workflow(content: bytes, action_repo: str | None, ref: str | None = None) -> bytes:
    """The workflow as init writes it: its setup comment says init wrote it, and the
    gitsleep action and requirement name `action_repo` at `ref` (a commit SHA: gitsleep has
    no release tags yet) in place of the OWNER and COMMIT_SHA placeholders it knows."""
    text = _COPY_STEP.sub(r"# `gitsleep init` wrote this file as \1. Before it runs:",
                          content.decode("utf-8"))
    if not action_repo and not ref:
        return text.encode("utf-8")
    pin = f"{action_repo or OWNER_REPO}@{ref or PLACEHOLDER_REF}"
    if ref and _FULL_SHA.fullmatch(ref):  # pinned: zizmor has nothing left to ignore there
        text = text.replace(f"{OWNER_REPO}@{PLACEHOLDER_REF}{_UNPINNED_IGNORE}", pin)
    text = text.replace(f"{OWNER_REPO}@{PLACEHOLDER_REF}", pin)
    left = " and ".join(name for name, known in (("OWNER", action_repo), ("COMMIT_SHA", ref))
                        if not known)
    times = {1: "once", 2: "twice"}.get(text.count(pin), f"{text.count(pin)} times")
    step = (f"#   1. `gitsleep init` set the gitsleep action to {pin} ({times} below)"
            + (f": replace {left} there.\n" if left else ".\n")
            + "#      Pin a full commit SHA (a tag can be moved, a SHA cannot); once gitsleep\n"
              "#      publishes release tags, use `@<the tag's sha> # v<version>`.\n")
    return _OWNER_STEP.sub(step, text).encode("utf-8")


def fill_config(content: bytes, action_repo: str | None, ref: str | None = None) -> bytes:
    """The config template with its `$schema` line (for editors) at `ref` in
    `action_repo`, each where it is known."""
    url = f"{action_repo or OWNER_REPO}/{ref or PLACEHOLDER_REF}/schemas/"
    text = content.decode("utf-8").replace(f"{OWNER_REPO}/{PLACEHOLDER_REF}/schemas/", url)
    return text.encode("utf-8")


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


def set_up(repo_arg: str | None, config_arg: str | None, *, force: bool,
           action_repo: str | None, action_ref: str | None) -> list[tuple[str, bool]]:
    """Write the setup; return what to print, in order, as (line, to stderr). Every file
    is checked before any is written, and outside a git repository nothing is."""
    said: list[tuple[str, bool]] = []

    def say(line: str, err: bool = False) -> None:
        said.append((line, err))

    if action_repo is not None and not re.fullmatch(r"[\w.-]+/[\w.-]+", action_repo):
        raise UsageError(f"--action-repo {action_repo!r} is not owner/repo")
    if action_ref is not None and not _REF.fullmatch(action_ref):
        raise UsageError(f"--action-ref {action_ref!r} is not a commit SHA or tag")
    try:
        repo = repo_paths.real_path(Path(repo_arg or "."))
    except repo_paths.SymlinkLoop:
        raise UsageError(f"--repo {repo_arg}: is a symlink loop") from None
    if not _inside_git_repo(repo):  # refused before anything is written
        raise UsageError(f"{repo}: not inside a git repository: run `git init` there first "
                         "(gitsleep works on branches of a git repository), then "
                         "`gitsleep init`")
    cfg = config_path(repo, config_arg)
    action_repo = action_repo or installed_from()
    action_ref = action_ref or installed_commit()
    workflow = workflow_template()
    planned: list[tuple[Path, bytes | None]] = [
        (cfg, fill_config(template("gitsleep.yml"), action_repo, action_ref)),
        (repo / SKILL_PATH, template("SKILL.md")),
        (repo / TASKS_PATH, template("tasks.jsonl")),
        (repo / WORKFLOW_PATH,
         fill_workflow(workflow, action_repo, action_ref) if workflow else None),
        (repo / REVIEW_WORKFLOW_PATH, fill_workflow(review, action_repo, action_ref)
         if (review := workflow_template("gitsleep-review.yml")) else None),
    ]
    written: dict[Path, str] = {}
    gitignore = repo / ".gitignore"
    checks = [(target, False, target != cfg or not config_arg)
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
            say(f"skipped {shown}: this install has no workflow template", err=True)
            continue
        written[target] = write_file(target, content, force=force)
        say(f"{shown}: {written[target]}")
    added = ensure_ignored(gitignore)
    if added:
        say(f".gitignore: added {', '.join(added)}")
    else:
        say(".gitignore: already ignores gitsleep's run files")

    config_flag = f" --config {config_arg}" if config_arg else ""
    say("\nNext steps:")
    say(f"  1. gitsleep{config_flag} validate               "
        "check the setup (offline, no model calls)")
    say(f"  2. gitsleep{config_flag} consolidate --dry-run  "
        "one epoch with the offline simulator, nothing committed")
    say("  3. replace the example skill and tasks with your own, then in .gitsleep.yml set "
        "`backend: openai` and `model:`, and export OPENAI_API_KEY")
    yours = existing_skills(repo)
    if yours:
        shown = ", ".join(yours[:5]) + (f" and {len(yours) - 5} more" if len(yours) > 5 else "")
        say(f"     Your skills are already here ({shown}): the example sits beside them "
            "only so steps 1-2 run offline; point `skill:` at one of yours, write its "
            f"tasks, and delete {Path(SKILL_PATH).parent.as_posix()}/ and "
            f"{Path(TASKS_PATH).parent.as_posix()}/")
    steps = workflow_steps(written.get(repo / WORKFLOW_PATH), action_repo, action_ref,
                           review=written.get(repo / REVIEW_WORKFLOW_PATH) in WROTE)
    for number, step in enumerate(steps, 4):
        say(f"  {number}. {step}")
    say(pre_commit_snippet(action_repo, action_ref))
    if not action_ref:
        say(f"warning: this gitsleep was not installed from a git commit, so the pins "
            f"init wrote say {PLACEHOLDER_REF}: replace it with the gitsleep commit to "
            "run, or rerun init with --action-ref <sha>", err=True)
    return said


SKILL_FOLDERS = ("skills", ".claude/skills", ".agents/skills")  # where agents keep skills


def existing_skills(repo: Path) -> list[str]:
    """The repository's own SKILL.md files, one folder deep in the places Claude Code and
    other agents keep project skills (the example init writes is not one of them)."""
    found = []
    for folder in SKILL_FOLDERS:
        found += sorted(p.relative_to(repo).as_posix() for p in (repo / folder).glob("*/SKILL.md")
                        if p.is_file() and not p.is_symlink())
    return [path for path in found if path != SKILL_PATH]


def pre_commit_snippet(action_repo: str | None, ref: str | None) -> str:
    """The `.pre-commit-config.yaml` entry for gitsleep's hooks at the same pin."""
    return ("\nTo run gitsleep's checks on every commit, add to .pre-commit-config.yaml:\n"
            "  repos:\n"
            f"    - repo: https://github.com/{action_repo or OWNER_REPO}\n"
            f"      rev: {ref or PLACEHOLDER_REF}\n"
            "      hooks:\n"
            "        - id: gitsleep-validate\n"
            "        - id: gitsleep-learned-block")


WROTE = ("created", "replaced")


def workflow_steps(outcome: str | None, action_repo: str | None,
                   ref: str | None = None, *, review: bool = False) -> list[str]:
    """What is left before the nightly workflow runs, given what init did with it (and
    whether it wrote the review workflow, which holds the same pin once)."""
    if outcome is None:
        return ["commit the files (this install has no workflow template: copy "
                "examples/workflows/gitsleep-nightly.yml from gitsleep's repository)"]
    if outcome == "exists, kept":
        return [f"commit the files; {WORKFLOW_PATH} was kept as it was"]
    files = f"{WORKFLOW_PATH} (twice), {REVIEW_WORKFLOW_PATH} (once)" if review else \
        f"{WORKFLOW_PATH} (twice)"
    if action_repo and ref:
        pin = (f"in {files}, the action is {action_repo}@{ref}, the commit this "
               "gitsleep was installed from (or --action-ref)")
    else:
        left = " and ".join(f"replace {name} with {what}" for name, known, what in (
            ("OWNER", action_repo, "the account that publishes gitsleep"),
            (PLACEHOLDER_REF, ref, "the full SHA of the gitsleep commit to run"))
            if not known)
        pin = (f"in {files} and in the `$schema` line of .gitsleep.yml, "
               f"{left} (`gitsleep init --action-repo owner/gitsleep --action-ref <sha>` "
               "fills them in)")
    return [pin,
            "add the repository secret OPENAI_API_KEY, and allow GitHub Actions to create "
            "pull requests (Settings > Actions > General)",
            "commit the files; the workflow runs nightly and opens a pull request when the "
            "held-out score improves"]


def _shown(repo: Path, target: Path) -> str:
    """`target` relative to the repository as written (no link followed), else in full."""
    try:
        return target.relative_to(repo).as_posix()
    except ValueError:
        return str(target)
