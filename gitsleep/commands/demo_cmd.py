"""`gitsleep demo`: the bundled example, consolidated for real with the offline simulator.

It copies `examples/brief-writer` (or the example `--example` names) into a temporary git
repository with a bare `origin` beside it and runs `consolidate` exactly as a user would
(`gitsleep.flows.demo`), then prints the branch, the commit message and the pull-request
body it would open. No key, no
network: the simulator stands in for the model and says so.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from gitsleep import report
from gitsleep.commands.common import print_json
from gitsleep.core.outcome import Scores, opens_pr
from gitsleep.core.scores import fmt_change
from gitsleep.flows import consolidate as run
from gitsleep.flows.demo import EXAMPLE, example_names, run_demo
from gitsleep.flows.prepare import Setup


@click.command("demo")
@click.option("--keep", is_flag=True, help="Keep the temporary repository and print its path.")
@click.option("--json", "as_json", is_flag=True, help="Print the consolidate JSON only.")
@click.option("--example", default=EXAMPLE, show_default=True,
              type=click.Choice(example_names()),
              help="The bundled example to consolidate (dependency-review learns a verdict "
                   "that depends on the input).")
@click.pass_context
def demo(ctx: click.Context, keep: bool, as_json: bool, example: str) -> None:
    """Run a full consolidation of a bundled example with the offline simulator."""
    where = Path(tempfile.mkdtemp(prefix="gitsleep-demo-"))
    try:
        quiet = (ctx.obj or {}).get("verbosity", 0) < 0 or as_json
        done = run_demo(where, example, quiet=quiet)
        outcome, setup, repo_dir = done.outcome, done.setup, done.repo
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
        body = report.pr_body(result, rerun=run.rerun_consolidate(s.skill),
                              redactor=setup.redactor)
        verb = "would open" if opens_pr(result) else "would NOT open (held-out did not improve)"
        click.echo(f"{rule}\nPull request it {verb}: {report.pr_title(result)}\n{rule}\n{body}")


def _pair(scores: Scores) -> str:
    return f"{fmt_change(scores.baseline, scores.candidate)} (n={scores.n})"
