"""`gitsleep harvest`: tasks mined from local agent sessions, written for a person to review."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gitsleep.base.errors import BackendError, UsageError
from gitsleep.commands.common import end_progress, print_json, setup_from
from gitsleep.flows.harvest import pipeline
from gitsleep.flows.harvest.branch import commit_on_branch
from gitsleep.flows.harvest.privacy import Masker
from gitsleep.flows.harvest.select import harvested_before, parse_since
from gitsleep.flows.prepare import Setup, make_backend, make_cache, read_document
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import check_skill_tasks, parse_task_file

if TYPE_CHECKING:  # the LLM miner and its client load only with --llm
    from gitsleep.flows.harvest.llm import LlmMiner


def default_output(skill: str) -> str:
    return f"evals/{skill}/harvested.jsonl"


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
def command(ctx: click.Context, skill_name: str, source: str, paths: tuple[Path, ...],
            since: str | None, max_tasks: int, llm: bool, output: Path | None,
            on_branch: bool, as_json: bool) -> None:
    """Mine tasks for a skill from Claude Code, Codex or JSONL history (local files only)."""
    setup = setup_from(ctx)
    skill = setup.config.skill(skill_name)
    home = setup.env.get("HOME") or os.path.expanduser("~")
    roots = list(paths) or pipeline.default_paths(source, home)
    if not roots:
        raise UsageError("--from jsonl needs the JSONL files (or folders) to read as PATHS")
    for root in roots:
        if not root.exists():
            raise UsageError(f"{root}: no such file or folder; give the {source} history to "
                             "read as PATH (defaults: ~/.claude/projects, ~/.codex/sessions)")
    relative = _output_path(setup, output, skill_name)
    pipeline.inside_work_tree(relative)
    pipeline.jsonl_name(setup.repo, relative)
    # --branch writes in its own worktree, and checks the branch's file there
    target = setup.repo / relative if on_branch else pipeline.jsonl_target(setup.repo, relative)
    existing, _ = check_skill_tasks(setup.repo, skill)
    if target.is_file() and not on_branch:
        existing += parse_task_file(target, relative)[0]
    remembered = [relative, *(entry.path for entry in skill.tasks)]
    plan = pipeline.Plan(
        source=source, paths=roots, repo=setup.repo, skill=skill_name,
        skill_text=read_document(setup.repo, skill.skill, field_name="skill document"),
        since=parse_since(since), max_tasks=max_tasks, existing=existing,
        harvested_before=harvested_before(setup.repo, ["HEAD"], remembered),
    )
    miner = _llm_miner(setup) if llm else None
    try:
        result = pipeline.run(plan, setup.redactor, home=home, llm=miner, progress=setup.say)
    finally:
        if miner is not None:
            miner.runner.backend.close()
    if miner is not None and miner.calls and miner.failed == miner.calls:
        errors = "; ".join(miner.runner.errors[:1])
        raise BackendError(f"the optimizer model failed on all {miner.calls} mining call(s); "
                           f"nothing written. First error: {errors}")
    counts = result.summary()
    text = pipeline.render(result.records)
    branch: dict[str, Any] | None = None
    if on_branch and result.records:
        branch = commit_on_branch(setup, skill_name, relative, result.records)
    elif result.records:
        pipeline.append_to(target, text)
    if as_json:
        end_progress(setup)
        summary = {"skill": skill_name, "from": source, "output": relative, **counts.to_json(),
                   **({"branch": branch} if branch is not None else {})}
        print_json(setup.redactor.redact_obj(summary))
        return
    _report(setup, counts, branch, source, relative, skill)


def _output_path(setup: Setup, output: Path | None, skill: str) -> str:
    """The task file as a repo-relative POSIX path; it must stay inside the repository.

    Read as written (`..` folded, links not followed): a link on the way is refused by
    `pipeline.plain_target`, never quietly swapped for the file it points at.
    """
    chosen = output or Path(default_output(skill))
    absolute = chosen if chosen.is_absolute() else setup.repo / chosen
    try:
        return Path(os.path.normpath(absolute)).relative_to(setup.repo).as_posix()
    except ValueError:
        raise UsageError(f"--output {chosen}: the task file must be inside the repository "
                         f"{setup.repo}") from None


def _llm_miner(setup: Setup) -> LlmMiner:
    from gitsleep.core.calls import CallRunner
    from gitsleep.flows.harvest.llm import LlmMiner

    if setup.config.backend == "offline":
        raise UsageError("--llm needs a real model: the offline simulator cannot read "
                         "transcripts; set backend: openai (and a model) in .gitsleep.yml, "
                         "or drop --llm")
    settings = setup.config.epoch_settings(roles=("optimizer",))
    runner = CallRunner.for_settings(make_backend(setup), settings, cache=make_cache(setup),
                                     workers=1)  # every budget, money and minutes included
    home = setup.env.get("HOME")
    return LlmMiner(runner, settings.optimizer_model, lambda: Masker(setup.redactor, home))


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
