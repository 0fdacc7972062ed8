"""`gitsleep review`, the edges: the base read from git at REF, which skills a change
touched, the exam both sides sit, the pull request the run is for, and its one comment
kept up to date.

The exam (task files, workspace fixtures, judges, the config's scoring settings) comes
from the base: a pull request must not pick the test it is graded on, nor run its own
programs on the reviewer's machine. The base is checked out in a private worktree in the
git directory (detached, no hook runs, removed afterwards); documents are read with
`git cat-file --filters REF:./path` (through `gitrun.git_run`: clean/smudge filters apply,
as for a checkout). The user's tree, index and HEAD stay as they are. The head side is the
working tree's documents, as `gitsleep eval` reads them (in CI, the checked-out
pull-request merge commit). What the head changes in the exam is listed; with
`--trust-head` the head's exam is used instead (its command checks and fixtures run).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gitsleep.base.errors import (
    EXIT_BUDGET,
    EXIT_GIT,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_UNSCORED,
    BackendError,
    BudgetExhausted,
    GitError,
    UsageError,
)
from gitsleep.base.logs import use_redactor
from gitsleep.base.redact import Redactor
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Task
from gitsleep.flows.prepare import (
    Setup,
    make_backend,
    make_cache,
    read_documents,
    skill_tasks,
)
from gitsleep.flows.review import triggers as picks
from gitsleep.flows.review import verdict
from gitsleep.git_forge import gitops, task_trees
from gitsleep.git_forge.forge import Author
from gitsleep.git_forge.gitrun import git_out, git_run
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import CONFIG_NAME, Config, SkillConfig, apply_overrides, load_config
from gitsleep.inputs.tasks import check_skill_tasks

SHALLOW_FIX = ("fetch it (`git fetch origin <ref>`, or `git fetch --unshallow`; in GitHub "
               "Actions use actions/checkout with `fetch-depth: 0`)")
# Keys that change what a night does but not what a score is. Any other difference between
# base and head config is listed as a change to the exam (the base's is what scores); the
# judge and agent a config ends up with are compared too (`judge_model` defaults to
# `optimizer_model`, so that key can change a score through them).
NOT_SCORING_KEYS = frozenset({
    "skills", "workers", "budget", "branch_prefix", "pr", "rounds", "proposals",
    "edit_budget", "rollouts", "learned_block", "prices", "cache", "max_retries", "timeout",
    "max_error_rate", "optimizer_model", "optimizer_backend",
})
SKILL_NOT_SCORING = frozenset({"name", "skill", "memory", "tasks"})
FORK_NOTE = ("This pull request comes from a fork: GitHub gives its workflow runs a "
             "read-only token and no secrets")
TARGET_REFUSAL = (
    "review refuses to run under pull_request_target for a pull request from another "
    "repository, or whose event payload does not name both repositories (that event "
    "gives the run this repository's secrets and a write token, and the pull request's "
    "files would be read and scored with them): run it on `pull_request` (see "
    "docs/review.md)")
BASE_WORKTREE = "gitsleep-review-base"  # names the private worktree of the base commit


@dataclass(frozen=True)
class ReviewOptions:
    base: str
    skills: tuple[str, ...] = ()  # () touched skills; ("all",) every skill
    comment: bool | None = None  # None: comment when on a pull request with a token
    fail_on_regression: bool = False
    pr: int | None = None
    trust_head: bool = False  # score on the head's exam: its checks and fixtures run
    allow_unscored: bool = False  # with fail_on_regression: no verdict is exit 0, not 8
    backend: str | None = None  # --backend / --model, applied to the exam's config
    model: str | None = None


@dataclass(frozen=True)
class Exam:
    """What both sides are scored with: the config and the folder its task paths are read
    in (the base's checkout, or the head's working tree with --trust-head)."""

    root: Path
    config: Config
    trusted_head: bool


@dataclass(frozen=True)
class PullRequestRef:
    """The pull request this run reviews, and whether it comes from a fork."""

    number: int
    fork: bool = False


@dataclass(frozen=True)
class CommentResult:
    """What happened to the PR's one review comment: `created`, `updated` or `none`, with
    why not (`reason`) or what failed (`error`); `to_json` is the `comment` of --json."""

    operation: str
    id: int | None
    url: str | None
    pr: int | None
    reason: str | None = None
    error: str | None = None

    @classmethod
    def none(cls, pr: PullRequestRef | None, *, reason: str | None = None,
             error: str | None = None) -> CommentResult:
        return cls("none", None, None, pr.number if pr else None, reason, error)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"operation": self.operation, "id": self.id,
                                   "url": self.url, "pr": self.pr}
        if self.reason is not None:
            data["reason"] = self.reason
        if self.error is not None:
            data["error"] = self.error
        return data


@dataclass
class ReviewOutcome:
    reviews: list[verdict.SkillReview]
    base_sha: str
    base_label: str
    head_label: str
    notes: list[str]
    body: str
    comment: CommentResult
    exit_code: int = EXIT_OK
    fork_unscored: bool = False
    summary_written: bool = False
    error: str | None = None  # why no verdict was reached (a budget): one line, exit 6
    trusted_head: bool = False
    unscored: list[str] = field(default_factory=list)  # why a change got no verdict
    metric: str = "mixed"  # the exam's gate.metric: what the scores are

    @property
    def not_run(self) -> bool:
        """No verdict: a fork without secrets, or a budget that could not be kept."""
        return self.fork_unscored or self.error is not None


# -- git at REF -----------------------------------------------------------------------------


def resolve_ref(root: Path, ref: str) -> str:
    """REF's commit sha, or one line saying what to fix (exit 2)."""
    if not ref.strip() or ref.startswith("-"):
        raise UsageError(f"--base {ref!r} is not a git revision: pass a branch, tag or commit "
                         "(e.g. --base origin/main)")
    if not git_out(root, "rev-parse", "--show-toplevel").strip():
        raise UsageError(f"{root} is not inside a git repository (run `git init`, or pass "
                         "--repo)")
    sha = git_out(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    if sha:
        return sha
    if git_out(root, "rev-parse", "--is-shallow-repository").strip() == "true":
        raise UsageError(f"--base {ref!r} is not in this shallow clone: {SHALLOW_FIX}")
    raise UsageError(f"--base {ref!r} does not name a commit in this repository (no such "
                     "branch, tag or commit): check the name or fetch it first "
                     "(e.g. --base origin/main)")


def read_at(root: Path, sha: str, relative: str) -> bytes | None:
    """A file's bytes at commit `sha` (path relative to `root`), or None when it is not a
    file there. Clean/smudge filters apply, as for a checkout."""
    done = git_run(root, "cat-file", "--filters", f"{sha}:./{relative}")
    return done.out if done.status == 0 else None


def read_here(root: Path, relative: str) -> bytes | None:
    try:
        return (root / relative).read_bytes()
    except OSError:
        return None


def _differences(base: Any, head: Any, where: str) -> list[str]:
    """Every key path where two config dumps differ."""
    if isinstance(base, dict) and isinstance(head, dict):
        found: list[str] = []
        for key in sorted(set(base) | set(head), key=str):
            found += _differences(base.get(key), head.get(key), f"{where}{key}.")
        return found
    return [] if base == head else [where.rstrip(".") or "(whole file)"]


def _effective(config: Config) -> dict[str, str]:
    """The agent and judge a config ends up with (defaults followed), by role."""
    answer, _, judge_backend = config.backends()
    try:
        agent, _, judge = config.models(("judge",))
    except UsageError as exc:
        agent = judge = f"none ({exc})"
    return {"answer backend": answer, "agent model": agent, "judge backend": judge_backend,
            "judge model": judge}


def config_differences(base: Config, head: Config) -> list[str]:
    """The settings that change scores and differ between base and head: raw keys, then
    the effective agent and judge when only a default moved them."""
    a, b = base.model_dump(mode="json"), head.model_dump(mode="json")
    found = _differences({k: v for k, v in a.items() if k not in NOT_SCORING_KEYS},
                         {k: v for k, v in b.items() if k not in NOT_SCORING_KEYS}, "")
    before, after = _effective(base), _effective(head)
    found += [f"effective {role}" for role in before if before[role] != after[role]]
    return found


def skill_differences(base: SkillConfig, head: SkillConfig) -> list[str]:
    """A skill's own settings that change scores and differ (its `package`, say)."""
    a, b = base.model_dump(mode="json"), head.model_dump(mode="json")
    return _differences({k: v for k, v in a.items() if k not in SKILL_NOT_SCORING},
                        {k: v for k, v in b.items() if k not in SKILL_NOT_SCORING},
                        f"skills[{head.name}].")


def secret_names(config: Config) -> list[str]:
    """The variables a config reads secrets from, as `Setup.load` masks them."""
    return [config.api_key_env, *config.agent_env_refs()]


def config_relative(setup: Setup) -> str | None:
    """The config file's path inside the repository, or None when it lives outside."""
    try:
        return setup.config_file.resolve().relative_to(setup.repo).as_posix()
    except ValueError:
        return None


def base_config(setup: Setup, base_root: Path, ref: str, options: ReviewOptions,
                notes: list[str]) -> tuple[Config | None, str | None]:
    """(the config at REF with the command line's overrides, None) when it parses; (None,
    why) when REF has none or it no longer parses: then there is no base exam. A config
    given from outside the repository is no part of the change: it is the exam's."""
    relative = config_relative(setup)
    if relative is None:
        notes.append(f"the config {setup.config_file} is outside the repository: both sides "
                     "were scored with it")
        return setup.config, None
    path = base_root / relative
    if not path.is_file():
        return None, f"{ref} has no {relative}"
    try:
        loaded = load_config(path)
    except UsageError as exc:
        why = str(exc).replace(str(path), f"{ref}:{relative}")
        return None, f"the base's {relative} no longer parses ({why})"
    return apply_overrides(loaded, setup.env, backend=options.backend,
                           model=options.model), None


@contextmanager
def base_checkout(setup: Setup, sha: str) -> Iterator[Path]:
    """The folder of the base commit that corresponds to `setup.repo` (a subfolder when the
    project lives inside a larger repository), in a private worktree removed afterwards."""
    prefix = git_out(setup.repo, "rev-parse", "--show-prefix").strip()
    with gitops.temporary_worktree(gitops.open_repo(setup.repo), BASE_WORKTREE, sha) as tree:
        yield tree / prefix if prefix else tree


# -- the pull request -----------------------------------------------------------------------


def _event_pull(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The event payload's `pull_request` (GITHUB_EVENT_PATH), or None when the file is
    missing, not JSON or holds none."""
    path = env.get("GITHUB_EVENT_PATH", "")
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    pull = event.get("pull_request") if isinstance(event, dict) else None
    return pull if isinstance(pull, dict) else None


def _repo_of(pull: Mapping[str, Any], side: str) -> Mapping[str, Any]:
    part = pull.get(side)
    repo = part.get("repo") if isinstance(part, dict) else None
    return repo if isinstance(repo, dict) else {}


def same_repository(pull: Mapping[str, Any]) -> bool:
    """Whether the payload says the head lives in the base's repository: both named by a
    non-empty `full_name`, the same, and their ids (when given) equal. A payload that does
    not say where the head lives is not taken as the same repository."""
    head, base = _repo_of(pull, "head"), _repo_of(pull, "base")
    names = [repo.get("full_name") for repo in (head, base)]
    if not all(isinstance(name, str) and name.strip() for name in names):
        return False
    if "id" in head and "id" in base and head["id"] != base["id"]:
        return False
    return names[0] == names[1]


def pull_request_from_env(env: Mapping[str, str], explicit: int | None) -> PullRequestRef | None:
    """The PR this run is for: `--pr`, the event payload (GITHUB_EVENT_PATH) or GITHUB_REF
    `refs/pull/N/merge`. A fork PR is one whose payload does not show its head in the
    base's repository."""
    pull = _event_pull(env)
    number: int | None = None
    fork = False
    if pull is not None:
        fork = not same_repository(pull)
        if isinstance(pull.get("number"), int):
            number = pull["number"]
    if explicit is not None:
        return PullRequestRef(explicit, fork)
    if number is None:
        match = re.fullmatch(r"refs/pull/(\d+)/(?:merge|head)", env.get("GITHUB_REF", ""))
        number = int(match[1]) if match else None
    return PullRequestRef(number, fork) if number is not None else None


def refuse_untrusted_event(env: Mapping[str, str]) -> None:
    """Under `pull_request_target` the run holds the base repository's secrets: a review
    of a pull request whose payload does not show it comes from this repository (a fork,
    repositories by id only or without names, no readable payload) is refused (exit 2)."""
    if env.get("GITHUB_EVENT_NAME", "") != "pull_request_target":
        return
    pull = _event_pull(env)
    if pull is None or not same_repository(pull):
        raise UsageError(TARGET_REFUSAL)


ACTIONS_LOGIN = "github-actions[bot]"  # who Actions' GITHUB_TOKEN comments as


def is_ours(author: Author | None, me: Author | None) -> bool:
    """A comment is gitsleep's own only when the identity it runs as wrote it: the token's
    user when `GET /user` names it; else (an installation token, as Actions'
    GITHUB_TOKEN is) the Actions bot. Another app's bot is someone else."""
    if author is None:
        return False
    if me is not None:
        return author.id == me.id if author.id is not None and me.id is not None \
            else author.login.casefold() == me.login.casefold()
    return author.type == "Bot" and author.login.casefold() == ACTIONS_LOGIN


def sync_comment(hub: Any, number: int, body: str) -> CommentResult:
    """One comment per PR, found by the marker and written by gitsleep's own identity:
    created once, edited in place after, and not written at all when it already says
    this. A marked comment by anyone else is never edited (its author could re-edit it)."""
    marked = [c for c in hub.list_comments(number) if c.body.lstrip().startswith(verdict.MARKER)]
    me = hub.token_user() if marked else None  # asked only when there is a claim to check
    mine = [c for c in marked if is_ours(hub.comment_author(c.id), me)]
    if not mine:
        made = hub.create_comment(number, body)
        return CommentResult("created", made.id, made.url, number)
    first = mine[0]
    if first.body.replace("\r\n", "\n").strip() == body.strip():
        return CommentResult("none", first.id, first.url, number,
                             reason="the comment already says this")
    hub.update_comment(number, first.id, body)
    return CommentResult("updated", first.id, first.url, number)


def _comment(setup: Setup, options: ReviewOptions, pr: PullRequestRef | None,
             body: str) -> CommentResult:
    from gitsleep.git_forge import forge

    if options.comment is False:
        return CommentResult.none(pr, reason="--no-comment")
    if pr is None:
        if options.comment:
            raise UsageError("--comment needs a pull request: run it from a pull_request "
                             "workflow or pass --pr NUMBER")
        return CommentResult.none(pr, reason="not on a pull request (pass --pr NUMBER to "
                                  "comment)")
    if pr.fork:
        return CommentResult.none(pr, reason=f"{FORK_NOTE}, so no comment: the report is in "
                                  "the run's summary")
    remote = git_out(setup.repo, "remote", "get-url", "origin").strip() or None
    settings, why_not = forge.settings_from_env(setup.env, remote)
    if settings is None:
        if options.comment:
            raise UsageError(f"--comment cannot post: {why_not}")
        return CommentResult.none(pr, reason=why_not)
    hub = forge.GitHubForge(settings, pacing=forge.Pacing.from_env(setup.env))
    try:
        return sync_comment(hub, pr.number, setup.redactor.redact(body))
    finally:
        hub.close()


# -- one review -----------------------------------------------------------------------------


def _changed_files(setup: Setup, sha: str, skill: SkillConfig, before: SkillConfig | None,
                   documents: Mapping[str, bytes | None]) -> list[str]:
    """The skill's documents and task files whose bytes differ between REF and the head."""
    changed = []
    for name, relative in (("skill", skill.skill), ("memory", skill.memory)):
        base_path = getattr(before, name) if before is not None else relative
        if relative is None and base_path is None:
            continue
        head_bytes = read_here(setup.repo, relative) if relative else None
        if documents.get(name) != head_bytes or base_path != relative:
            changed.append(relative or f"{base_path} (removed)")
    paths = [t.path for t in skill.tasks]
    if before is not None:
        paths += [t.path for t in before.tasks if t.path not in paths]
    for relative in paths:
        if read_at(setup.repo, sha, relative) != read_here(setup.repo, relative):
            changed.append(relative)
    if before is not None and [t.model_dump() for t in before.tasks] != [
            t.model_dump() for t in skill.tasks]:
        changed.append(f"{setup.config_file.name} (tasks of {skill.name})")
    return changed


def _decode(data: bytes | None, where: str) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: is not UTF-8 (byte {exc.start}); save it as UTF-8") from None


class ForkWithoutSecrets(Exception):
    """A fork PR's run cannot reach the model: said in the summary, and no verdict."""


@dataclass
class Planned:
    """A skill to score: its inputs, its runner, and the most calls scoring it needs."""

    skill: SkillConfig
    changed: list[str]
    tasks: list[Task]
    base_documents: dict[str, str | None]
    head_documents: dict[str, str | None]
    notes: list[str]
    runner: CallRunner
    needed: int
    exam_changes: verdict.ExamChanges
    name: str = ""  # the skill as the head names it (a renamed skill's exam is the base's)
    person: bool = True  # the head's document is a person's change, not a gitsleep commit's
    triggers: picks.TriggerPlan | None = None  # its description changed: score the picks


@dataclass(frozen=True)
class SkillSides:
    """One skill as the head's config and the base's config name it (either may lack it)."""

    name: str
    head: SkillConfig | None
    base: SkillConfig | None

    @property
    def documents(self) -> SkillConfig:
        """Where the head's documents are: the head's entry, the base's when it was dropped."""
        found = self.head or self.base
        assert found is not None
        return found


def chosen_skills(setup: Setup, before: Config | None, names: Sequence[str]
                  ) -> list[SkillSides]:
    """The skills to look at: the head's and the base's (a skill the head drops from
    `skills:` is still reviewed), or the ones named."""
    head = {s.name: s for s in setup.config.skills}
    base = {s.name: s for s in before.skills} if before is not None else {}
    if names:
        for name in names:
            if name not in head and name not in base:
                setup.config.skill(name)  # the one-line "unknown skill" error
        order = list(dict.fromkeys(names))
    else:
        order = list(head) + [n for n in base if n not in head]
    return [SkillSides(n, head.get(n), base.get(n)) for n in order]


def renamed_documents(setup: Setup, sha: str) -> dict[str, str]:
    """head path -> base path of each file git's rename detection (its usual similarity)
    finds moved between REF and the working tree, paths relative to `setup.repo`."""
    done = git_run(setup.repo, "diff", "--find-renames", "--name-status", "-z", "--relative",
                   sha, "--")
    if done.status != 0:
        return {}
    fields = done.out.decode("utf-8", "surrogateescape").split("\0")
    moved: dict[str, str] = {}
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index]
        if status.startswith(("R", "C")) and index + 2 < len(fields):
            moved[fields[index + 2]] = fields[index + 1]
            index += 3
        else:
            index += 2
    return moved


def pair_renamed(setup: Setup, sha: str, before: Config | None,
                 chosen: list[SkillSides]) -> list[SkillSides]:
    """A skill the head names that the base does not is matched to a base skill the head
    no longer names by its document: the same path, or one git's rename detection says
    moved there. The pair is reviewed as one skill, on the base's exam (a rename must not
    turn a worse document into two skips)."""
    if before is None:
        return chosen
    head_names = {s.name for s in setup.config.skills}
    orphans = {s.skill: s for s in before.skills if s.name not in head_names}
    if not orphans:
        return chosen
    moved = renamed_documents(setup, sha)
    paired: dict[str, SkillConfig] = {}  # head name -> its base skill
    for sides in chosen:
        if sides.head is None or sides.base is not None:
            continue
        found = orphans.get(sides.head.skill) or orphans.get(moved.get(sides.head.skill, ""))
        if found is not None and found.name not in {b.name for b in paired.values()}:
            paired[sides.name] = found
    taken = {b.name for b in paired.values()}
    return [SkillSides(s.name, s.head, paired.get(s.name, s.base)) for s in chosen
            if not (s.head is None and s.name in taken)]


def _fingerprint(task: Task) -> tuple[Any, ...]:
    """What makes a task the same exam question: prompt, split, judge, fixture folder and
    the tools it declares."""
    return (task.prompt, task.split, task.system, task.judge, task.workspace, task.review,
            tuple(json.dumps(t.declaration(), sort_keys=True) for t in task.tools))


def _tool_folders(task: Task, skill: SkillConfig | None) -> list[str]:
    """The folders the task's tools read (its own, else its skill's)."""
    tools = task.tools or (tuple(t.spec() for t in skill.tools or ()) if skill else ())
    return sorted({t.folder for t in tools if t.folder})


def _fixture_changed(setup: Setup, sha: str, folder: str) -> bool:
    """Whether a workspace folder's git tree differs between REF and the head's HEAD."""
    trees: list[str | None] = []
    for commit in (sha, "HEAD"):
        try:
            trees.append(task_trees.tree_id(setup.repo, commit, folder))
        except (UsageError, GitError):
            trees.append(None)
    return trees[0] != trees[1]


def package_changes(setup: Setup, sha: str, sides: SkillSides) -> list[str]:
    """The files of the skill's package (the base's folder, else the head's) that differ
    between REF and the head's HEAD, as the package is read from git at a commit; the skill
    and memory documents a package folder holds are not the package's change."""
    skill = sides.base or sides.head
    if skill is None or not skill.package:
        return []
    done = git_run(setup.repo, "diff", "--name-only", "-z", "--no-renames", "--relative",
                   sha, "HEAD", "--", skill.package)
    if done.status != 0:
        return []
    documents = {p for s in (sides.base, sides.head) if s is not None
                 for p in (s.skill, s.memory) if p}
    names = done.out.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name and name not in documents]


def exam_changes(setup: Setup, sha: str, base_root: Path, sides: SkillSides,
                 settings: list[str]) -> verdict.ExamChanges:
    """What the head changes in the skill's exam: val and held-out tasks added, removed or
    changed (prompt, split, judge and checks, fixture), scoring settings, the skill
    dropped."""
    base_tasks = check_skill_tasks(base_root, sides.base)[0] if sides.base else []
    head_tasks: list[Task] = []
    error = None
    if sides.head is not None:
        head_tasks, problems = check_skill_tasks(setup.repo, sides.head)
        first = next((p for p in problems if p.is_error), None)
        error = f"{first.location()}: {first.message}" if first else None
    if sides.base is not None and sides.head is not None:
        settings = settings + skill_differences(sides.base, sides.head)
    scored = verdict.REVIEW_SPLITS  # train tasks are not part of a review's exam
    before = {t.id: t for t in base_tasks if t.split in scored}
    after = {t.id: t for t in head_tasks if t.split in scored}
    added: dict[str, list[str]] = {}
    removed: dict[str, list[str]] = {}
    changed: dict[str, list[str]] = {}
    for task_id, task in after.items():
        if task_id not in before:
            added.setdefault(task.split, []).append(task_id)
    for task_id, task in before.items():
        if sides.head is None:
            break  # the whole skill is dropped: said once, not task by task
        if task_id not in after:
            removed.setdefault(task.split, []).append(task_id)
        elif (_fingerprint(task) != _fingerprint(after[task_id])
              or (task.workspace and _fixture_changed(setup, sha, task.workspace))
              or any(_fixture_changed(setup, sha, folder)  # the notes a tool serves
                     for folder in _tool_folders(task, sides.base))):
            changed.setdefault(task.split, []).append(task_id)
    return verdict.ExamChanges(added, removed, changed, settings, sides.head is None, error,
                               package_changes(setup, sha, sides))


def _unscored(sides: SkillSides, changed: list[str], why: str,
              changes: verdict.ExamChanges) -> verdict.SkillReview:
    return verdict.SkillReview(sides.name, "unscored", f"{why}; pass --trust-head to score it "
                              "with the head's tasks, judges and settings (it runs the "
                              "head's command checks and fixtures)", changed,
                              exam_changes=changes)


def plan_skill(setup: Setup, exam: Exam | None, sha: str, ref: str, sides: SkillSides,
               force: bool, pr: PullRequestRef | None, changes: verdict.ExamChanges,
               no_exam: str | None) -> verdict.SkillReview | Planned:
    """A skipped skill's one line, or what scoring it takes; no model call is made."""
    skill, before = sides.documents, sides.base
    base_paths = {"skill": before.skill if before else skill.skill,
                  "memory": before.memory if before else skill.memory}
    raw = {name: read_at(setup.repo, sha, path) if path else None
           for name, path in base_paths.items()}
    changed = _changed_files(setup, sha, skill, before, raw)
    if sides.head is None:
        changed.append(f"{setup.config_file.name} (skill {sides.name} removed from skills:)")
    package_only = bool(changes.package) and not changed
    changed += list(changes.package)
    if raw["skill"] is None:
        return verdict.SkillReview(sides.name, "skipped", f"new at the head: "
                                  f"{base_paths['skill']} does not exist at {ref}, so there is "
                                  "nothing to compare against", changed, exam_changes=changes)
    if not changed and not force:
        return verdict.SkillReview(sides.name, "skipped", f"nothing changed: its documents and "
                                  f"task files are the same at {ref} and the head", changed,
                                  exam_changes=changes)
    if sides.head is None and read_here(setup.repo, skill.skill) is None:
        return verdict.SkillReview(sides.name, "unscored", f"removed or moved at the head: "
                                  f"{skill.skill} and its entry in skills: are gone and no "
                                  "skill of the head has its document (by path or git's "
                                  "rename detection), so its change has no verdict",
                                  changed, exam_changes=changes)
    if exam is None:
        return _unscored(sides, changed, f"no exam: {no_exam}", changes)
    if package_only and not exam.trusted_head:
        return _unscored(sides, changed, "only the skill's package changed, and the base's "
                         "package is what both sides are scored with", changes)
    exam_skill = sides.head if exam.trusted_head else sides.base
    if exam_skill is None:
        exam_skill = sides.documents if exam.trusted_head else None
    if exam_skill is None:
        return _unscored(sides, changed, f"no exam: the base's {CONFIG_NAME} has no skill "
                         f"{sides.name}", changes)
    tasks = skill_tasks(exam.root, exam_skill, setup.say)
    repo_paths.check_skill_paths(exam.root, exam_skill)
    head_documents = read_documents(setup.repo, skill, setup.say)
    base_documents = {name: _decode(data, f"{ref}:{base_paths[name]}")
                      for name, data in raw.items()}
    notes = []
    if base_documents["memory"] is None and head_documents["memory"] is not None:
        notes.append(f"the memory document {skill.memory} is new: the base was scored "
                     "without it")
    elif base_documents["memory"] is not None and head_documents["memory"] is None:
        notes.append(f"the memory document {base_paths['memory']} was removed: the head was "
                     "scored without it")
    if sides.head is not None and sides.base is not None and sides.head.name != sides.base.name:
        notes.append(f"renamed from {sides.base.name} ({sides.base.skill} at the base): "
                     f"scored on the exam of {exam_skill.name}")
    settings = setup.config.epoch_settings(skill=exam_skill.name)
    try:
        backend = make_backend(setup, exam_skill.name)
    except (BackendError, UsageError) as exc:  # no key, or an agent.env secret unset
        if pr is not None and pr.fork:
            raise ForkWithoutSecrets(str(exc)) from None
        raise
    epoch = gitsleep_commit(setup.repo, skill.skill, head_documents["skill"])
    notes.append(f"the head's {skill.skill} is gitsleep commit {epoch[:12]}'s, chosen on val: "
                 "held-out alone decides" if epoch else
                 f"the head's {skill.skill} is a person's change (no gitsleep commit wrote it): "
                 "val and held-out are judged together")
    runner = CallRunner.for_settings(backend, settings, cache=make_cache(setup))
    needed = verdict.calls_needed(runner, tasks, base_documents, head_documents, settings)
    setup.say(f"{sides.name}: this review needs at most {needed} model calls "
              f"(budget.max_calls {settings.max_calls}; cache hits are free)")
    return Planned(exam_skill, changed, tasks, base_documents, head_documents, notes, runner,
                   needed, changes, sides.name, person=not epoch)



def gitsleep_commit(root: Path, path: str, head_text: str | None) -> str:
    """The gitsleep commit the head's skill document is ('' for a person's change): the
    last commit that changed `path`, when its trailers name a gitsleep epoch
    (`Gitsleep-Skill`) and the document as reviewed is exactly as that commit wrote it."""
    sha = git_out(root, "log", "-1", "--format=%H", "HEAD", "--", path).strip()
    if not sha or head_text is None:
        return ""
    skill = git_out(root, "log", "-1", "--format=%(trailers:key=Gitsleep-Skill,valueonly)",
                    sha).strip()
    written = read_at(root, sha, path)
    return sha if skill and written == head_text.encode("utf-8") else ""


def over_budget(setup: Setup, plans: list[Planned]) -> str | None:
    """One line when a skill needs more calls than `budget.max_calls` allows, else None:
    said before the first call, instead of stopping at the limit with nothing to show."""
    limit = setup.config.budget.max_calls
    over = [p for p in plans if p.needed > limit]
    if not over:
        return None
    repeats = max(1, setup.config.gate.repeats)

    def agents_of(plan: Planned) -> str:
        count = len(setup.config.agent_refs(plan.skill.name))  # several agents: each answers
        return f"{count} agents x " if count > 1 else ""

    needs = "; ".join(
        f"{p.skill.name}: this review needs {p.needed} model calls "
        f"({sum(t.split in verdict.REVIEW_SPLITS for t in p.tasks)} val and held-out tasks x "
        f"{agents_of(p)}{repeats} sample(s) x 3 sides (base, head, and the base under a "
        "placebo to measure the noise), rubric judges included, cached answers left out"
        + (f"; {p.triggers.needed} of them pick calls for its description: "
           f"{len(p.triggers.tasks)} trigger queries x {repeats} sample(s) x 3 sides"
           if p.triggers is not None and p.triggers.needed else "") + ")"
        for p in over)
    named = over[0].needed if len(over) == 1 else max(p.needed for p in over)
    return (f"{needs}, over budget.max_calls ({limit}) for one skill's review; no call was "
            f"made: raise `budget.max_calls` in {setup.config_file.name} to at least "
            f"{named}, or review the other skills with --skill NAME")


def score_planned(setup: Setup, plan: Planned) -> verdict.SkillReview:
    """Score one planned skill. BudgetExhausted (max_tokens, minutes, money: what no
    count knows before) is said as one line naming the skill and the setting to raise."""
    settings = setup.config.epoch_settings(skill=plan.skill.name)
    try:
        splits, agent_reviews = verdict.score_skill(plan.runner, plan.tasks, plan.base_documents,
                                    plan.head_documents, settings, skill=plan.skill.name,
                                    counter=setup.counter if setup.steps else None,
                                    person=plan.person)
    except BudgetExhausted as exc:
        key = re.match(r"budget\.(\w+)", str(exc))
        setting = f"budget.{key[1]}" if key else "the budget"
        raise BudgetExhausted(
            f"{plan.skill.name}: the review stopped before a verdict: {exc} "
            f"({plan.runner.cost.calls} model call(s) made); no comment was written: raise "
            f"`{setting}` in {setup.config_file.name} (it caps each skill's review)"
        ) from None
    judged, decided_by = verdict.verdict_of(splits, settings.gate.min_delta)
    changed = plan.changed
    reason = ("changed: " + ", ".join(changed)) if changed else "nothing changed (--skill all)"
    notes = list(plan.notes)
    if decided_by == "val":
        notes.append("no held-out task: val decides")
    scored = None
    if plan.triggers is not None:
        try:
            scored = picks.score(setup, plan.skill, plan.triggers, settings, plan.person)
        except UsageError as exc:  # an agent CLI that does not show its pick
            notes.append(f"the description changed, but its picks were not scored: {exc}")
        if scored is not None and scored.verdict is not None:
            judged = verdict.with_picks(judged, scored)
            decided_by = decided_by or verdict.PICKS
    review = verdict.SkillReview(plan.name or plan.skill.name, "scored", reason, changed,
                                 splits, notes,
                                 judged, decided_by, plan.runner.cost.calls,
                                 plan.runner.cost.cache_hits, plan.exam_changes, agent_reviews)
    if scored is not None:
        review.triggers = scored
        review.calls += scored.calls
        review.cache_hits += scored.cache_hits
    return review


def plan_picks(setup: Setup, exam: Exam | None, base_root: Path, base: Config | None,
               sha: str, sides: SkillSides, step: verdict.SkillReview | Planned) -> None:
    """When the head changes the skill's `description:` (or a sibling's) and the base has
    trigger tasks for it: its picks, scored on the base's catalog and trigger tasks
    (`review/triggers.py`); a skipped skill only lists a sibling's change."""
    if exam is None or base is None or sides.base is None:
        return
    settings = exam.config.epoch_settings(
        skill=sides.documents.name if exam.trusted_head else sides.base.name)
    if isinstance(step, Planned):
        base_text, head_text = step.base_documents["skill"], step.head_documents["skill"]
    else:
        raw = read_at(setup.repo, sha, sides.base.skill)
        base_text = raw.decode("utf-8", "replace") if raw is not None else None
        here = read_here(setup.repo, sides.documents.skill)
        head_text = here.decode("utf-8", "replace") if here is not None else None
    planned = picks.plan(setup, base_root, base, sides.base, base_text, head_text, settings)
    if planned is None:
        return
    if isinstance(step, Planned):
        step.triggers = planned
        step.needed += planned.needed
    elif planned.review.edits:
        step.triggers = planned.review


def _head_label(setup: Setup, paths: list[str]) -> str:
    head = git_out(setup.repo, "rev-parse", "HEAD").strip()
    dirty = any(read_at(setup.repo, head, p) != read_here(setup.repo, p) for p in paths)
    return f"{head[:12]}{' + uncommitted changes' if dirty else ''}" if head else "the head"


def rerun_review(options: ReviewOptions) -> str:
    """The command line that runs this review again (for the comment)."""
    named = "".join(f" --skill {name}" for name in options.skills)
    trust = " --trust-head" if options.trust_head else ""
    return f"gitsleep review --base {options.base}{named}{trust}"


def write_step_summary(env: Mapping[str, str], text: str) -> bool:
    """Append to $GITHUB_STEP_SUMMARY when the run has one (GitHub Actions)."""
    path = env.get("GITHUB_STEP_SUMMARY", "")
    if not path:
        return False
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError:
        return False
    return True


def _not_run(setup: Setup, sha: str, base_label: str, pr: PullRequestRef | None,
             notes: list[str], reviews: list[verdict.SkillReview], why: str) -> ReviewOutcome:
    """A review that reached no verdict for a budget: exit 6, no comment (a half-scored
    review must not read as a verdict), the reason in the step summary and in --json."""
    body = f"{verdict.MARKER}\n## gitsleep review: not run\n\n{why}\n"
    outcome = ReviewOutcome(reviews, sha, base_label, "the head", notes, body,
                            CommentResult.none(pr, reason="the review reached no verdict"),
                            EXIT_BUDGET, error=why)
    outcome.summary_written = write_step_summary(setup.env, setup.redactor.redact(body))
    return outcome


def run_review(setup: Setup, options: ReviewOptions) -> ReviewOutcome:
    """Review every chosen skill on the base's exam (the head's with --trust-head),
    comment on the PR, and decide the exit code."""
    refuse_untrusted_event(setup.env)
    sha = resolve_ref(setup.repo, options.base)
    with base_checkout(setup, sha) as base_root:
        return _review_at(setup, options, sha, base_root)


def _review_at(setup: Setup, options: ReviewOptions, sha: str, base_root: Path
               ) -> ReviewOutcome:
    notes: list[str] = []
    before_config, no_exam = base_config(setup, base_root, options.base, options, notes)
    if before_config is not None:
        # the base's key and agent secrets are masked too, in what the command prints as
        # well (the caller's Setup is updated on purpose: a head config naming another
        # `api_key_env` must not unmask the key the base's exam uses)
        setup.redactor = Redactor.from_env(setup.env, [*secret_names(setup.config),
                                                       *secret_names(before_config)])
        use_redactor(setup.redactor)
    exam: Exam | None = None
    if options.trust_head:
        exam = Exam(setup.repo, setup.config, trusted_head=True)
        notes.append("--trust-head: scored on the head's tasks, judges and settings; the "
                     "head's command checks, fixtures and agent settings ran")
    elif before_config is not None:
        exam = Exam(base_root, before_config, trusted_head=False)
    settings_changed = (config_differences(before_config, setup.config)
                        if before_config is not None else [])
    exam_setup = replace(setup, config=exam.config) if exam is not None else setup
    force = "all" in options.skills
    chosen = pair_renamed(setup, sha, before_config, chosen_skills(
        setup, before_config, [n for n in options.skills if n != "all"]))
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen if s.head is not None], runs=False)
    pr = pull_request_from_env(setup.env, options.pr)
    base_label = options.base if options.base == sha else f"{options.base} ({sha[:12]})"
    steps: list[verdict.SkillReview | Planned] = []
    paths: list[str] = []
    reviews: list[verdict.SkillReview] = []
    try:
        for sides in chosen:
            changes = exam_changes(setup, sha, base_root, sides, settings_changed)
            steps.append(plan_skill(exam_setup, exam, sha, options.base, sides, force, pr,
                                    changes, no_exam))
            plan_picks(setup, exam, base_root, before_config, sha, sides, steps[-1])
            skill = sides.documents
            paths += [p for p in (skill.skill, skill.memory) if p]
            paths += [t.path for t in skill.tasks]
        refused = over_budget(exam_setup, [p for p in steps if isinstance(p, Planned)])
        if refused:
            return _not_run(setup, sha, base_label, pr, notes, [], refused)
        for step in steps:
            reviews.append(score_planned(exam_setup, step) if isinstance(step, Planned)
                           else step)
    except ForkWithoutSecrets as exc:
        note = (f"{FORK_NOTE}, so gitsleep could not reach the model ({exc}). Nothing was "
                f"scored; a maintainer can run `{rerun_review(options)}` locally. "
                f"{verdict.rerun_sentence(options.trust_head)}")
        body = f"{verdict.MARKER}\n## gitsleep review: not run\n\n{note}\n"
        outcome = ReviewOutcome([], sha, base_label, "the head", [note], body,
                                CommentResult.none(pr, reason=FORK_NOTE),
                                fork_unscored=True, trusted_head=options.trust_head,
                                unscored=[f"{FORK_NOTE}: the model could not be reached"])
        outcome.exit_code = _exit_code(options, outcome)
        outcome.summary_written = write_step_summary(setup.env, setup.redactor.redact(body))
        return outcome
    except BudgetExhausted as exc:
        return _not_run(setup, sha, base_label, pr, notes, reviews, str(exc))
    finally:
        for step in steps:
            if isinstance(step, Planned):
                step.runner.backend.close()
    if pr is not None and pr.fork:
        notes.append(f"{FORK_NOTE}: the report is here instead of a pull-request comment")
    head_label = _head_label(setup, list(dict.fromkeys(paths)))
    gate_cfg = exam_setup.config.gate
    body = verdict.comment_markdown(
        reviews, metric=gate_cfg.metric, min_delta=gate_cfg.min_delta, base_label=base_label,
        head_label=head_label, rerun=rerun_review(options), redactor=setup.redactor,
        notes=notes, trusted_head=options.trust_head)
    comment_error: str | None = None
    try:
        comment = _comment(setup, options, pr, body)
    except GitError as exc:
        comment_error = str(exc)
        comment = CommentResult.none(pr, error=comment_error)
    outcome = ReviewOutcome(reviews, sha, base_label, head_label, notes, body, comment,
                            trusted_head=options.trust_head,
                            unscored=[f"{r.skill}: {r.reason}" for r in reviews
                                      if r.status == "unscored"], metric=gate_cfg.metric)
    outcome.exit_code = max(_exit_code(options, outcome),
                            EXIT_GIT if comment_error else EXIT_OK)
    outcome.summary_written = write_step_summary(setup.env, setup.redactor.redact(body))
    return outcome


def _exit_code(options: ReviewOptions, outcome: ReviewOutcome) -> int:
    """7 for a regression and 8 for a change without a verdict, with --fail-on-regression
    (8 unless --allow-unscored: a required check must never pass on no verdict)."""
    if not options.fail_on_regression:
        return EXIT_OK
    if outcome.unscored and not options.allow_unscored:
        return EXIT_UNSCORED
    if any(r.regressed for r in outcome.reviews):
        return EXIT_REGRESSION
    return EXIT_OK


def to_json(outcome: ReviewOutcome, options: ReviewOptions) -> dict[str, Any]:
    return {
        "base": {"ref": options.base, "sha": outcome.base_sha},
        "head": outcome.head_label,
        "verdict": "not run" if outcome.not_run else verdict.overall(outcome.reviews),
        "regression": any(r.regressed for r in outcome.reviews),
        "exit_code": outcome.exit_code,
        "skills": [r.to_json() for r in outcome.reviews],
        "notes": outcome.notes,
        "comment": outcome.comment.to_json(),
        "rerun": rerun_review(options),
        "exam": "head" if outcome.trusted_head else "base",
        "unscored": outcome.unscored,
        **({"error": outcome.error} if outcome.error else {}),
    }
