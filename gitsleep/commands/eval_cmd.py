"""`gitsleep eval`: score the current documents on a split, without changing anything."""

from __future__ import annotations

import click

from gitsleep import replay, run
from gitsleep.calls import CallRunner
from gitsleep.commands.common import end_progress, print_json, setup_from
from gitsleep.errors import BackendError


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
    settings = setup.config.epoch_settings()
    splits = ["train", "val", "test"] if split == "all" else [split]
    report: list[dict] = []
    for skill in setup.skills(skills):
        tasks, documents = run.read_inputs(setup.repo, skill)
        runner = CallRunner(run.make_backend(setup, skill.name), cache=run.make_cache(setup),
                            max_calls=settings.max_calls, max_tokens=settings.max_tokens,
                            workers=settings.workers)
        try:
            for name in splits:
                chosen = [t for t in tasks if t.split == name]
                if not chosen:
                    continue
                result = replay.score_split(runner, chosen, documents, settings,
                                            label="eval", split=name)
                row = {
                    "skill": skill.name, "split": name, "n": len(chosen),
                    "score": result.mean, "metric": settings.gate.metric,
                    "errors": result.errors,
                    "tasks": [{"id": t.task_id, "hard": t.hard, "soft": t.soft,
                               "score": t.value,
                               "reason": next((s.score.reason for s in t.samples if s.score),
                                              next((s.error for s in t.samples if s.error), ""))}
                              for t in result.tasks],
                }
                report.append(setup.redactor.redact_obj(row))
                end_progress(setup)
                if not as_json:
                    score = "n/a" if result.mean is None else f"{result.mean:.3f}"
                    click.echo(f"{skill.name} {name:5} n={len(chosen):<4} {settings.gate.metric}"
                               f"={score}  errors={result.errors}")
        except BackendError:
            raise
        finally:
            runner.backend.close()
        cost = runner.cost
        setup.say(f"{skill.name}: {cost.calls} model calls, {cost.cache_hits} cache hits")
    if as_json:
        print_json(report)
