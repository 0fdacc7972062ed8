"""What every command needs before it runs: the config, the inputs, the backend, the cache.

Where things are read from:
- the config comes from the file given (default `<repo>/.gitsleep.yml` in the working tree);
- with git (`consolidate`), documents and task files come from the base commit, checked
  out in a temporary worktree, so the result is reproducible from the commit alone;
- with `--dry-run`, `eval` and `doctor`, they come from the working tree as it is.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gitsleep.base.errors import UsageError
from gitsleep.base.logs import use_redactor
from gitsleep.base.problems import MAX_FILE_BYTES
from gitsleep.base.redact import Redactor
from gitsleep.base.terminal import visible
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import StepHook, Tick, no_tick
from gitsleep.core.documents import find_block
from gitsleep.core.models import ProgressLines, Task
from gitsleep.git_forge import task_trees
from gitsleep.inputs import repo_paths
from gitsleep.inputs.agent_view import import_view
from gitsleep.inputs.config import Config, SkillConfig, apply_overrides, config_path, load_config
from gitsleep.inputs.tasks import load_skill_tasks
from gitsleep.inputs.validation import frontmatter_problems

if TYPE_CHECKING:
    from gitsleep.core.ports import Backend



@dataclass
class Setup:
    """What every command needs: where the repo is, its config, env, redactor, output."""

    repo: Path
    config_file: Path
    config: Config
    env: Mapping[str, str]
    redactor: Redactor
    progress: ProgressLines
    steps: StepHook | None = None  # per-answer progress of a pass (the CLI's bar or lines)

    @classmethod
    def load(
        cls,
        repo: str | Path,
        config: str | None,
        *,
        env: Mapping[str, str] | None = None,
        backend: str | None = None,
        model: str | None = None,
        progress: ProgressLines | None = None,
        steps: StepHook | None = None,
    ) -> Setup:
        from gitsleep.sandbox.processes import install_signal_handlers

        install_signal_handlers()  # SIGTERM/SIGHUP/SIGINT kill running agents, then unwind
        env = dict(os.environ if env is None else env)
        path = config_path(repo, config)
        loaded = apply_overrides(load_config(path), env, backend=backend, model=model)
        redactor = Redactor.from_env(env, [loaded.api_key_env, *loaded.agent_env_refs()])
        use_redactor(redactor)
        return cls(Path(repo).resolve(), path, loaded, env, redactor, progress or _stderr,
                   steps)

    def skills(self, names: tuple[str, ...] | list[str] | None) -> list[SkillConfig]:
        if not names:
            return list(self.config.skills)
        return [self.config.skill(n) for n in names]

    def say(self, line: str) -> None:
        """A progress line: redacted, its control characters shown, never run."""
        self.progress(visible(self.redactor.redact(line)))

    def counter(self, label: str, total: int) -> Tick:
        """A tick per answer of a pass on the edge's display; the label is redacted first."""
        return self.steps(visible(self.redactor.redact(label)), total) if self.steps else no_tick


_STDERR_LOCK = threading.Lock()  # the worker threads say their progress at the same time


def _stderr(line: str) -> None:
    """A whole progress line at once: print() writes the line and its newline apart, so
    two workers' lines glued together (`demo`, 7 runs of 15)."""
    with _STDERR_LOCK:
        sys.stderr.write(f"{line}\n")
        sys.stderr.flush()


# -- reading inputs -----------------------------------------------------------------------


def read_document(root: Path, relative: str, *, field_name: str) -> str:
    """A document's exact text (bytes decoded as UTF-8, line endings untouched)."""
    path = root / relative
    try:
        resolved = repo_paths.real_path(path)
    except repo_paths.SymlinkLoop:
        raise UsageError(f"{relative}: cannot read {field_name}: {repo_paths.LOOP}; "
                         "replace the link with the file") from None
    if not resolved.is_relative_to(root.resolve()):
        raise UsageError(f"{relative}: {field_name} points outside the repository "
                         "(a symlink or '..'); keep documents inside the repo")
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"{relative}: {field_name} is a directory (Is a directory); "
                             "point the config at a Markdown file")
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device would block or never end
            raise UsageError(f"{relative}: {field_name} is not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise UsageError(f"{relative}: {field_name} is {info.st_size / 1_048_576:.1f} MB; "
                             f"documents over {MAX_FILE_BYTES // 1_048_576} MB are refused")
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{relative}: {field_name} does not exist; fix the path in "
                         ".gitsleep.yml or create the file") from None
    except OSError as exc:
        raise UsageError(f"{relative}: cannot read {field_name}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")  # no BOM stripping, no newline translation: exact bytes
    except UnicodeDecodeError as exc:
        raise UsageError(f"{relative}: {field_name} is not UTF-8 (byte {exc.start}); "
                         "save it as UTF-8") from None
    find_block(text, where=relative)  # a corrupt learned block stops here, before any call
    return text


class SkillInputs(NamedTuple):
    """What a night of one skill reads: its usable tasks (workspaces pinned to their git
    trees) and its documents (`skill`, `memory` or None)."""

    tasks: list[Task]
    documents: dict[str, str | None]


def skill_tasks(root: Path, skill: SkillConfig, say: ProgressLines | None = None
                ) -> list[Task]:
    """The tasks a run may use, each workspace folder and the skill's package pinned to
    its git tree at `root`'s HEAD (the base commit's worktree in consolidate): read from
    git, so a fixture edited but not committed is not what the agent gets."""
    tasks = load_skill_tasks(root, skill, say)
    return task_trees.resolve(root, tasks, package=skill.package,
                              tools=[t.spec() for t in skill.tools or ()])


def read_inputs(root: Path, skill: SkillConfig, say: ProgressLines | None = None
                ) -> SkillInputs:
    """The one door to a skill's inputs under `root`: its tasks, then its paths checked
    (the tree read may be the base commit's), then its documents."""
    tasks = skill_tasks(root, skill, say)
    repo_paths.check_skill_paths(root, skill)
    return SkillInputs(tasks, read_documents(root, skill, say))


def read_documents(root: Path, skill: SkillConfig, say: ProgressLines | None = None
                   ) -> dict[str, str | None]:
    """The skill's documents (`skill`, `memory` or None) under `root`, and the texts they
    import (`gitsleep.core.view`: shown to the agent, never edited), refused as a night
    refuses them (a corrupt block, frontmatter `validate` rejects); `say` gets the
    frontmatter warnings."""
    documents: dict[str, str | None] = {
        "skill": read_document(root, skill.skill, field_name="skill document"),
        "memory": read_document(root, skill.memory, field_name="memory document")
        if skill.memory else None,
    }
    # a skill document `validate` refuses (frontmatter that does not parse) stops every
    # command that uses it, before any model call; its warnings (a name or description
    # outside the Agent Skills limits) do not: gitsleep never edits that text

    for role, rel in (("skill", skill.skill), ("memory", skill.memory)):
        text = documents[role]
        if rel is not None and text is not None:  # the agent is shown what they import
            documents.update(import_view(root, rel, text, role).texts)
    for problem in frontmatter_problems(documents["skill"] or "", skill.skill):
        if not problem.is_error:
            if say is not None:
                say(f"{skill.skill}:{problem.line or 1}: warning: {problem.message} "
                    f"(validate: {problem.code})")
            continue
        raise UsageError(f"{skill.skill}:{problem.line or 1}: skill document: "
                         f"{problem.message} (validate: {problem.code})")
    return documents


# -- the model and its cache --------------------------------------------------------------


def backend_for(config: Config, env: Mapping[str, str], skill: str = "",
                purposes: tuple[str, ...] = ("answer", "propose", "judge")) -> Backend:
    """The one door from a config to a backend: the settings read for `skill`, only the
    backends of `purposes` built, each that works in a workspace handed its own source of
    task trees (read from git here, never by the backend). Imported lazily: the openai
    client is slow to import."""
    from gitsleep.backends.select import backend_from_settings
    from gitsleep.git_forge.task_trees import WorkspaceCache
    from gitsleep.inputs.backend_settings import backend_settings

    return backend_from_settings(backend_settings(config, env, skill, purposes), env,
                                 purposes, trees=WorkspaceCache)


def make_backend(setup: Setup, skill: str = "",
                 purposes: tuple[str, ...] = ("answer", "propose", "judge")) -> Backend:
    """The configured backend for the kinds of call a command makes."""
    return backend_for(setup.config, setup.env, skill, purposes)


def make_cache(setup: Setup) -> ResponseCache:
    """The answer cache under `.gitsleep/cache/`. Entries git tracks are left out: a
    committed entry is whatever its author wrote (a pull request could commit the reply
    that makes its regression pass), never an answer this machine got."""
    if not setup.config.cache:
        return ResponseCache()
    directory = repo_paths.writable_dir(setup.repo, repo_paths.CACHE_DIR,
                                        fix="remove the link or set `cache: false`")
    return ResponseCache(directory, ignored=repo_paths.tracked_cache_entries(setup.repo))
