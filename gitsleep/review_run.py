"""`gitsleep review`, the edges: the base read from git at REF, which skills a change
touched, the pull request the run is for, and its one comment kept up to date.

The base side is read with `git cat-file --filters REF:./path` (through `gitrun.git_run`:
no hook or program of the repository runs; clean/smudge filters apply, as for a
checkout): nothing is checked out, so the user's tree, index and HEAD stay as they are.
The head side is the working tree, as `gitsleep eval` reads it (in CI, the checked-out
pull-request merge commit).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitsleep import repo_paths, review
from gitsleep.config import Config, SkillConfig, load_config
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import Task
from gitsleep.errors import (
    EXIT_BUDGET,
    EXIT_GIT,
    EXIT_OK,
    EXIT_REGRESSION,
    BackendError,
    BudgetExhausted,
    GitError,
    UsageError,
)
from gitsleep.git_forge.forge import Author
from gitsleep.git_forge.gitrun import git_out, git_run
from gitsleep.prepare import Setup, make_backend, make_cache, read_inputs

SHALLOW_FIX = ("fetch it (`git fetch origin <ref>`, or `git fetch --unshallow`; in GitHub "
               "Actions use actions/checkout with `fetch-depth: 0`)")
# Keys that change what a night does but not what a score is: a pull request may change
# them and still be reviewed. Any other difference between base and head config is exit 2.
NOT_SCORING_KEYS = frozenset({
    "skills", "workers", "budget", "branch_prefix", "pr", "rounds", "proposals",
    "edit_budget", "rollouts", "learned_block", "prices", "cache", "max_retries", "timeout",
    "max_error_rate", "optimizer_model", "optimizer_backend",
})
SKILL_NOT_SCORING = frozenset({"name", "skill", "memory", "tasks"})
FORK_NOTE = ("This pull request comes from a fork: GitHub gives its workflow runs a "
             "read-only token and no secrets")


@dataclass(frozen=True)
class ReviewOptions:
    base: str
    skills: tuple[str, ...] = ()  # () touched skills; ("all",) every skill
    comment: bool | None = None  # None: comment when on a pull request with a token
    fail_on_regression: bool = False
    pr: int | None = None


@dataclass(frozen=True)
class PullRequestRef:
    """The pull request this run reviews, and whether it comes from a fork."""

    number: int
    fork: bool = False


@dataclass
class ReviewOutcome:
    reviews: list[review.SkillReview]
    base_sha: str
    base_label: str
    head_label: str
    notes: list[str]
    body: str
    comment: dict[str, Any]
    exit_code: int = EXIT_OK
    fork_unscored: bool = False
    summary_written: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why no verdict was reached (a budget): one line, exit 6

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


def _first_difference(base: Any, head: Any, where: str) -> str | None:
    """The first key path where two config dumps differ, or None."""
    if isinstance(base, dict) and isinstance(head, dict):
        for key in sorted(set(base) | set(head), key=str):
            found = _first_difference(base.get(key), head.get(key), f"{where}{key}.")
            if found:
                return found
        return None
    return None if base == head else where.rstrip(".") or "(whole file)"


def config_difference(base: Config, head: Config) -> str | None:
    """A setting that changes scores and differs between base and head, or None."""
    a, b = base.model_dump(mode="json"), head.model_dump(mode="json")
    found = _first_difference({k: v for k, v in a.items() if k not in NOT_SCORING_KEYS},
                              {k: v for k, v in b.items() if k not in NOT_SCORING_KEYS}, "")
    if found:
        return found
    base_skills = {s["name"]: s for s in a["skills"]}
    for skill in b["skills"]:
        before = base_skills.get(skill["name"])
        if before is None:
            continue
        found = _first_difference(
            {k: v for k, v in before.items() if k not in SKILL_NOT_SCORING},
            {k: v for k, v in skill.items() if k not in SKILL_NOT_SCORING},
            f"skills[{skill['name']}].")
        if found:
            return found
    return None


def base_config(setup: Setup, sha: str, ref: str, notes: list[str]) -> Config | None:
    """The config at REF when it parses (exit 2 when it differs in a scoring setting);
    None, with a note, when REF has none or it no longer parses: the head's is used."""
    try:
        relative = setup.config_file.resolve().relative_to(setup.repo).as_posix()
    except ValueError:
        notes.append(f"the config {setup.config_file} is outside the repository: both sides "
                     "were scored with it")
        return None
    text = read_at(setup.repo, sha, relative)
    if text is None:
        notes.append(f"{ref} has no {relative}: both sides were scored with the head's config")
        return None
    with tempfile.TemporaryDirectory(prefix="gitsleep-review-") as folder:
        path = Path(folder) / Path(relative).name
        path.write_bytes(text)
        try:
            before = load_config(path)
        except UsageError as exc:
            why = str(exc).replace(str(path), f"{ref}:{relative}")
            notes.append(f"the base's {relative} no longer parses ({why}); both sides were "
                         "scored with the head's config")
            return None
    found = config_difference(before, load_config(setup.config_file))
    if found:
        raise UsageError(
            f"{relative}: `{found}` differs between {ref} and the head, and it changes "
            "scores; review compares documents under one config: merge the config change "
            "in its own pull request first (a skill's `tasks` list may change here)")
    return before


# -- the pull request -----------------------------------------------------------------------


def pull_request_from_env(env: Mapping[str, str], explicit: int | None) -> PullRequestRef | None:
    """The PR this run is for: `--pr`, the event payload (GITHUB_EVENT_PATH) or GITHUB_REF
    `refs/pull/N/merge`. A fork PR is one whose head repository is not the base's."""
    event: Any = {}
    path = env.get("GITHUB_EVENT_PATH", "")
    if path:
        try:
            event = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            event = {}
    pull = event.get("pull_request") if isinstance(event, dict) else None
    number: int | None = None
    fork = False
    if isinstance(pull, dict):
        head_repo = (pull.get("head") or {}).get("repo") or {}
        base_repo = (pull.get("base") or {}).get("repo") or {}
        fork = not head_repo or head_repo.get("full_name") != base_repo.get("full_name")
        if isinstance(pull.get("number"), int):
            number = pull["number"]
    if explicit is not None:
        return PullRequestRef(explicit, fork)
    if number is None:
        match = re.fullmatch(r"refs/pull/(\d+)/(?:merge|head)", env.get("GITHUB_REF", ""))
        number = int(match[1]) if match else None
    return PullRequestRef(number, fork) if number is not None else None


def is_ours(author: Author | None, me: Author | None) -> bool:
    """A comment is gitsleep's own only when the identity it runs as wrote it: the token's
    user when `GET /user` names it; else (an installation token) a Bot, which only an app
    installed on the repository, never a person, can comment as."""
    if author is None:
        return False
    if me is not None:
        return author.id == me.id if author.id is not None and me.id is not None \
            else author.login.casefold() == me.login.casefold()
    return author.type == "Bot"


def sync_comment(hub: Any, number: int, body: str) -> dict[str, Any]:
    """One comment per PR, found by the marker and written by gitsleep's own identity:
    created once, edited in place after, and not written at all when it already says
    this. A marked comment by anyone else is never edited (its author could re-edit it)."""
    marked = [c for c in hub.list_comments(number) if c.body.lstrip().startswith(review.MARKER)]
    me = hub.token_user() if marked else None  # asked only when there is a claim to check
    mine = [c for c in marked if is_ours(hub.comment_author(c.id), me)]
    if not mine:
        made = hub.create_comment(number, body)
        return {"operation": "created", "id": made.id, "url": made.url, "pr": number}
    first = mine[0]
    if first.body.replace("\r\n", "\n").strip() == body.strip():
        return {"operation": "none", "id": first.id, "url": first.url, "pr": number,
                "reason": "the comment already says this"}
    hub.update_comment(number, first.id, body)
    return {"operation": "updated", "id": first.id, "url": first.url, "pr": number}


def _comment(setup: Setup, options: ReviewOptions, pr: PullRequestRef | None,
             body: str) -> dict[str, Any]:
    from gitsleep.git_forge import forge

    none: dict[str, Any] = {"operation": "none", "id": None, "url": None,
                            "pr": pr.number if pr else None}
    if options.comment is False:
        return {**none, "reason": "--no-comment"}
    if pr is None:
        if options.comment:
            raise UsageError("--comment needs a pull request: run it from a pull_request "
                             "workflow or pass --pr NUMBER")
        return {**none, "reason": "not on a pull request (pass --pr NUMBER to comment)"}
    if pr.fork:
        return {**none, "reason": f"{FORK_NOTE}, so no comment: the report is in the run's "
                "summary"}
    remote = git_out(setup.repo, "remote", "get-url", "origin").strip() or None
    settings, why_not = forge.settings_from_env(setup.env, remote)
    if settings is None:
        if options.comment:
            raise UsageError(f"--comment cannot post: {why_not}")
        return {**none, "reason": why_not}
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
    """A fork PR's run cannot reach the model: said in the summary, never a failure."""


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


def plan_skill(setup: Setup, sha: str, ref: str, skill: SkillConfig,
               before: SkillConfig | None, force: bool, pr: PullRequestRef | None
               ) -> review.SkillReview | Planned:
    """A skipped skill's one line, or what scoring it takes; no model call is made."""
    base_paths = {"skill": before.skill if before else skill.skill,
                  "memory": before.memory if before else skill.memory}
    raw = {name: read_at(setup.repo, sha, path) if path else None
           for name, path in base_paths.items()}
    changed = _changed_files(setup, sha, skill, before, raw)
    if raw["skill"] is None:
        return review.SkillReview(skill.name, "skipped", f"new at the head: "
                                  f"{base_paths['skill']} does not exist at {ref}, so there is "
                                  "nothing to compare against", changed)
    if not changed and not force:
        return review.SkillReview(skill.name, "skipped", f"nothing changed: its documents and "
                                  f"task files are the same at {ref} and the head", changed)
    tasks, head_documents = read_inputs(setup.repo, skill, setup.say)
    base_documents = {name: _decode(data, f"{ref}:{base_paths[name]}")
                      for name, data in raw.items()}
    notes = []
    if base_documents["memory"] is None and head_documents["memory"] is not None:
        notes.append(f"the memory document {skill.memory} is new: the base was scored "
                     "without it")
    elif base_documents["memory"] is not None and head_documents["memory"] is None:
        notes.append(f"the memory document {base_paths['memory']} was removed: the head was "
                     "scored without it")
    settings = setup.config.epoch_settings()
    try:
        backend = make_backend(setup, skill.name)
    except (BackendError, UsageError) as exc:  # no key, or an agent.env secret unset
        if pr is not None and pr.fork:
            raise ForkWithoutSecrets(str(exc)) from None
        raise
    runner = CallRunner.for_settings(backend, settings, cache=make_cache(setup))
    needed = review.calls_needed(runner, tasks, base_documents, head_documents, settings)
    setup.say(f"{skill.name}: this review needs at most {needed} model calls "
              f"(budget.max_calls {settings.max_calls}; cache hits are free)")
    return Planned(skill, changed, tasks, base_documents, head_documents, notes, runner,
                   needed)


def over_budget(setup: Setup, plans: list[Planned]) -> str | None:
    """One line when a skill needs more calls than `budget.max_calls` allows, else None:
    said before the first call, instead of stopping at the limit with nothing to show."""
    limit = setup.config.budget.max_calls
    over = [p for p in plans if p.needed > limit]
    if not over:
        return None
    repeats = max(1, setup.config.gate.repeats)
    needs = "; ".join(
        f"{p.skill.name}: this review needs {p.needed} model calls "
        f"({sum(t.split in review.REVIEW_SPLITS for t in p.tasks)} val and held-out tasks x "
        f"{repeats} sample(s) x 2 sides, rubric judges included, cached answers left out)"
        for p in over)
    named = over[0].needed if len(over) == 1 else max(p.needed for p in over)
    return (f"{needs}, over budget.max_calls ({limit}) for one skill's review; no call was "
            f"made: raise `budget.max_calls` in {setup.config_file.name} to at least "
            f"{named}, or review the other skills with --skill NAME")


def score_planned(setup: Setup, plan: Planned) -> review.SkillReview:
    """Score one planned skill. BudgetExhausted (max_tokens, minutes, money: what no
    count knows before) is said as one line naming the skill and the setting to raise."""
    settings = setup.config.epoch_settings()
    try:
        splits = review.score_skill(plan.runner, plan.tasks, plan.base_documents,
                                    plan.head_documents, settings, skill=plan.skill.name,
                                    counter=setup.counter if setup.steps else None)
    except BudgetExhausted as exc:
        key = re.match(r"budget\.(\w+)", str(exc))
        setting = f"budget.{key[1]}" if key else "the budget"
        raise BudgetExhausted(
            f"{plan.skill.name}: the review stopped before a verdict: {exc} "
            f"({plan.runner.cost.calls} model call(s) made); no comment was written: raise "
            f"`{setting}` in {setup.config_file.name} (it caps each skill's review)"
        ) from None
    verdict, decided_by = review.verdict_of(splits, settings.gate.min_delta)
    changed = plan.changed
    reason = ("changed: " + ", ".join(changed)) if changed else "nothing changed (--skill all)"
    notes = list(plan.notes)
    if decided_by == "val":
        notes.append("no held-out task: val decides")
    return review.SkillReview(plan.skill.name, "scored", reason, changed, splits, notes,
                              verdict, decided_by, plan.runner.cost.calls,
                              plan.runner.cost.cache_hits)


def _head_label(setup: Setup, paths: list[str]) -> str:
    head = git_out(setup.repo, "rev-parse", "HEAD").strip()
    dirty = any(read_at(setup.repo, head, p) != read_here(setup.repo, p) for p in paths)
    return f"{head[:12]}{' + uncommitted changes' if dirty else ''}" if head else "the head"


def rerun_command(options: ReviewOptions) -> str:
    named = "".join(f" --skill {name}" for name in options.skills)
    return f"gitsleep review --base {options.base}{named}"


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
             notes: list[str], reviews: list[review.SkillReview], why: str) -> ReviewOutcome:
    """A review that reached no verdict for a budget: exit 6, no comment (a half-scored
    review must not read as a verdict), the reason in the step summary and in --json."""
    body = f"{review.MARKER}\n## gitsleep review: not run\n\n{why}\n"
    outcome = ReviewOutcome(reviews, sha, base_label, "the head", notes, body,
                            {"operation": "none", "id": None, "url": None,
                             "pr": pr.number if pr else None,
                             "reason": "the review reached no verdict"},
                            EXIT_BUDGET, error=why)
    outcome.summary_written = write_step_summary(setup.env, setup.redactor.redact(body))
    return outcome


def run_review(setup: Setup, options: ReviewOptions) -> ReviewOutcome:
    """Review every chosen skill, comment on the PR, and decide the exit code."""
    sha = resolve_ref(setup.repo, options.base)
    notes: list[str] = []
    before_config = base_config(setup, sha, options.base, notes)
    force = "all" in options.skills
    names = [n for n in options.skills if n != "all"]
    chosen = setup.skills(names)
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen], runs=False)
    pr = pull_request_from_env(setup.env, options.pr)
    base_label = options.base if options.base == sha else f"{options.base} ({sha[:12]})"
    steps: list[review.SkillReview | Planned] = []
    paths: list[str] = []
    reviews: list[review.SkillReview] = []
    try:
        for skill in chosen:
            before = next((s for s in before_config.skills if s.name == skill.name), None) \
                if before_config is not None else None
            steps.append(plan_skill(setup, sha, options.base, skill, before, force, pr))
            paths += [p for p in (skill.skill, skill.memory) if p]
            paths += [t.path for t in skill.tasks]
        refused = over_budget(setup, [p for p in steps if isinstance(p, Planned)])
        if refused:
            return _not_run(setup, sha, base_label, pr, notes, [], refused)
        for step in steps:
            reviews.append(score_planned(setup, step) if isinstance(step, Planned) else step)
    except ForkWithoutSecrets as exc:
        note = (f"{FORK_NOTE}, so gitsleep could not reach the model ({exc}). Nothing was "
                f"scored; a maintainer can run `{rerun_command(options)}` locally.")
        body = f"{review.MARKER}\n## gitsleep review: not run\n\n{note}\n"
        outcome = ReviewOutcome([], sha, base_label, "the head", [note], body,
                                {"operation": "none", "id": None, "url": None,
                                 "pr": pr.number if pr else None, "reason": FORK_NOTE},
                                fork_unscored=True)
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
    gate_cfg = setup.config.gate
    body = review.comment_markdown(
        reviews, metric=gate_cfg.metric, min_delta=gate_cfg.min_delta, base_label=base_label,
        head_label=head_label, rerun=rerun_command(options), redactor=setup.redactor,
        notes=notes)
    comment_error: str | None = None
    try:
        comment = _comment(setup, options, pr, body)
    except GitError as exc:
        comment_error = str(exc)
        comment = {"operation": "none", "id": None, "url": None,
                   "pr": pr.number if pr else None, "error": comment_error}
    regression = any(r.verdict == "regressed" for r in reviews)
    codes = [EXIT_OK]
    if regression and options.fail_on_regression:
        codes.append(EXIT_REGRESSION)
    if comment_error:
        codes.append(EXIT_GIT)
    outcome = ReviewOutcome(reviews, sha, base_label, head_label, notes, body, comment,
                            max(codes))
    outcome.summary_written = write_step_summary(setup.env, setup.redactor.redact(body))
    return outcome


def to_json(outcome: ReviewOutcome, options: ReviewOptions) -> dict[str, Any]:
    return {
        "base": {"ref": options.base, "sha": outcome.base_sha},
        "head": outcome.head_label,
        "verdict": "not run" if outcome.not_run else review.overall(outcome.reviews),
        "regression": any(r.verdict == "regressed" for r in outcome.reviews),
        "exit_code": outcome.exit_code,
        "skills": [r.to_json() for r in outcome.reviews],
        "notes": outcome.notes,
        "comment": outcome.comment,
        "rerun": rerun_command(options),
        **({"error": outcome.error} if outcome.error else {}),
    }
