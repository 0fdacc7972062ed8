"""Repository validation: everything `gitsleep validate` checks without a model.

Checks the config, every task file (formats, judges, splits, leaks), the skill and
memory documents (UTF-8, frontmatter, learned-block integrity and size) and looks for
secrets in task files, which are sent to a model provider. It makes no network call and
never imports the model, git or forge clients. The CLI command is
`gitsleep.commands.validate_cmd`, which prints what `validate` (below) returns; `prepare`
reads `frontmatter_problems` from here.
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gitsleep.base.errors import EXIT_OK, EXIT_PROBLEMS, UsageError
from gitsleep.base.problems import (
    ERROR,
    WARNING,
    FileProblem,
    Problem,
    compose_yaml,
    construct_yaml,
    read_text,
)
from gitsleep.core import noise
from gitsleep.core.documents import block_problems
from gitsleep.core.honesty import presence_problems
from gitsleep.core.models import Task
from gitsleep.core.sandbox import backend_problem as workspace_backend_problem
from gitsleep.core.scores import SMALL_SPLIT, small_splits
from gitsleep.inputs import catalog, repo_paths, tool_checks
from gitsleep.inputs.agent_view import import_view
from gitsleep.inputs.config import (
    CONFIG_NAME,
    KEY_MAX_COST,
    AgentEntryConfig,
    Config,
    ConfigError,
    SkillConfig,
    apply_overrides,
    config_path,
    field_lines,
    key_path,
    load_config,
)
from gitsleep.inputs.tasks import check_skill_tasks, skill_problems
from gitsleep.sandbox.check_program import night_commands

FRONTMATTER_NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*\Z")
DEFAULT_BLOCK_LIMITS = (40, 4000)  # max_lines, max_chars when there is no config

# Token shapes worth refusing in files that are sent to a model provider. The message
# names the kind only, never the value.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("a GitHub token",
     re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a Slack token", re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{10,}")),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("a JSON Web Token",
     re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
)
SECRET_ENV_VARS = ("GITHUB_TOKEN", "GH_TOKEN")
MIN_SECRET_LENGTH = 8


@dataclass
class Report:
    """What a validation run found and how much it looked at."""

    problems: list[Problem] = field(default_factory=list)
    skills: int = 0
    tasks: int = 0
    files: int = 0
    splits: dict[str, dict[str, int]] = field(default_factory=dict)  # skill -> split -> n
    commands: list[str] = field(default_factory=list)  # every check command a night runs

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.is_error)

    @property
    def warnings(self) -> int:
        return len(self.problems) - self.errors


def validate_repo(repo_root: Path, config: Config, env: Mapping[str, str],
                  config_file: Path | None = None) -> Report:
    """Every problem in the repository's gitsleep setup, in config order."""
    report = Report(skills=len(config.skills))
    problems: list[Problem] = path_problems(repo_root, config,
                                            config_file or repo_root / CONFIG_NAME, env)
    seen_docs: set[str] = set()
    seen_task_files: set[str] = set()
    secrets = secret_values(config, env)
    limits = (config.learned_block.max_lines, config.learned_block.max_chars)
    # Skills that list the same task files get the same tasks and file problems: parse them
    # once (1,500 skills naming one file parsed it 1,500 times); each skill's own problems
    # (package, split sizes: they name the skill) are found for every skill. A list naming a
    # file twice is left out: its GS001 line names the skill.
    parsed: dict[tuple[tuple[str, str], ...], tuple[list[Task], list[Problem]]] = {}
    for skill in config.skills:
        key = tuple((entry.path, entry.split) for entry in skill.tasks)
        if key not in parsed:
            tasks, task_problems = check_skill_tasks(repo_root, skill)
            if len({path for path, _ in key}) == len(key):
                own = set(skill_problems(repo_root, skill, tasks, task_problems))
                parsed[key] = (tasks, [p for p in task_problems if p not in own])
        else:
            tasks, shared = parsed[key]
            task_problems = shared + skill_problems(repo_root, skill, tasks, shared)
        report.tasks += len(tasks)
        report.splits[skill.name] = {split: sum(1 for t in tasks if t.split == split)
                                     for split in ("train", "val", "test")}
        problems.extend(task_problems)
        problems.extend(expect_problems(repo_root, config, tasks))
        problems.extend(presence_problems(tasks))  # rules the checks cannot see through
        report.commands.extend(night_commands(skill.name, tasks))  # what a night would run
        problems.extend(workspace_backend_problems(config, env, tasks))
        problems.extend(trace_problems(repo_root, config, env, skill, tasks))
        for entry in skill.tasks:
            if entry.path not in seen_task_files:
                seen_task_files.add(entry.path)
                problems.extend(secret_problems(repo_root / entry.path, entry.path, secrets))
        for target, rel in skill.documents().items():
            if rel not in seen_docs:
                seen_docs.add(rel)
                problems.extend(document_problems(repo_root, rel, limits,
                                                  frontmatter=target == "skill"))
    # problems found about the config outside its own checks name it by its default name:
    # name the file this config was read from (`--config ci/gitsleep.yml`)
    shown = repo_relative(repo_root, str(config_file or repo_root / CONFIG_NAME))
    problems = [p._replace(path=shown) if p.path == CONFIG_NAME else p for p in problems]
    report.problems = list(dict.fromkeys(problems))  # a file shared by skills reports once
    report.files = len(seen_docs) + len(seen_task_files)
    return report


def expect_problems(repo_root: Path, config: Config, tasks: list[Task]) -> list[Problem]:
    """GS174 for a near miss whose `expect` names no skill of the catalog (a typo, or a
    sibling the harness would not load): the gate could not tell when it loses it."""
    expecting = [t for t in tasks if t.trigger and t.trigger.expect]
    if not expecting:
        return []
    names = sorted(e.name for e in catalog.build(repo_root, config))
    return [Problem(t.source, t.line, "GS174", WARNING,
                    f"trigger task {t.id!r} expects {t.trigger.expect!r}, which is no skill of "
                    f"the catalog ({', '.join(names) or 'none'}): fix the name, or list that "
                    "skill in .gitsleep.yml or under .claude/skills/")
            for t in expecting if t.trigger and t.trigger.expect not in names]


def workspace_backend_problems(config: Config, env: Mapping[str, str],
                               tasks: list[Task]) -> list[Problem]:
    """GS136 for each workspace task when the backend that answers (GITSLEEP_BACKEND
    applied) cannot work in a folder: an agent CLI (`backend: command`) and the offline
    simulator can."""
    if not any(t.workspace for t in tasks):
        return []
    try:
        answering = apply_overrides(config, env).backends()[0]
    except UsageError:
        return []  # GS005 already says why the config cannot run
    if answering in ("command", "offline"):
        return []
    return [Problem(t.source, t.line, "GS136", ERROR,
                    workspace_backend_problem(t, answering, located=False))
            for t in tasks if t.workspace]


def trace_problems(repo_root: Path, config: Config, env: Mapping[str, str],
                   skill: SkillConfig, tasks: list[Task]) -> list[Problem]:
    """GS160-GS162 (`gitsleep.inputs.tool_checks`) with the backend that answers."""
    if not skill.tools and not any(t.tools or t.judge.reads_trace for t in tasks):
        return []
    try:
        answering = apply_overrides(config, env).backends()[0]
    except UsageError:
        return []  # GS005 already says why the config cannot run
    traces: bool = True
    mapped: tuple[str, ...] = ()
    if answering == "command":  # an agent CLI: what its output says it called
        try:
            spec = apply_overrides(config, env).agent_spec(skill.name)
        except UsageError:
            return []
        traces, mapped = bool(spec.trace), tuple(name for _, name in spec.tool_names)
    return tool_checks.tool_problems(repo_root, tasks, [t.spec() for t in skill.tools or ()],
                                     answering=answering, mapped=mapped, traces=traces)


# --- paths that alias or lead out ----------------------------------------------------------


def runnable_problem(config: Config, env: Mapping[str, str]) -> Problem | None:
    """A config that loads but cannot run (`backend: openai` with no model), as the run
    would see it: GITSLEEP_BACKEND / GITSLEEP_MODEL from the environment applied. Without
    this the pre-commit hook passed it and the nightly job stopped with exit 2."""
    try:
        apply_overrides(config, env).models()
    except UsageError as exc:
        return Problem(CONFIG_NAME, None, "GS005", ERROR, str(exc))
    return None


def agent_program_problems(config: Config, env: Mapping[str, str]
                           ) -> list[tuple[tuple[Any, ...], str, str]]:
    """(key path, severity, message) for each agent program that cannot be started where
    the agent runs: a fresh temporary folder per call, not the repository. A relative
    path (`./tools/agent.py`) never works there (an error); a program missing on this
    machine may be installed on the one that runs the nights (a warning). The top-level
    `agent:` when a backend is `command`, and each command agent of `agents:`."""
    try:
        config = apply_overrides(config, env)
        uses_agent = "command" in config.backends() and (
            config.backend != "command" or "command" in config.answer_backends())
    except UsageError:
        return []  # GS005 already says why the config cannot run
    found = []
    if uses_agent and config.agent is not None:
        found.append((("agent", "command"), "agent.command",
                      config.agent.filled(config.model).get("command")))
    lists: list[tuple[tuple[Any, ...], list[AgentEntryConfig] | None]] = [
        (("agents",), config.agents)] + [
        (("skills", i, "agents"), s.agents) for i, s in enumerate(config.skills)]
    for loc, agents in lists:
        for index, entry in enumerate(agents or []):
            if entry.agent is not None:
                where = f"{key_path((*loc, index))}.agent.command"
                found.append(((*loc, index, "agent"), where,
                              entry.agent.filled(entry.model).get("command")))
    out = []
    for loc, where, command in found:
        problem = _program_problem(str((command or [""])[0]), where)
        if problem:
            out.append((loc, *problem))
    return out


def _program_problem(program: str, where: str) -> tuple[str, str] | None:
    if not program:
        return None
    if "/" not in program:
        if shutil.which(program) is None:
            return WARNING, (f"{where}: program {program!r} is not on PATH here: install "
                             f"it where gitsleep runs the nights, or fix {where}")
        return None
    if not program.startswith("/"):
        return ERROR, (f"{where}: program {program!r} is a relative path, but the agent "
                       "runs in a fresh temporary folder, not in the repository, so it is not "
                       "found: put the program on PATH (in a workflow: echo \"$PWD/tools\" >> "
                       "\"$GITHUB_PATH\") and name it bare, or use an absolute path")
    if not Path(program).is_file():
        return WARNING, (f"{where}: program {program!r} does not exist here: install it "
                         f"where gitsleep runs the nights, or fix {where}")
    return None


def path_problems(repo_root: Path, config: Config, config_file: Path,
                  env: Mapping[str, str] | None = None) -> list[Problem]:
    """Configured paths that are one file (GS002), documents behind a link (GS003), and
    gitsleep's own folders led out of the repository by a link (GS004)."""
    shown = repo_relative(repo_root, str(config_file))
    line_of = field_lines(config_file)  # parsed once, however many issues name a line
    unrunnable = runnable_problem(config, env or {})
    if unrunnable:
        unrunnable = Problem(shown, line_of(("backend",)), "GS005", ERROR, unrunnable.message)
    else:
        unpriced = config.price_problem(apply_overrides(config, env or {}).models())
        if unpriced:
            unrunnable = Problem(shown, line_of(KEY_MAX_COST), "GS005", ERROR, unpriced)
    problems = [Problem(shown, line_of(issue.loc), issue.code, ERROR,
                        issue.message)
                for issue in repo_paths.config_issues(repo_root, config)]
    if unrunnable:
        problems.insert(0, unrunnable)
    for loc, severity, message in agent_program_problems(config, env or {}):
        problems.append(Problem(shown, line_of(loc), "GS006", severity, message))
    led_out = repo_paths.work_dir_problem(repo_root)
    if led_out:
        where, why = led_out
        problems.append(Problem(where, None, "GS004", ERROR,
                                f"{why}: gitsleep writes its cache and run diagnostics here; "
                                "remove the link (the folder is made on the first run)"))
    linked = repo_paths.cache_link_problem(repo_root) if config.cache and not led_out else None
    if linked:
        problems.append(Problem(repo_paths.CACHE_DIR, None, "GS007", ERROR,
                                linked.removeprefix(f"{repo_paths.CACHE_DIR}: ")))
    tracked = sorted(repo_paths.tracked_cache_entries(repo_root))
    if tracked:
        shown_entries = ", ".join(tracked[:3]) + (f" and {len(tracked) - 3} more"
                                                   if len(tracked) > 3 else "")
        problems.append(Problem(repo_paths.CACHE_DIR, None, "GS006", WARNING,
                                f"git tracks {len(tracked)} cache entr"
                                f"{'y' if len(tracked) == 1 else 'ies'} ({shown_entries}): "
                                "gitsleep never reads them (a committed reply is whoever "
                                "committed it, not the model); `git rm -r --cached "
                                f"{repo_paths.CACHE_DIR}` and commit"))
    return problems


# --- documents ---------------------------------------------------------------------------


def document_problems(
    repo_root: Path, rel: str, limits: tuple[int, int], *, frontmatter: bool
) -> list[Problem]:
    """A skill or memory document: readable UTF-8, sound frontmatter, sound learned block."""
    try:
        real = repo_paths.real_path(repo_root / rel)
    except repo_paths.SymlinkLoop:
        return [Problem(rel, None, "GS200", ERROR, f"document cannot be read "
                        f"({repo_paths.LOOP}): replace the link with the file")]
    if not real.is_relative_to(repo_root.resolve()):
        return [Problem(rel, None, "GS200", ERROR,
                        "document points outside the repository (a symlink or '..'); "
                        "keep documents inside the repo")]
    try:
        text = read_text(repo_root / rel)
    except FileProblem as exc:
        code = {"GS100": "GS200", "GS102": "GS201"}.get(exc.code, exc.code)
        return [Problem(rel, exc.line, code, ERROR, f"document {exc.message}")]
    problems = frontmatter_problems(text, rel) if frontmatter else []
    problems.extend(import_problems(repo_root, rel, text))
    for line, message in block_problems(text, limits[0], limits[1]):
        problems.append(Problem(rel, line, "GS210", ERROR, message))
    return problems


def import_problems(repo_root: Path, rel: str, text: str) -> list[Problem]:
    """Claude Code imports (`@AGENTS.md`) the agent's view cannot follow: GS205 warns for
    each one left as written (a home file, a file outside the repository, one too deep),
    GS206 refuses a cycle or a view too large. Imports of files inside the repository are
    followed (`gitsleep.inputs.agent_view`), so they are the agent's text, not a problem."""
    try:
        view = import_view(repo_root, rel, text, "document")
    except UsageError as exc:
        return [Problem(rel, None, "GS206", ERROR, str(exc).removeprefix(f"{rel}: "))]
    return [Problem(skipped.where, skipped.line, "GS205", WARNING, (
        f"imports @{skipped.target} (Claude Code's import syntax): {skipped.why}; the agent "
        "gitsleep scores is not shown it, so copy its text into the repository and import "
        "that (or name it as the skill or memory document)"))
        for skipped in view.skipped]


def frontmatter_problems(text: str, rel: str) -> list[Problem]:
    """YAML frontmatter, when present, must parse (an error: a loader that cannot find its
    end reads the learned block as frontmatter) and should carry a valid name and
    description (warnings: hand-written text gitsleep never edits is no reason to refuse
    to improve the skill; Anthropic's own claude-api skill has a 1,068-character
    description). A byte-order mark before the `---` is skipped, as `read_text` does."""
    lines = text.removeprefix("\ufeff").split("\n")
    if lines[0].rstrip("\r") != "---":
        return []
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        return [Problem(rel, 1, "GS202", ERROR,
                        "frontmatter opens with '---' but never closes: add a '---' line")]
    try:
        node = compose_yaml("\n".join(lines[1:end]))
        data = construct_yaml(node) if node is not None else {}
    except FileProblem as exc:
        line = exc.line + 1 if exc.line else 1
        return [Problem(rel, line, "GS202", ERROR, f"frontmatter: {exc.message}")]
    if not isinstance(data, dict):
        return [Problem(rel, 2, "GS202", ERROR, "frontmatter must be a mapping of keys")]

    def line_of(key: str) -> int:
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if getattr(key_node, "value", None) == key:
                    return int(key_node.start_mark.line) + 2  # 1-based, and the '---'
        return 1

    problems = []
    name = data.get("name")
    if name is None:
        problems.append(Problem(rel, 1, "GS203", WARNING,
                                "frontmatter has no 'name': add `name: <skill-name>`"))
    elif not (isinstance(name, str) and len(name) <= 64 and FRONTMATTER_NAME_RE.match(name)):
        problems.append(Problem(rel, line_of("name"), "GS203", WARNING,
                                f"frontmatter name {name!r} must be 1-64 lowercase letters, "
                                "digits and single hyphens"))
    description = data.get("description")
    still = (" (a warning: agents that load skills by it may skip this one; gitsleep still "
             "improves the skill and never edits the description)")
    if description is None:
        problems.append(Problem(rel, 1, "GS204", WARNING,
                                "frontmatter has no 'description': say what the skill does "
                                f"and when to use it{still}"))
    elif not isinstance(description, str):
        problems.append(Problem(rel, line_of("description"), "GS204", WARNING,
                                "frontmatter description must be text (got a "
                                f"{type(description).__name__}): write it as one line of "
                                f"text{still}"))
    elif not 1 <= len(description.strip()) <= 1024:
        size = len(description.strip())
        fix = "shorten it to 1024 or fewer" if size else "say what the skill does in 1-1024"
        problems.append(Problem(rel, line_of("description"), "GS204", WARNING,
                                f"frontmatter description is {size} characters, the Agent "
                                f"Skills limit is 1-1024: {fix} characters{still}"))
    return problems


# --- secrets -----------------------------------------------------------------------------


def secret_values(config: Config, env: Mapping[str, str]) -> dict[str, str]:
    """Env var name -> value, for the credentials gitsleep itself may be handed."""
    values = {}
    for name in (config.api_key_env, *SECRET_ENV_VARS):
        value = (env.get(name) or "").strip()
        if len(value) >= MIN_SECRET_LENGTH:
            values[name] = value
    return values


def secret_problems(path: Path, rel: str, values: Mapping[str, str]) -> list[Problem]:
    """Token-shaped strings and known credential values in one task file."""
    try:
        text = read_text(path)
    except FileProblem:
        return []  # the task checks already report unreadable files
    hits: dict[tuple[int, str], None] = {}  # (line, what) in order found, no repeats
    for kind, pattern in SECRET_PATTERNS:
        for match in pattern.finditer(text):
            token = match.group(0)
            if kind == "an OpenAI API key" and not re.search(r"[0-9A-Z]", token[3:]):
                continue  # words like sk-learn-pipeline-settings, not a key
            hits[(text.count("\n", 0, match.start()) + 1, f"what looks like {kind}")] = None
    for name, value in values.items():
        start = text.find(value)
        while start != -1:
            hits[(text.count("\n", 0, start) + 1, f"the value of ${name}")] = None
            start = text.find(value, start + len(value))
    return [
        Problem(rel, line, "GS300", ERROR,
                f"contains {what}: remove it from the task file (and rotate the credential)")
        for line, what in sorted(hits)
    ]


# --- learned blocks only (the pre-commit hook for staged Markdown) -------------------------


def learned_block_report(repo_root: Path, cfg: Path, paths: Iterable[str]) -> Report:
    """Learned-block problems in the given Markdown files (all documents when none given).

    With a config, only its skill and memory documents are checked, so a README that
    quotes the markers is left alone; without one, every given file is.
    """
    limits = DEFAULT_BLOCK_LIMITS
    targets: set[str] | None = None
    given = [repo_relative(repo_root, p) for p in paths]
    if cfg.exists():
        config = load_config(cfg)
        limits = (config.learned_block.max_lines, config.learned_block.max_chars)
        targets = {rel for skill in config.skills for rel in skill.documents().values()}
    elif not given:
        raise UsageError(f"{cfg}: not found: pass the Markdown files to check, "
                         "or run `gitsleep init`")
    files = given or sorted(targets or ())
    if targets is not None:
        files = [f for f in files if f in targets]
    report = Report(files=len(files))
    for rel in dict.fromkeys(files):
        try:
            text = read_text(repo_root / rel)
        except FileProblem as exc:
            report.problems.append(Problem(rel, exc.line, "GS200" if exc.code == "GS100"
                                           else exc.code, ERROR, f"document {exc.message}"))
            continue
        for line, message in block_problems(text, limits[0], limits[1]):
            report.problems.append(Problem(rel, line, "GS210", ERROR, message))
    return report


def repo_relative(repo_root: Path, given: str) -> str:
    """A path as the config spells it: relative to the repo root, forward slashes."""
    path = Path(given)
    absolute = path if path.is_absolute() else Path.cwd() / path
    try:
        return repo_paths.real_path(absolute).relative_to(repo_root.resolve()).as_posix()
    except (ValueError, OSError, repo_paths.SymlinkLoop):
        return path.as_posix()  # outside, or a loop: the reader says what is wrong


# --- the command ---------------------------------------------------------------------------


def split_warnings(splits: Mapping[str, Mapping[str, int]]) -> list[tuple[str, str, str]]:
    """(skill, code, message) for each split too small to trust: no held-out tasks (val
    decides), or fewer than SMALL_SPLIT val or held-out tasks."""
    found = []
    for skill, n in splits.items():
        if not n["test"]:
            # A warning, not an error: shared/spec/interface.md promises that val decides
            # when no task is in `test` (and the PR body says so).
            found.append((skill, "GS150", "no held-out (test) tasks, so val decides whether "
                          "a pull request opens and its gain is not checked on unseen tasks; "
                          "add a task file with `split: test`"))
        small = small_splits(n["val"], n["test"])
        if small:
            tiny = noise.too_small_note({"val": n["val"], "held-out": n["test"]})
            found.append((skill, "GS151", f"{' and '.join(small)}: fewer than {SMALL_SPLIT} "
                          "tasks, so one task moves the score a lot and a decision on it is "
                          "a hint; add tasks (or move some from train)"
                          + (f"; {tiny}" if tiny else "")))
    return found


def split_lines(splits: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Per skill, its split sizes, and a warning when val or held-out is too small to trust."""
    warned = split_warnings(splits)
    lines = []
    for skill, n in splits.items():
        lines.append(f"{skill}: {n['train']} train, {n['val']} val, {n['test']} held-out (test)")
        for _, code, message in (w for w in warned if w[0] == skill):
            lines.append(f"{skill}: warning: {message}" if code == "GS150"
                         else f"  warning: {message}")
    return lines


# --- the command's one call ------------------------------------------------------------------


@dataclass
class Validation:
    """What `gitsleep validate` reports: the problems, the split sizes (lines for stderr,
    and their warnings as problems for `--json`), the commands a night would run, and the
    config error that stopped it (exit 2), if one did."""

    problems: list[Problem]
    split_problems: list[Problem]
    sizes: list[str]
    commands: list[str]
    scope: str
    key_env: list[str]
    stopped: ConfigError | None = None

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.is_error)

    @property
    def warnings(self) -> int:
        return len(self.problems) - self.errors + len(self.split_problems)

    @property
    def exit_code(self) -> int:
        if self.stopped is not None:
            return self.stopped.exit_code
        return EXIT_PROBLEMS if self.errors else EXIT_OK

    def summary(self) -> str:
        if self.problems or self.warnings:
            return f"{self.errors} error(s), {self.warnings} warning(s) ({self.scope})"
        return f"no problems ({self.scope})"


def _absent(path: Path) -> bool:
    """Nothing at `path`. A link that loops or dangles is there (its reader says what is
    wrong with it), and so is a path git or the OS cannot follow for another reason."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def check_given_paths(repo_root: Path, paths: Iterable[str]) -> None:
    """A PATH that does not exist (from here, or in the repository) is a usage error
    (exit 2), not a clean bill: a typo must not pass a pre-commit hook or CI."""
    for given in paths:
        if _absent(Path(given)) and _absent(repo_root / given):
            raise UsageError(f"{given}: no such file: `gitsleep validate PATH` checks files "
                             "that exist (check the spelling, or leave PATH out to check "
                             "everything)")


def validate(repo_root: Path, config_arg: str | None, paths: tuple[str, ...],
             env: Mapping[str, str], *, learned_block_only: bool = False) -> Validation:
    """Everything `gitsleep validate` checks. A config that cannot be read is returned as
    the one problem (`stopped`); a PATH that does not exist raises UsageError."""
    check_given_paths(repo_root, paths)
    cfg = config_path(repo_root, config_arg)
    try:
        if learned_block_only:
            report = learned_block_report(repo_root, cfg, paths)
            return Validation(report.problems, [], [], [], f"{report.files} document(s)", [])
        config = load_config(cfg)
    except ConfigError as exc:
        shown = repo_relative(repo_root, exc.path)
        return Validation([Problem(shown, exc.line, "GS000", ERROR, exc.message)], [], [], [],
                          "the config", [], stopped=exc)
    report = validate_repo(repo_root, config, env, cfg)
    shown = repo_relative(repo_root, str(cfg))
    if paths:
        wanted = {repo_relative(repo_root, p) for p in paths} | {shown}
        report.problems = [p for p in report.problems if p.path in wanted]
    line_of = field_lines(cfg)
    index = {skill.name: i for i, skill in enumerate(config.skills)}
    warned = [Problem(shown, line_of(("skills", index[skill])), code, WARNING,
                      f"skill {skill}: {message}")
              for skill, code, message in split_warnings(report.splits)]
    return Validation(report.problems, warned, split_lines(report.splits), report.commands,
                      f"{report.skills} skill(s), {report.tasks} task(s), "
                      f"{report.files} file(s)", [config.api_key_env])
