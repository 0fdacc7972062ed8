"""One skill, end to end: lock -> worktree -> epoch -> commit -> note -> push -> PR.

This is the only module that knows the order of those steps. The epoch itself is pure
(`gitsleep.epoch`); git and the forge are thin edges around it.

Where things are read from:
- the config comes from the file given (default `<repo>/.gitsleep.yml` in the working tree);
- with git (`consolidate`), documents and task files come from the base commit, checked
  out in a temporary worktree, so the result is reproducible from the commit alone;
- with `--dry-run` and `eval`, they come from the working tree as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gitsleep import __version__, gate, repo_paths, report
from gitsleep.cache import ResponseCache
from gitsleep.calls import StepHook, Tick, no_tick
from gitsleep.config import Config, SkillConfig, apply_overrides, config_path, load_config
from gitsleep.documents import find_block
from gitsleep.epoch import call_ceiling, run_epoch
from gitsleep.errors import GitError, GitsleepError, UsageError
from gitsleep.logs import use_redactor
from gitsleep.models import EpochResult, SplitSummary, Task
from gitsleep.problems import MAX_FILE_BYTES
from gitsleep.redact import Redactor
from gitsleep.tasks import load_skill_tasks, task_files_digest

ALGORITHM = "gitsleep-epoch-v1"  # part of the inputs digest: a new algorithm re-runs
NOTES_REF = "refs/notes/gitsleep"
Progress = Callable[[str], None]


@dataclass
class Setup:
    """What every command needs: where the repo is, its config, env, redactor, output."""

    repo: Path
    config_file: Path
    config: Config
    env: Mapping[str, str]
    redactor: Redactor
    progress: Progress
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
        progress: Progress | None = None,
        steps: StepHook | None = None,
    ) -> Setup:
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
        self.progress(self.redactor.redact(line))

    def counter(self, label: str, total: int) -> Tick:
        """A tick per answer of a pass on the edge's display; the label is redacted first."""
        return self.steps(self.redactor.redact(label), total) if self.steps else no_tick


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass
class SkillOutcome:
    """What one skill's run produced, for the CLI to print and turn into an exit code."""

    skill: str
    summary: dict[str, Any]
    exit_code: int = 0
    result: EpochResult | None = None
    commit_message: str | None = None
    pr_body: str | None = None
    notes: list[str] = field(default_factory=list)


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


def read_inputs(root: Path, skill: SkillConfig, say: Progress | None = None
                ) -> tuple[list[Task], dict[str, str | None]]:
    tasks = load_skill_tasks(root, skill, say)
    repo_paths.check_skill_paths(root, skill)  # the tree read may be the base commit's
    documents: dict[str, str | None] = {
        "skill": read_document(root, skill.skill, field_name="skill document"),
        "memory": read_document(root, skill.memory, field_name="memory document")
        if skill.memory else None,
    }
    return tasks, documents


def inputs_digest(config: Config, skill: SkillConfig, root: Path,
                  documents: Mapping[str, str | None]) -> str:
    """sha256 of what decides an epoch: documents, task files and the effective config."""
    h = hashlib.sha256(ALGORITHM.encode())
    for name in ("skill", "memory"):
        h.update(f"\0{name}\0".encode())
        h.update((documents.get(name) or "").encode("utf-8"))
    h.update(task_files_digest(root, skill).encode())
    effective = config.model_dump(mode="json")
    effective["skills"] = [s for s in effective["skills"] if s["name"] == skill.name]
    h.update(json.dumps(effective, sort_keys=True).encode())
    return "sha256:" + h.hexdigest()


def default_output_dir(repo: Path, skill: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    runs = repo_paths.writable_dir(repo, repo_paths.RUNS_DIR,
                                   fix="remove the link or pass --output-dir")
    return runs / f"{skill}-{stamp}"


def make_backend(setup: Setup, skill: str = ""):  # noqa: ANN201 - Backend, imported lazily
    from gitsleep.backends.select import backend_from_config

    return backend_from_config(setup.config, setup.env, skill)


def make_cache(setup: Setup) -> ResponseCache:
    if not setup.config.cache:
        return ResponseCache()
    return ResponseCache(repo_paths.writable_dir(setup.repo, repo_paths.CACHE_DIR,
                                                 fix="remove the link or set `cache: false`"))


def epoch_for(setup: Setup, skill: SkillConfig, tasks: list[Task],
              documents: dict[str, str | None]) -> EpochResult:
    settings = setup.config.epoch_settings()
    backend = make_backend(setup, skill.name)
    ceiling = call_ceiling(settings, tasks, documents.get("memory") is not None)
    setup.say(f"{skill.name}: {len(tasks)} tasks; this epoch needs at most "
              f"{min(ceiling, settings.max_calls)} model calls (ceiling {ceiling}, "
              f"budget.max_calls {settings.max_calls}; cache hits are free), backend "
              f"{backend.name}{' (simulated)' if backend.simulated else ''}")
    return run_epoch(tasks, documents, settings, backend, skill=skill.name,
                     cache=make_cache(setup), progress=setup.say,
                     redact=setup.redactor.redact,
                     steps=setup.counter if setup.steps else None)


def write_report(setup: Setup, result: EpochResult, output_dir: Path | None,
                 extra: Mapping[str, Any]) -> tuple[Path, dict[str, Any]]:
    out = output_dir or default_output_dir(setup.repo, result.skill)
    prices = {m: p.model_dump() for m, p in (setup.config.prices or {}).items()}
    usd = result.cost.estimate_usd(prices)
    data = report.diagnostics(
        result, {"gitsleep_version": __version__, "estimated_usd": usd, **extra},
        redactor=setup.redactor,
    )
    path = out / "diagnostics.json"
    report.write_diagnostics(path, data)
    return path, data


def rerun_command(skill: str) -> str:
    return f"gitsleep consolidate --skill {skill}"


# -- dry run ------------------------------------------------------------------------------


def dry_run(setup: Setup, skill: SkillConfig, output_dir: Path | None) -> SkillOutcome:
    """The epoch on the working files: no commit, no push, no PR."""
    tasks, documents = read_inputs(setup.repo, skill, setup.say)
    result = epoch_for(setup, skill, tasks, documents)
    path, _ = write_report(setup, result, output_dir, {"dry_run": True})
    summary = report.json_summary(result, branch=None, commit=None,
                                  pr={"operation": "none", "reason": "dry run"},
                                  diagnostics_path=path, redactor=setup.redactor)
    return SkillOutcome(skill.name, summary, result.abort_code, result,
                        pr_body=report.pr_body(result, rerun=rerun_command(skill.name),
                                               redactor=setup.redactor))


# -- the git-native run -------------------------------------------------------------------


@dataclass
class GitOptions:
    base: str | None = None
    push: bool | None = None  # None: push when a remote exists
    pr: bool | None = None  # None: open PRs when a forge token is available
    output_dir: Path | None = None


def consolidate(setup: Setup, skill: SkillConfig, options: GitOptions) -> SkillOutcome:
    """One skill through git: returns its outcome; raises GitsleepError for bad input.

    A branch that already records these inputs is up to date: no model call, no commit.
    If an earlier run was killed after its commit but before its push or its pull request,
    the epoch is replayed from the response cache (no model call) to finish that work.
    """
    from gitsleep import gitops
    from gitsleep.lock import RepoLock

    repo = gitops.open_repo(setup.repo)
    base = gitops.resolve_base(repo, options.base)
    branch = f"{setup.config.branch_prefix}{skill.name}"
    remote = base.remote or gitops.default_remote(repo, base.branch)
    with RepoLock(repo, skill.name):
        gitops.check_branch_name(repo, branch, base, remote)
        state = gitops.inspect_branch(repo, branch, base.sha, remote)
        gitops.check_shallow(repo, base.sha, [t for t in (state.local_tip, state.remote_tip) if t])
        gitops.ensure_gitsleep_branch(state)
        gitops.ensure_only_gitsleep_commits(state)
        for relative in filter(None, (skill.skill, skill.memory)):
            require_tracked(repo, base.sha, relative)
        # Every epoch starts from the base: an earlier gitsleep commit on the branch is
        # superseded, so the branch is always the base plus one reviewable commit.
        with gitops.temporary_worktree(repo, branch, base.sha) as tree:
            tree = Path(tree)
            tasks, documents = read_inputs(tree, skill, setup.say)
            digests = {
                "Gitsleep-Base": base.sha,
                "Gitsleep-Tasks": task_files_digest(tree, skill),
                "Gitsleep-Model": _models(setup),
                "Gitsleep-Inputs": inputs_digest(setup.config, skill, tree, documents),
            }
            done = gitops.is_up_to_date(
                state.last_trailers, base_sha=base.sha, tasks_digest=digests["Gitsleep-Tasks"],
                inputs_digest=digests["Gitsleep-Inputs"],
            )
            unpushed = bool(remote and options.push is not False and state.local_tip
                            and state.local_tip != state.remote_tip)
            # a run stopped between its commit and its note: the note is written before the push
            unnoted = bool(done and state.last_gitsleep_commit and not state.noted)
            if (done and not unpushed and remote and options.push is not False
                    and state.last_gitsleep_commit
                    and gitops.read_note(repo, state.last_gitsleep_commit, NOTES_REF)
                    and not gitops.remote_has_note(repo, remote, state.last_gitsleep_commit)):
                error = gitops.push_notes(repo, remote, NOTES_REF)  # a kill mid notes push
                setup.say(f"{skill.name}: pushed the diagnostics note left behind"
                          if error is None else f"{skill.name}: notes push failed: {error}")
            if done and not unpushed and not unnoted and not _pr_missing(
                    setup, repo, remote, branch, state, options):
                return _up_to_date(setup, skill, branch, state, tasks)
            if done:
                setup.say(f"{skill.name}: finishing an interrupted run (note, push or pull "
                          "request); replaying the epoch from the cache")
            result = epoch_for(setup, skill, tasks, documents)
            extra = {"base": base.sha, "branch": branch, **digests}
            path, data = write_report(setup, result, options.output_dir, extra)
            message = report.commit_message(result, digests, setup.redactor)
            outcome = SkillOutcome(skill.name, {}, result.abort_code, result,
                                   commit_message=message)
            if done:
                commit = state.last_gitsleep_commit
                if unnoted and commit:
                    gitops.add_note(repo, commit, report.dumps_diagnostics(
                        gitops.with_proof(data, commit, branch)), NOTES_REF)
                    setup.say(f"{skill.name}: attached the diagnostics note missing from "
                              f"{commit[:12]}")
            else:
                commit = _commit(setup, repo, tree, skill, branch, result, message, data)
        pushed = False
        if remote and options.push is not False and (commit and not done or unpushed):
            gitops.push(repo, remote, branch, state.remote_tip)
            pushed = True
            setup.say(f"{skill.name}: pushed {branch} to {remote}")
        elif remote and options.push is not False and unnoted:
            error = gitops.push_notes(repo, remote, NOTES_REF)
            if error is not None:
                setup.say(f"{skill.name}: notes push failed: {error}")
        pr = _sync_pr(setup, skill, result, branch, base.branch or base.name, remote, repo,
                      options, pushed=pushed, outcome=outcome)
    outcome.summary = report.json_summary(result, branch=branch, commit=commit, pr=pr,
                                          diagnostics_path=path, redactor=setup.redactor)
    return outcome


def _commit(setup: Setup, repo: Any, tree: Path, skill: SkillConfig, branch: str,
            result: EpochResult, message: str, data: Mapping[str, Any]) -> str | None:
    """Write the accepted documents into the worktree, commit them, attach the note."""
    from gitsleep import gitops

    if result.decision != "accepted" or not result.changed:
        return None
    for target, (_, after) in result.documents.items():
        relative = skill.skill if target == "skill" else skill.memory
        (tree / relative).write_bytes(after.encode("utf-8"))
    paths = [p for p in (skill.skill, skill.memory) if p]
    commit = gitops.commit_documents(repo, tree, branch, paths, message)
    gitops.add_note(repo, commit, report.dumps_diagnostics(
        gitops.with_proof(dict(data), commit, branch)), NOTES_REF)
    setup.say(f"{skill.name}: committed {commit[:12]} on {branch}")
    return commit


def _trailer_improved(trailers: Mapping[str, str], min_delta: float) -> bool:
    """Whether the recorded epoch would open a PR: held-out, else val, strictly improved."""
    for key in ("Gitsleep-Test", "Gitsleep-Val"):
        before, after = _scores_from_trailer(trailers.get(key))
        if before is not None and after is not None:
            return gate.improves(before, after, min_delta)
    return False


def _pr_missing(setup: Setup, repo: Any, remote: str | None, branch: str, state: Any,
                options: GitOptions) -> bool:
    """An improving recorded epoch whose PR was never opened (a run killed before it)."""
    if options.pr is False or options.push is False or remote is None:
        return False
    if not _trailer_improved(state.last_trailers, setup.config.gate.min_delta):
        return False
    hub, _ = _forge_for(setup, repo, remote)
    if hub is None:
        return False
    return hub.find_open_pr(branch) is None and hub.find_closed_pr(branch) is None


def _forge_for(setup: Setup, repo: Any, remote: str) -> tuple[Any, str]:
    """The GitHub client for this remote, or None and the reason there is none."""
    from gitsleep import forge

    remote_url = repo.remotes[remote].url if remote in [r.name for r in repo.remotes] else None
    settings, why_not = forge.settings_from_env(setup.env, remote_url)
    if settings is None:
        return None, why_not
    return forge.forge_from_env(setup.env, remote_url), ""


def require_tracked(repo: Any, base_sha: str, relative: str) -> None:
    """A document must be committed at the base: gitsleep commits on top of it."""
    if not repo.git.ls_tree("--name-only", base_sha, "--", relative).strip():
        raise UsageError(f"{relative}: not tracked by git at the base commit {base_sha[:12]}; "
                         "commit it first (git add + git commit)")


def _models(setup: Setup) -> str:
    agent, optimizer, _ = setup.config.models()
    return f"{agent} / {optimizer}"


def _up_to_date(setup: Setup, skill: SkillConfig, branch: str, state: Any,
                tasks: list[Task]) -> SkillOutcome:
    """The summary of an epoch the branch already records, read from its trailers."""
    setup.say(f"{skill.name}: up to date: {branch} already records this base, these tasks "
              "and these documents; nothing to do")
    trailers = state.last_trailers

    def recorded(key: str, split: str) -> SplitSummary:
        before, after = _scores_from_trailer(trailers.get(key))
        return SplitSummary(before, after, sum(1 for t in tasks if t.split == split))

    agent, optimizer, judge = setup.config.models()
    recorded_result = EpochResult(
        skill=skill.name,
        decision=trailers.get("Gitsleep-Decision", "accepted"),
        reason="up to date: the branch already holds the result for these inputs",
        metric=trailers.get("Gitsleep-Metric", setup.config.gate.metric),
        backend=setup.config.backend, agent_model=agent, optimizer_model=optimizer,
        judge_model=judge, train=SplitSummary(None, None, 0),
        val=recorded("Gitsleep-Val", "val"), test=recorded("Gitsleep-Test", "test"),
        documents={},
    )
    summary = report.json_summary(recorded_result, branch=branch,
                                  commit=state.last_gitsleep_commit,
                                  pr={"operation": "none", "reason": "up to date: its pull "
                                      "request, if one was opened, is unchanged"},
                                  diagnostics_path=None, redactor=setup.redactor)
    return SkillOutcome(skill.name, {**summary, "up_to_date": True})


def _scores_from_trailer(value: str | None) -> tuple[float | None, float | None]:
    """(baseline, candidate) from a `0.250 -> 1.000` trailer value."""
    try:
        before, after = (None if p.strip() == "n/a" else float(p) for p in
                         (value or "").split("->"))
    except ValueError:
        return None, None
    return before, after


def _history_chart(setup: Setup, skill: SkillConfig, branch: str, base: str,
                   metric: str) -> str:
    """The held-out-per-epoch chart for the PR body, from the skill's recorded epochs."""
    from gitsleep import history

    epochs = history.read_epochs(setup.repo, base=base, branch_refs=[f"refs/heads/{branch}"],
                                 skills=[skill.name])
    return report.held_out_chart(history.held_out_points(epochs), metric)


def _sync_pr(setup: Setup, skill: SkillConfig, result: EpochResult, branch: str,
             base_name: str, remote: str | None, repo: Any, options: GitOptions, *,
             pushed: bool, outcome: SkillOutcome) -> dict[str, Any]:
    """Create, update or close the skill's PR per the rules; never without a push."""
    none = {"operation": "none", "number": None, "url": None}
    if options.pr is False or options.push is False:
        return {**none, "reason": "--no-pr" if options.pr is False else "--no-push"}
    if result.decision == "aborted":
        return none
    if remote is None:
        return {**none, "reason": "the repository has no remote to push to"}
    from gitsleep import forge

    hub, why_not = _forge_for(setup, repo, remote)
    if hub is None:
        if options.pr:
            raise UsageError(f"--pr cannot open a pull request: {why_not}")
        setup.say(f"{skill.name}: no pull request: {why_not}")
        return {**none, "reason": why_not}
    improved = result.pr_eligible and result.decision == "accepted"
    body = report.pr_body(result, rerun=rerun_command(skill.name), redactor=setup.redactor,
                          chart=_history_chart(setup, skill, branch, base_name, result.metric))
    outcome.pr_body = body
    pr_cfg = setup.config.pr
    try:
        done = forge.sync_pull_request(
            hub, head=branch, base=pr_cfg.base or base_name, title=report.pr_title(result),
            body=body, labels=list(pr_cfg.labels), draft=pr_cfg.draft, improved=improved,
            branch_changed=pushed, close_reason=result.reason, redact=setup.redactor.redact,
        )
    except GitsleepError:
        raise
    except Exception as exc:  # noqa: BLE001 - a forge library error must be one line
        raise GitError(f"GitHub API error: {setup.redactor.redact(str(exc))[:300]}") from None
    return done.to_json()
