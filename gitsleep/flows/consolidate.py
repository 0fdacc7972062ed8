"""One skill, end to end: lock -> worktree -> epoch -> commit -> note -> push -> PR.

The order of the git steps (open, base, remote, lock, claim, worktree, commit with its
note, push, the forge client) is `gitsleep.git_forge.publish_sequence`, which
`harvest --branch` uses too. The epoch itself
is pure (`gitsleep.core.epoch`); git and the forge are thin edges around it; what a command
needs before it runs (config, inputs, backend, cache) is `gitsleep.flows.prepare`, what a commit
records is `gitsleep.git_forge.record`, and what this run must do (a new epoch, finish an
interrupted one, or nothing) is `gitsleep.git_forge.recovery`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import git

from gitsleep import __version__, report
from gitsleep.base.errors import GitsleepError, UsageError
from gitsleep.core.epoch import budget_note, call_ceiling, noise_estimate, run_epoch
from gitsleep.core.models import AgentSummary, EpochResult, SplitSummary, Task
from gitsleep.core.outcome import Edits, PrResult, SkillSummary, opens_pr, section
from gitsleep.flows import triggers
from gitsleep.flows.prepare import Setup, make_backend, make_cache, read_inputs
from gitsleep.git_forge import forge, gitops, history, record
from gitsleep.git_forge import publish_sequence as sequence
from gitsleep.git_forge.gitrun import git_run, run_git
from gitsleep.git_forge.publish_sequence import Claimed, forge_call
from gitsleep.git_forge.record import Digests
from gitsleep.git_forge.recovery import GitOptions, plan_recovery
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import load_trigger_tasks

# read_inputs: the benchmarks read a skill's inputs from here
__all__ = ["GitOptions", "Night", "SkillOutcome", "consolidate", "dry_run", "nights",
           "read_inputs", "rerun_consolidate", "simulated_push", "uncommitted"]


@dataclass
class SkillOutcome:
    """What one skill's run produced, for the CLI to print and turn into an exit code."""

    skill: str
    summary: SkillSummary
    exit_code: int = 0
    result: EpochResult | None = None
    commit_message: str | None = None
    pr_body: str | None = None
    notes: list[str] = field(default_factory=list)


# -- one epoch and its report ----------------------------------------------------------


def default_output_dir(repo: Path, skill: str) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    runs = repo_paths.writable_dir(repo, repo_paths.RUNS_DIR,
                                   fix="remove the link or pass --output-dir")
    return runs / f"{skill}-{stamp}"


def epoch_for(setup: Setup, skill: SkillConfig, tasks: list[Task],
              documents: dict[str, str | None], root: Path | None = None) -> EpochResult:
    """The night's epoch on the inputs read under `root`, and its trigger pass when the
    skill allows one (`gitsleep.flows.triggers`)."""
    passes = triggers.trigger_inputs(setup, root, skill) if root is not None else None
    settings = setup.config.epoch_settings(skill=skill.name)
    if passes is None and not tasks and root is not None and load_trigger_tasks(root, skill):
        return triggers.body_less(skill.name, documents, settings, setup.config.backend,
                                  "trigger tasks only, and tune_description is off: nothing "
                                  "for a night to change (its queries gate its siblings)")
    if passes is None:
        return _body_epoch(setup, skill, tasks, documents)
    setup.say(f"{skill.name}: {triggers.cost_line(settings, passes)}")
    result = (_body_epoch(setup, skill, tasks, documents) if tasks else
              triggers.body_less(skill.name, documents, settings, setup.config.backend))
    return triggers.with_triggers(setup, skill, passes, result, tasks, documents)


def _body_epoch(setup: Setup, skill: SkillConfig, tasks: list[Task],
                documents: dict[str, str | None]) -> EpochResult:
    settings = setup.config.epoch_settings(skill=skill.name)
    backend = make_backend(setup, skill.name)
    # several agents: the ceiling and the estimate count each agent's answers themselves
    ceiling = call_ceiling(settings, tasks, documents.get("memory") is not None)
    setup.say(f"{skill.name}: {len(tasks)} tasks; this epoch needs at most "
              f"{min(ceiling, settings.max_calls)} model calls (ceiling {ceiling}, "
              f"budget.max_calls {settings.max_calls}; cache hits are free), backend "
              f"{backend.name}{' (simulated)' if backend.simulated else ''}")
    setup.say(f"{skill.name}: noise: {noise_estimate(settings, tasks)}")
    if settings.search == "thrifty":  # its worst case is above thorough's: say why
        setup.say(f"{skill.name}: search thrifty: that worst case adds each proposal's "
                  "screen to thorough's passes; a night usually makes fewer calls, since a "
                  "proposal turned away by its screen is not scored on val")
    budget = budget_note(settings, tasks, documents, min(ceiling, settings.max_calls))
    if budget:  # minutes and money, before the first call and in --dry-run
        setup.say(f"{skill.name}: budget: {budget}")
    return run_epoch(tasks, documents, settings, backend, skill=skill.name,
                     cache=make_cache(setup), progress=setup.say,
                     redact=setup.redactor.redact,
                     steps=setup.counter if setup.steps else None)


def write_report(setup: Setup, result: EpochResult, output_dir: Path | None,
                 extra: Mapping[str, object]) -> report.Diagnostics:
    """diagnostics.json for `result`; `extra` (the base, the branch, the trailers) goes
    into its `extra` section as it is."""
    out = output_dir or default_output_dir(setup.repo, result.skill)
    prices = {m: p.model_dump() for m, p in (setup.config.prices or {}).items()}
    usd = result.cost.estimate_usd(prices)
    return report.Diagnostics.write(
        out / "diagnostics.json", result,
        {"gitsleep_version": __version__, "estimated_usd": usd, **extra}, setup.redactor)


def rerun_consolidate(skill: str) -> str:
    """The command line that runs this skill's night again (for the PR body)."""
    return f"gitsleep consolidate --skill {skill}"


# -- dry run ------------------------------------------------------------------------------


def dry_run(setup: Setup, skill: SkillConfig, output_dir: Path | None,
            base: str | None = None) -> SkillOutcome:
    """The epoch on the working files, or on the files committed at `base` when given
    (`--dry-run --base REF`): no commit, no push, no PR."""
    if base is None:
        tasks, documents = read_inputs(setup.repo, skill, setup.say)
        result = epoch_for(setup, skill, tasks, documents, root=setup.repo)
    else:
        result = _dry_run_at(setup, skill, base)
    path = write_report(setup, result, output_dir, {"dry_run": True}).path
    summary = report.json_summary(result, branch=None, commit=None,
                                  pr=PrResult(reason="dry run"),
                                  diagnostics_path=path, redactor=setup.redactor)
    return SkillOutcome(skill.name, summary, result.abort_code, result,
                        pr_body=report.pr_body(result, rerun=rerun_consolidate(skill.name),
                                               redactor=setup.redactor))


def _dry_run_at(setup: Setup, skill: SkillConfig, ref: str) -> EpochResult:
    """The epoch on the files at `ref`, read in a private detached worktree (the user's
    tree, index and branches untouched); a ref that is no commit is exit 2."""
    with sequence.files_at(setup.repo, ref, skill.name, f"dry-run/{skill.name}") as tree:
        tasks, documents = read_inputs(tree, skill, setup.say)
        return epoch_for(setup, skill, tasks, documents, root=tree)


# -- the git-native run -------------------------------------------------------------------


def consolidate(setup: Setup, skill: SkillConfig, options: GitOptions) -> SkillOutcome:
    """One skill through git: returns its outcome; raises GitsleepError for bad input.

    A branch that already records these inputs is up to date: no model call, no commit.
    If an earlier run was killed after its commit but before its push or its pull request,
    the epoch is replayed from the response cache (no model call) to finish that work.
    """
    branch = sequence.skill_branch(setup.config.branch_prefix, skill.name)
    # the name, proof that gitsleep made the branch, and no commit of anyone else's
    with sequence.publishing(setup.repo, branch, skill.name, base_ref=options.base) as claimed:
        base, state = claimed.base, claimed.state
        for relative in filter(None, (skill.skill, skill.memory)):
            require_tracked(claimed.repo, base.sha, relative)
        # Every epoch starts from the base: an earlier gitsleep commit on the branch is
        # superseded, so the branch is always the base plus one reviewable commit.
        with claimed.worktree(base.sha) as tree:
            tree = Path(tree)
            tasks, documents = read_inputs(tree, skill, setup.say)
            digests = Digests.of(setup.config, skill, tree, documents, base.sha)
            plan = plan_recovery(claimed, digests, options, env=setup.env,
                                 min_delta=setup.config.gate.min_delta)
            if plan.push_note:
                error = claimed.push_notes()
                setup.say(f"{skill.name}: pushed the diagnostics note left behind"
                          if error is None else f"{skill.name}: notes push failed: {error}")
            if plan.action == "up to date":
                return SkillOutcome(skill.name, up_to_date(setup, skill, claimed, tasks))
            if plan.action == "finish":
                setup.say(f"{skill.name}: finishing an interrupted run (note, push or pull "
                          "request); replaying the epoch from the cache")
            result = epoch_for(setup, skill, tasks, documents, root=tree)
            # the pull-request decision is recorded as data, for a run finishing this one
            extra = {"base": base.sha, "branch": branch, **digests.trailers(),
                     **record.pr_field(opens_pr(result))}
            diagnostics = write_report(setup, result, options.output_dir, extra)
            message = report.commit_message(result, digests.trailers(), setup.redactor)
            if plan.action == "finish":
                commit = state.last_gitsleep_commit
                if plan.add_note and commit:
                    claimed.attach_note(commit, diagnostics)
                    setup.say(f"{skill.name}: attached the diagnostics note missing from "
                              f"{commit[:12]}")
            else:
                commit = _commit(setup, claimed, tree, skill, result, message, diagnostics)
        pushed = False
        if claimed.remote and plan.push and (commit and plan.action == "epoch"
                                             or plan.push_branch):
            claimed.push()
            pushed = True
            setup.say(f"{skill.name}: pushed {branch} to {claimed.remote}")
        elif claimed.remote and plan.push and plan.add_note:
            error = claimed.push_notes()
            if error is not None:
                setup.say(f"{skill.name}: notes push failed: {error}")
        refuse_unpushed(options, claimed, commit, result)
        pr, body = _sync_pr(setup, skill, result, claimed, options, pushed=pushed,
                            commit=commit)
    summary = report.json_summary(result, branch=branch, commit=commit, pr=pr,
                                  diagnostics_path=diagnostics.path, redactor=setup.redactor)
    return SkillOutcome(skill.name, summary, result.abort_code, result,
                        commit_message=message, pr_body=body)


def _commit(setup: Setup, claimed: Claimed, tree: Path, skill: SkillConfig,
            result: EpochResult, message: str, note: report.Diagnostics) -> str | None:
    """Write the accepted documents into the worktree, commit them, attach the note."""
    if result.decision != "accepted" or not result.changed:
        return None
    for target, (_, after) in result.documents.items():
        (tree / skill.documents()[target]).write_bytes(after.encode("utf-8"))
    paths = [p for p in (skill.skill, skill.memory) if p]
    commit = claimed.commit(tree, paths, message, note)
    setup.say(f"{skill.name}: committed {commit[:12]} on {claimed.branch}")
    return commit


# -- every chosen skill, and what the command decides before them ---------------------------


SIMULATED_LOCAL = ("a simulated night (offline backend) is not pushed unless asked: pass "
                   "--push (or --pr) to send it to the remote")


def simulated_push(setup: Setup, push: bool | None,
                   pr: bool | None) -> tuple[bool | None, str | None]:
    """(push, why it stays local): a night the offline simulator answered, proposed or
    judged is a try-out, so its branch is not pushed to the team's remote (nor a pull
    request opened) unless `--push` or `--pr` asks. A remote that is a folder on this
    machine (the throw-away bare repository of `gitsleep demo`, a tutorial or a test) is
    nobody's shared remote: there the spec's default holds (push when a remote exists)."""
    if push is not None or pr or "offline" not in setup.config.backends():
        return push, None
    if gitops.remotes_all_on_this_machine(setup.repo):
        return push, None
    return False, SIMULATED_LOCAL


def uncommitted(repo: Path, skill: SkillConfig) -> list[str]:
    """The skill's documents and task files with changes git has not committed.

    `--no-optional-locks` keeps `git status` from refreshing the user's index, and
    `git_run` keeps it from running the repository's fsmonitor or hooks.
    """
    paths = [p for p in (skill.skill, skill.memory) if p] + [t.path for t in skill.tasks]
    done = git_run(repo, "--no-optional-locks", "status", "--porcelain", "-z",
                   "--untracked-files=all", "--", *paths)
    if done.status != 0:
        return []
    entries = [e for e in done.out.decode("utf-8", "replace").split("\0") if e]
    return sorted({e[3:] for e in entries if len(e) > 3 and e[2] == " "})


@dataclass
class Night:
    """One chosen skill's night: its outcome, or the error that stopped it (several
    skills: each runs even when another fails)."""

    skill: str
    outcome: SkillOutcome | None = None
    error: GitsleepError | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return self.error.exit_code
        return self.outcome.exit_code if self.outcome is not None else 0


def nights(setup: Setup, chosen: list[SkillConfig], options: GitOptions, *, dry: bool
           ) -> Iterator[Night]:
    """Each chosen skill's night in turn (a dry run, or through git). One skill's error
    is raised as it is; with several, it is that skill's result and the others run."""
    for skill in chosen:
        out_dir = (options.output_dir / skill.name
                   if options.output_dir and len(chosen) > 1 else options.output_dir)
        try:
            if dry:
                outcome = dry_run(setup, skill, out_dir, options.base)
            else:
                outcome = consolidate(setup, skill, replace(options, output_dir=out_dir))
        except GitsleepError as exc:
            if len(chosen) == 1:
                raise
            setup.say(f"{skill.name}: error: {exc}")
            yield Night(skill.name, error=exc)
            continue
        unused = [] if dry else uncommitted(setup.repo, skill)
        if unused:
            outcome.summary = replace(outcome.summary, uncommitted=tuple(unused))
        yield Night(skill.name, outcome)


# -- a branch that already records this epoch ----------------------------------------------


def recorded_edits(repo: git.Repo, commit: str | None) -> Edits:
    """The edits the epoch at `commit` recorded in its diagnostics note; none when the note
    is missing or unreadable (a note is untrusted input: wrong shapes read as nothing)."""
    note = record.note_data(gitops.read_note(repo, commit) if commit else None)
    return Edits.from_json(section(note, "edits"))


def up_to_date(setup: Setup, skill: SkillConfig, claimed: Claimed,
               tasks: list[Task]) -> SkillSummary:
    """The summary of an epoch the branch already records, read from its trailers and
    its note's edits."""
    state, branch = claimed.state, claimed.branch
    trailers = state.last_trailers

    def recorded(key: str, split: str) -> SplitSummary:
        before, after = record.scores(trailers, key)
        return SplitSummary(before, after, sum(1 for t in tasks if t.split == split))

    agent, optimizer, judge = setup.config.models(skill=skill.name)
    settings = setup.config.epoch_settings(skill=skill.name)
    models = {ref.name: ref for ref in settings.agents}
    per_agent = [AgentSummary(  # several agents: each one's recorded scores
        a.name, models[a.name].model if a.name in models else "",
        models[a.name].backend if a.name in models else "", SplitSummary(None, None, 0),
        SplitSummary(*a.val, n=sum(1 for t in tasks if t.split == "val")),
        SplitSummary(*a.test, n=sum(1 for t in tasks if t.split == "test")))
        for a in record.agent_scores(trailers)]
    recorded_result = EpochResult(
        skill=skill.name,
        decision=record.recorded_decision(trailers),
        reason=(f"{branch} already records this base, these tasks and these documents; "
                "nothing to do"),
        metric=trailers.get(record.METRIC, setup.config.gate.metric),
        backend=setup.config.backend, agent_model=agent, optimizer_model=optimizer,
        judge_model=judge, train=SplitSummary(None, None, 0),
        val=recorded(record.VAL, "val"), test=recorded(record.TEST, "test"),
        documents={}, agents=per_agent, agent_gate=settings.gate.agents,
    )
    summary = report.json_summary(recorded_result, branch=branch,
                                  commit=state.last_gitsleep_commit,
                                  pr=PrResult(reason="up to date: its pull request, if one "
                                              "was opened, is unchanged"),
                                  diagnostics_path=None, redactor=setup.redactor)
    # This run decided nothing: it says so and repeats the recorded decision with the
    # recorded edits, never "accepted" beside empty edit lists.
    return summary.as_up_to_date(recorded_edits(claimed.repo, state.last_gitsleep_commit))


def require_tracked(repo: git.Repo, base_sha: str, relative: str) -> None:
    """A document must be committed at the base: gitsleep commits on top of it. One that
    is nowhere (a wrong path in the config) is said as `validate` says it."""
    if not run_git(repo.git, "ls-tree", "--name-only", base_sha, "--", relative).strip():
        if not (Path(repo.working_dir) / relative).exists():
            raise UsageError(f"{relative}: document not found: create it or fix the path in "
                             "the config (validate: GS200)")
        raise UsageError(f"{relative}: not tracked by git at the base commit {base_sha[:12]}; "
                         "commit it first (git add + git commit)")


def _history_chart(setup: Setup, skill: SkillConfig, branch: str, base: str,
                   metric: str) -> str:
    """The held-out-per-epoch chart for the PR body, from the skill's recorded epochs."""
    epochs = history.read_epochs(setup.repo, base=base, branch_refs=[f"refs/heads/{branch}"],
                                 skills=[skill.name], details=False)  # trailers, not notes
    return report.held_out_chart(history.held_out_points(epochs), metric)


NO_REMOTE = "the repository has no remote (add one: `git remote add origin <url>`)"


def kept(claimed: Claimed, commit: str | None) -> str:
    """Where the night's work stays when a flag asked for more than could be done."""
    if commit:
        return f"; the night's commit {commit[:12]} stays on {claimed.branch}"
    return ""


def refuse_unpushed(options: GitOptions, claimed: Claimed, commit: str | None,
                    result: EpochResult) -> None:
    """`--push` or `--pr` given, a commit to send, and no remote: exit 2, said in one line,
    rather than a night that reads as pushed (nothing is undone: the commit stays)."""
    if claimed.remote is not None or not commit or result.decision == "aborted":
        return
    if options.pr:
        raise UsageError(f"--pr: no pull request was opened and nothing was pushed: "
                         f"{NO_REMOTE}{kept(claimed, commit)}")
    if options.push:
        raise UsageError(f"--push: nothing was pushed: {NO_REMOTE}{kept(claimed, commit)}")


def _sync_pr(setup: Setup, skill: SkillConfig, result: EpochResult, claimed: Claimed,
             options: GitOptions, *, pushed: bool,
             commit: str | None = None) -> tuple[PrResult, str | None]:
    """Create, update or close the skill's PR per the rules; never without a push.
    Returns what was done and the body it was given (None when none was rendered).
    `--pr` that cannot reach a forge (no token) is exit 2: a flag given is honoured or
    refused, never dropped without a word."""
    if options.pr is False or options.push is False:
        reason = "--no-pr" if options.pr is False else options.local_reason or "--no-push"
        return PrResult(reason=reason), None
    if result.decision == "aborted":
        return PrResult(), None
    if claimed.remote is None:
        return PrResult(reason="the repository has no remote to push to"), None
    hub, why_not = claimed.forge(setup.env)
    if hub is None:
        if options.pr:
            raise UsageError(f"--pr: no pull request was opened: {why_not}"
                             f"{kept(claimed, commit)}")
        setup.say(f"{skill.name}: no pull request: {why_not}")
        return PrResult(reason=why_not), None
    branch, base_name = claimed.branch, claimed.base_name
    body = report.pr_body(result, rerun=rerun_consolidate(skill.name), redactor=setup.redactor,
                          chart=_history_chart(setup, skill, branch, base_name, result.metric))
    pr_cfg = setup.config.pr
    try:
        done = forge_call(setup.redactor.redact, lambda: forge.sync_pull_request(
            hub, head=branch, base=pr_cfg.base or base_name, title=report.pr_title(result),
            body=body, labels=list(pr_cfg.labels), draft=pr_cfg.draft,
            improved=opens_pr(result), branch_changed=pushed, close_reason=result.reason,
            redact=setup.redactor.redact))
    finally:
        hub.close()
    return PrResult(done.operation, done.number, done.url), body
