"""`gitsleep demo`: the bundled example, consolidated for real with the offline simulator.

It copies `examples/brief-writer` (or the example `--example` names) into a temporary git
repository (with a bare `origin`
beside it, so the push runs too), runs `consolidate` exactly as a user would, and prints
the branch, the commit message and the pull-request body it would open. No key, no
network: the simulator stands in for the model and says so.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import click
import git

from gitsleep import report
from gitsleep.base.bundled import examples_dir
from gitsleep.commands.common import print_json
from gitsleep.core.scores import fmt_change
from gitsleep.flows import consolidate as run
from gitsleep.flows.prepare import Setup
from gitsleep.git_forge.gitrun import run_git
from gitsleep.report.outcome import Scores, opens_pr

EXAMPLE = "brief-writer"


def example_names() -> list[str]:
    """The bundled examples a demo can run: each folder of `examples/` with a config (its
    one skill is named like the folder)."""
    return sorted(p.parent.name for p in examples_dir().glob("*/.gitsleep.yml"))


def make_demo_repo(where: Path, example: str = EXAMPLE) -> Path:
    """A fresh repository holding the example, one commit on `main`, and a bare origin."""
    repo_dir = where / "repo"
    shutil.copytree(examples_dir() / example, repo_dir)
    origin = where / "origin.git"
    runner = git.Git(str(repo_dir))  # every call through gitrun, with its safe settings
    run_git(runner, "init", "--quiet", "--initial-branch=main")
    for key, value in (("user.name", "gitsleep demo"), ("user.email", "demo@gitsleep.invalid"),
                       ("commit.gpgsign", "false")):
        run_git(runner, "config", key, value)
    run_git(runner, "add", "--all")
    run_git(runner, "commit", "--quiet", "--no-verify", "-m",
            f"Add the {example} skill and its tasks")
    run_git(runner, "init", "--quiet", "--bare", "--initial-branch=main", str(origin))
    run_git(runner, "remote", "add", "origin", str(origin))
    run_git(runner, "push", "--quiet", "origin", "main")
    return repo_dir


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary repository and print its path.")
@click.option("--json", "as_json", is_flag=True, help="Print the consolidate JSON only.")
@click.option("--example", default=EXAMPLE, show_default=True,
              type=click.Choice(example_names()),
              help="The bundled example to consolidate (dependency-review learns a verdict "
                   "that depends on the input).")
@click.pass_context
def command(ctx: click.Context, keep: bool, as_json: bool, example: str) -> None:
    """Run a full consolidation of a bundled example with the offline simulator."""
    where = Path(tempfile.mkdtemp(prefix="gitsleep-demo-"))
    try:
        repo_dir = make_demo_repo(where, example)
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")}
        quiet = (ctx.obj or {}).get("verbosity", 0) < 0 or as_json
        setup = Setup.load(repo_dir, None, env=env, backend="offline",
                               progress=(lambda _l: None) if quiet else None)
        skill = setup.config.skill(example)
        outcome = run.consolidate(setup, skill, run.GitOptions(pr=False,
                                  output_dir=where / "diagnostics"))
        if as_json:
            print_json(outcome.summary.to_json())
            return
        _print(outcome, setup)
        if keep:
            click.echo(f"\nThe demo repository is kept at {repo_dir} (its bare origin is "
                       f"beside it); look around with `git -C {repo_dir} log --all`.")
        else:
            click.echo(f"\nThe demo ran in {repo_dir}, removed now; `gitsleep demo --keep` "
                       "keeps it to look around.")
    finally:
        if not keep:
            shutil.rmtree(where, ignore_errors=True)


def _print(outcome: run.SkillOutcome, setup: Setup) -> None:
    s, result = outcome.summary, outcome.result
    rule = "=" * 72
    click.echo(f"{rule}\ngitsleep demo: skill '{s.skill}' with the offline simulator "
               "(no model, no key, no network)\n{rule}".replace("{rule}", rule))
    click.echo(f"decision: {s.decision} - {s.reason}")
    click.echo(f"val:      {_pair(s.val)}   held-out: {_pair(s.test)}")
    if s.triggers is not None:  # the trigger pass: which skill is picked, before and after
        click.echo(f"triggers: val {_pair(s.triggers.val)}   held-out {_pair(s.triggers.test)}")
        click.echo(f"  description: {s.triggers.description_after}")
    if report.metric_note(s.metric):
        click.echo(f"          ({report.metric_note(s.metric).replace('`', '')})")
    for edit in s.edits.applied:
        click.echo(f"  applied:  {edit.content}")
    for edit in s.edits.rejected:
        click.echo(f"  rejected: {edit.content}  ({edit.reason})")
    click.echo(f"cost:     {s.cost.calls} simulated model calls, "
               f"{s.cost.cache_hits} cache hits")
    click.echo(f"\nbranch:   {s.branch} at {s.commit} (pushed to a local bare origin)")
    click.echo(f"\n{rule}\nCommit message\n{rule}\n{outcome.commit_message or '(no commit)'}")
    if result is not None:
        body = report.pr_body(result, rerun=run.rerun_command(s.skill),
                              redactor=setup.redactor)
        verb = "would open" if opens_pr(result) else "would NOT open (held-out did not improve)"
        click.echo(f"{rule}\nPull request it {verb}: {report.pr_title(result)}\n{rule}\n{body}")


def _pair(scores: Scores) -> str:
    return f"{fmt_change(scores.baseline, scores.candidate)} (n={scores.n})"
