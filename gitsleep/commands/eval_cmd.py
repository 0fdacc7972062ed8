"""`gitsleep eval`: score the current documents on a split, without changing anything."""

from __future__ import annotations

from typing import Any

import click

from gitsleep.commands.common import end_progress, print_json, setup_from
from gitsleep.core import agents, replay
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import SPLITS, EpochSettings, PassResult, Task
from gitsleep.core.scores import fmt_score, rounded
from gitsleep.flows.prepare import make_backend, make_cache, read_inputs
from gitsleep.inputs import repo_paths
from gitsleep.report import SMALL_SPLIT, metric_note, small_splits


def agent_rows(result: PassResult, tasks: list[Task],
               settings: EpochSettings) -> list[dict[str, Any]]:
    """Several agents: each agent's score over its own answers (none for one agent)."""
    return [{"name": name, "model": settings.model_for(name), "n": len(ids),
             "score": rounded(agents.only_agent(result, ids).mean)}
            for name, ids in agents.agent_ids(tasks).items()]


@click.command("eval")
@click.option("--skill", "skills", multiple=True, help="Skill to score (repeatable; default all).")
@click.option("--split", type=click.Choice(["train", "val", "test", "all"]), default="all",
              show_default=True)
@click.option("--backend", default=None, help="Override the config's backend.")
@click.option("--model", default=None, help="Override the config's agent model.")
@click.option("--json", "as_json", is_flag=True, help="Print per-task results as JSON.")
@click.pass_context
def command(ctx: click.Context, skills: tuple[str, ...], split: str, backend: str | None,
            model: str | None, as_json: bool) -> None:
    """Score the current skill documents on their tasks."""
    setup = setup_from(ctx, backend=backend, model=model)
    splits = [name for name in SPLITS if split in ("all", name)]
    report: list[dict[str, Any]] = []
    small: list[str] = []
    chosen = setup.skills(skills)
    repo_paths.preflight(setup.repo, setup.config, setup.config_file,
                         [s.name for s in chosen], runs=False)
    inputs = [(skill, *read_inputs(setup.repo, skill, setup.say)) for skill in chosen]
    # eval proposes nothing: it needs the agent's model, and a judge model only when a
    # task it scores has a rubric judge (checked before any call is made)
    rubric = any(t.judge.kind == "rubric" for _, tasks, _ in inputs for t in tasks
                 if t.split in splits)
    roles = ("judge",) if rubric else ()
    settings = setup.config.epoch_settings(roles=roles)  # the gate's metric, for the note
    for skill, tasks, documents in inputs:
        settings = setup.config.epoch_settings(roles=roles, skill=skill.name)
        purposes = ("answer", "judge") if rubric else ("answer",)
        runner = CallRunner.for_settings(make_backend(setup, skill.name, purposes), settings,
                                         cache=make_cache(setup))
        try:
            for name in splits:
                in_split = agents.expand([t for t in tasks if t.split == name],
                                         settings.agents)
                if not in_split:
                    if not as_json:
                        end_progress(setup)
                        click.echo(f"{skill.name} {name:5} n=0    (no tasks)")
                    continue
                tick = setup.counter(f"{skill.name}: scoring {name}",
                                     len(in_split) * max(1, settings.gate.repeats))
                result = replay.score_split(runner, in_split, documents, settings,
                                            label="eval", split=name, on_answer=tick)
                row = {
                    "skill": skill.name, "split": name, "n": len(in_split),
                    "score": rounded(result.mean), "metric": settings.gate.metric,
                    "errors": result.errors,
                    "tasks": [{"id": t.task_id, "hard": rounded(t.hard),
                               "soft": rounded(t.soft), "score": rounded(t.value),
                               "reason": next((s.score.reason for s in t.samples if s.score),
                                              next((s.error for s in t.samples if s.error), ""))}
                              for t in result.tasks],
                }
                if runner.backend.simulated:  # as consolidate's --json: offline scores say so
                    row["simulated"] = True
                per_agent = agent_rows(result, in_split, settings)
                if per_agent:
                    row["agents"] = per_agent
                report.append(setup.redactor.redact_obj(row))
                end_progress(setup)
                if not as_json:
                    score = fmt_score(result.mean)
                    click.echo(f"{skill.name} {name:5} n={len(in_split):<4} {settings.gate.metric}"
                               f"={score}  errors={result.errors}")
                    for agent in per_agent:
                        click.echo(f"  agent {agent['name']} ({agent['model']}) n={agent['n']} "
                                   f"{settings.gate.metric}={fmt_score(agent['score'])}")
        finally:
            runner.backend.close()
        cost = runner.cost
        setup.say(f"{skill.name}: {cost.calls} model calls, {cost.cache_hits} cache hits")
        counts = {n: sum(1 for t in tasks if t.split == n) for n in ("val", "test")}
        if split in ("all", "val", "test"):
            few = small_splits(counts["val"] if split in ("all", "val") else 0,
                               counts["test"] if split in ("all", "test") else 0)
            if few:
                small.append(f"{skill.name}: {' and '.join(few)}")
    if as_json:
        print_json(report)
        return
    if metric_note(settings.gate.metric):
        click.echo(f"{metric_note(settings.gate.metric).replace('`', '')}.")
    if small:
        click.echo(f"warning: few tasks in {'; '.join(small)}: with fewer than {SMALL_SPLIT} "
                   "one task moves the score a lot; add tasks before trusting a change",
                   err=True)
