"""`gitsleep harvest`: tasks mined from local agent sessions, written for a person to review."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from gitsleep.commands.common import end_progress, print_json, setup_from
from gitsleep.flows.harvest import pipeline
from gitsleep.flows.harvest.flow import HarvestRequest
from gitsleep.flows.harvest.flow import harvest as harvest_tasks
from gitsleep.flows.prepare import Setup
from gitsleep.inputs.config import SkillConfig


@click.command("harvest")
@click.option("--skill", "skill_name", required=True, help="The skill the tasks are for.")
@click.option("--from", "source", required=True, type=click.Choice(sorted(pipeline.SOURCES)),
              help="claude (~/.claude/projects), codex (~/.codex/sessions) or jsonl "
                   "({prompt, answer, feedback} lines; give the files).")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--since", default=None, help="Only sessions active since: 7d, 12h, 2w or a date.")
@click.option("--max", "max_tasks", type=click.IntRange(1, 10_000), default=40,
              show_default=True, help="At most this many tasks, most relevant first.")
@click.option("--llm/--no-llm", default=False, show_default=True,
              help="Also ask the optimizer model for up to 3 tasks per session "
                   "(sends masked transcripts to the model provider).")
@click.option("--output", type=click.Path(path_type=Path), default=None,
              help="Task file to append to (default evals/<skill>/harvested.jsonl).")
@click.option("--branch", "on_branch", is_flag=True,
              help="Commit the file on gitsleep-harvest/<skill> (and open a PR with a token) "
                   "instead of writing it in the working tree.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def harvest(ctx: click.Context, skill_name: str, source: str, paths: tuple[Path, ...],
            since: str | None, max_tasks: int, llm: bool, output: Path | None,
            on_branch: bool, as_json: bool) -> None:
    """Mine tasks for a skill from Claude Code, Codex or JSONL history (local files only)."""
    setup = setup_from(ctx)
    done = harvest_tasks(setup, HarvestRequest(
        skill=skill_name, source=source, paths=paths, since=since, max_tasks=max_tasks,
        llm=llm, output=output, on_branch=on_branch))
    if as_json:
        end_progress(setup)
        summary = {"skill": skill_name, "from": source, "output": done.relative,
                   **done.counts.to_json(),
                   **({"branch": done.branch} if done.branch is not None else {})}
        print_json(setup.redactor.redact_obj(summary))
        return
    _report(setup, done.counts, done.branch, source, done.relative, done.skill)


def _report(setup: Setup, s: pipeline.HarvestCounts, branch: dict[str, Any] | None,
            source: str, relative: str, skill: SkillConfig) -> None:
    end_progress(setup)

    def listing(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {why}" for why, n in sorted(counts.items(), key=lambda i: -i[1]))

    click.echo(f"read {s.sessions} session(s) in {s.files} file(s) from {source}, "
               f"{s.lines} lines in {s.seconds:.2f} s"
               + (f"; skipped lines: {listing(s.skipped_lines)}" if s.skipped_lines else ""))
    click.echo(f"kept {s.kept_sessions} session(s) about {skill.name} in this repository"
               + (f"; dropped: {listing(s.dropped_sessions)}" if s.dropped_sessions else ""))
    click.echo(f"mined {s.tasks} task(s)"
               + (f"; dropped: {listing(s.dropped_tasks)}" if s.dropped_tasks else ""))
    masked = s.masked
    click.echo(f"masked before writing: {masked['secrets']} secret(s), {masked['home paths']} "
               f"home path(s), {masked['e-mail addresses']} e-mail address(es)")
    if not s.tasks:
        click.echo("nothing written")
        return
    if branch and not branch["commit"]:
        deleted = branch.get("deleted", 0)
        click.echo(f"nothing new for {branch['branch']}: its {relative} already holds "
                   f"{branch['duplicates']} of the {s.tasks} task(s)"
                   + (f"; {deleted} were deleted there in an earlier review" if deleted else ""))
        if branch["pushed"]:
            click.echo(f"pushed {branch['branch']}: the commit an earlier run could not push")
        return
    where = f"committed on {branch['branch']} in" if branch else "appended to"
    count = branch.get("tasks", s.tasks) if branch else s.tasks
    click.echo(f"{count} task(s) marked review: pending {where} {relative}")
    if branch and branch.get("pr_url"):
        click.echo(f"pull request: {branch['pr_url']}")
    if relative not in {entry.path for entry in skill.tasks}:
        click.echo(f"note: {relative} is not a task file of {skill.name} yet: add "
                   f"`- path: {relative}` under its tasks in .gitsleep.yml")
    click.echo('next: read each task, delete "review": "pending" from those you keep (and the '
               "tasks you do not want), then run `gitsleep validate`")
