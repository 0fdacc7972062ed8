"""`gitsleep consolidate`: run one epoch per skill, commit, push and open PRs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from gitsleep import report
from gitsleep.base.errors import GitsleepError
from gitsleep.base.terminal import visible
from gitsleep.commands.common import (
    end_progress,
    exit_with,
    print_json,
    setup_from,
    worst_exit,
)
from gitsleep.flows import consolidate as run
from gitsleep.flows.prepare import Setup
from gitsleep.git_forge import gitops
from gitsleep.git_forge.gitrun import git_run
from gitsleep.inputs import repo_paths
from gitsleep.inputs.config import SkillConfig


@click.command("consolidate")
@click.option("--skill", "skills", multiple=True, help="Skill to run (repeatable; default all).")
@click.option("--base", default=None, help="Ref to start from (default: the current branch).")
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--dry-run", is_flag=True, help="Run on the working files: no commit, push or PR.")
@click.option("--push/--no-push", default=None,
              help="Push the branch (default: when a remote exists; a simulated night with "
                   "the offline backend only to a remote that is a folder here).")
@click.option("--pr/--no-pr", default=None,
              help="Open/update the PR (default: when a token exists and the branch is "
                   "pushed).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where diagnostics.json goes (default .gitsleep/runs/<skill>-<time>/).")
@click.pass_context
def command(ctx: click.Context, skills: tuple[str, ...], base: str | None, backend: str | None,
            model: str | None, dry_run: bool, push: bool | None, pr: bool | None,
            as_json: bool, output_dir: Path | None) -> None:
    """Run one consolidation epoch per skill."""
    setup = setup_from(ctx, backend=backend, model=model)
    chosen = setup.skills(skills)
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen], runs=output_dir is None)
    push, local_reason = simulated_push(setup, push, pr)
    outcomes: list[run.SkillOutcome] = []
    codes: list[int] = []
    for skill in chosen:
        out_dir = output_dir / skill.name if output_dir and len(chosen) > 1 else output_dir
        try:
            if dry_run:
                outcome = run.dry_run(setup, skill, out_dir, base)
            else:
                options = run.GitOptions(base=base, push=push, pr=pr, output_dir=out_dir,
                                         local_reason=local_reason)
                outcome = run.consolidate(setup, skill, options)
        except GitsleepError as exc:
            if len(chosen) == 1:
                raise
            setup.say(f"{skill.name}: error: {exc}")
            codes.append(exc.exit_code)
            continue
        unused = [] if dry_run else uncommitted(setup.repo, skill)
        if unused:
            outcome.summary = replace(outcome.summary, uncommitted=tuple(unused))
        outcomes.append(outcome)
        codes.append(outcome.exit_code)
        end_progress(setup)
        if not as_json:
            s = outcome.summary
            # An aborted epoch is a failure (exit 3 or 6): its line goes with the errors.
            err = s.decision == "aborted"
            dry = " (dry run: nothing committed, pushed or opened)" if dry_run else ""
            decision = "up to date" if s.up_to_date else s.decision
            click.echo(visible(f"{s.skill}: {decision}: {s.reason}{dry}"), err=err)
            if not err and outcome.result is not None and report.small_sample_note(
                    outcome.result):  # an aborted run decided nothing to call a hint
                click.echo(f"  warning: {report.small_sample_note(outcome.result)}", err=err)
            if unused:
                click.echo(f"  not used: uncommitted changes to {', '.join(unused)}; "
                           "consolidate reads the committed base, so commit them to include "
                           "them (or try them first with --dry-run)", err=err)
            if s.commit:
                click.echo(f"  commit {s.commit} on {s.branch}", err=err)
                if local_reason:
                    click.echo(f"  kept local: {local_reason}", err=err)
            if s.pr.operation != "none":
                click.echo(f"  pull request {s.pr.operation}: {s.pr.url}", err=err)
            if s.diagnostics:
                click.echo(f"  diagnostics: {s.diagnostics}", err=err)
    if as_json:
        summaries = [o.summary.to_json() for o in outcomes]
        print_json(summaries[0] if len(summaries) == 1 and len(chosen) == 1 else summaries)
    exit_with(worst_exit(codes))


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
