"""A night's trigger pass: the skill's description tuned on its trigger tasks, after the body
epoch, with the catalog of every skill in the repository.

Only a skill that allows it (`tune_description: true`) and has trigger tasks gets one. What
is read here (the catalog, every skill's trigger tasks) comes from the same tree as the rest
of the night's inputs; the decision is the core's (`gitsleep.core.triggers`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gitsleep.base.errors import BackendError, BudgetExhausted, UsageError
from gitsleep.core import triggers
from gitsleep.core.models import EpochResult, EpochSettings, SplitSummary, Task
from gitsleep.core.ports import Backend
from gitsleep.flows.prepare import Setup, make_backend, make_cache
from gitsleep.inputs import catalog
from gitsleep.inputs.config import SkillConfig
from gitsleep.inputs.tasks import load_trigger_tasks
from gitsleep.sandbox.claude_triggers import ClaudePicker


@dataclass(frozen=True)
class TriggerInputs:
    """What the trigger pass reads: the name the catalog lists the skill under, the
    catalog, and the trigger tasks (its own and its siblings' as near misses)."""

    name: str
    catalog: list[triggers.Listing]
    tasks: list[Task]


def trigger_inputs(setup: Setup, root: Path, skill: SkillConfig) -> TriggerInputs | None:
    """The pass's inputs under `root`, or None when the skill gets no trigger pass."""
    own = load_trigger_tasks(root, skill) if skill.tune_description else []
    if not own:
        return None
    entries = catalog.build(root, setup.config)
    inputs = TriggerInputs(catalog.name_of(entries, skill), [e.listing() for e in entries],
                           catalog.trigger_tasks(root, setup.config, skill, entries, own))
    # who picks is settled before the night's first call (a shadowing skill, an agent
    # that cannot show its pick: refused now, not after the body epoch spent its calls)
    picker_backend(setup, skill, [e.name for e in entries]).close()
    return inputs


def cost_line(settings: EpochSettings, inputs: TriggerInputs) -> str:
    """Every query x run x candidate, said before the first call; with several agents,
    which one picks (the first: docs/triggers.md, limits)."""
    runs = max(1, settings.gate.repeats)
    who = ""
    if len(settings.agents) > 1:
        first, *others = settings.agents
        who = (f"; picks are asked of the first agent, {first.name} ({first.model}), not of "
               + ", ".join(a.name for a in others))
    return (f"trigger pass: {len(inputs.tasks)} trigger queries x {runs} run(s), "
            f"{settings.rounds} round(s) of {settings.proposals} candidate description(s) "
            f"among {len(inputs.catalog)} skills: at most "
            f"{triggers.ceiling(settings, inputs.tasks)} calls (budget.max_calls "
            f"{settings.max_calls} is shared with the body epoch; cache hits are free){who}")


def picker_backend(setup: Setup, skill: SkillConfig, names: list[str]) -> Backend:
    """Who picks: the configured model backend (openai-compatible or offline), or Claude
    Code itself (`agent: claude`), whose run shows which skill it loads. Other agent CLIs
    do not show it, so they are refused; so is a personal Claude Code skill that would
    shadow a catalog skill, before any call."""
    if setup.config.backends()[0] != "command":
        return make_backend(setup, skill.name, ("answer", "propose"))
    agent = setup.config.agent
    command = setup.config.agent_spec(skill.name).command if agent is not None else ()
    if agent is None or not (agent.preset == "claude"
                             or (command and Path(command[0]).name == "claude")):
        raise UsageError(f"skill {skill.name!r}: tune_description asks which skill is picked "
                         "of a model backend (openai or offline) or of Claude Code "
                         "(agent: claude); other agent CLIs do not show their pick (see "
                         "docs/triggers.md)")
    picker = ClaudePicker(make_backend(setup, skill.name, ("propose",)),
                          command=(command[0],), env=setup.env,
                          timeout=setup.config.triggers.timeout)
    try:
        picker.refuse_shadowing(names)
    except UsageError:
        picker.close()
        raise
    return picker


def body_less(skill: str, documents: dict[str, str | None], settings: EpochSettings,
              backend: str, reason: str = "no body tasks: the trigger pass decides"
              ) -> EpochResult:
    """The night's record when the skill has trigger tasks alone: no body epoch ran."""
    none = SplitSummary(None, None, 0)
    return EpochResult(
        skill=skill, decision="no_edits", reason=reason,
        metric=settings.gate.metric, backend=backend, agent_model=settings.model,
        optimizer_model=settings.optimizer_model, judge_model=settings.judge_model,
        train=none, val=none, test=none, decided_by="test",
        documents={name: (text, text) for name, text in documents.items()
                   if name in ("skill", "memory") and text is not None})


def with_triggers(setup: Setup, skill: SkillConfig, inputs: TriggerInputs,
                  result: EpochResult, body: list[Task] | None = None,
                  documents: dict[str, str | None] | None = None) -> EpochResult:
    """The night's result with its trigger pass folded in; an aborted body epoch gets none.
    An accepted description is re-scored on the `body` tasks (the agent reads the
    frontmatter too) and refused when they fall."""
    if result.decision == "aborted":
        return result
    settings = setup.config.epoch_settings(skill=skill.name)
    # the night's budget is one: the pass gets what the body epoch left of it
    left = replace(settings, max_calls=max(0, settings.max_calls - result.cost.calls))
    if settings.max_cost is not None:
        spent = result.cost.estimate_usd({m: dict(p) for m, p in settings.prices.items()})
        left = replace(left, max_cost=max(0.0, settings.max_cost - (spent or 0.0)))
    backend = picker_backend(setup, skill, [listing.name for listing in inputs.catalog])
    try:
        night, text = triggers.run_triggers(inputs.tasks, inputs.catalog,
                                            result.documents["skill"][1], left, backend,
                                            skill=inputs.name, cache=make_cache(setup),
                                            redact=setup.redactor.redact)
    finally:
        backend.close()
    if night.decision == "accepted" and body:
        current = {**(documents or {}), "skill": result.documents["skill"][1]}
        if "memory" in result.documents:
            current["memory"] = result.documents["memory"][1]
        scorer = make_backend(setup, skill.name, ("answer", "judge"))
        try:
            fell = triggers.body_fell(body, current, text, settings, scorer,
                                      cache=make_cache(setup),
                                      max_calls=max(0, left.max_calls - night.calls))
        except (BackendError, BudgetExhausted) as exc:
            fell = f"the body tasks could not be re-scored ({exc})"
        finally:
            scorer.close()
        if fell:
            night, text = triggers.refused(night, fell), result.documents["skill"][1]
    setup.say(f"{skill.name}: trigger pass {night.decision}: {night.reason}")
    return triggers.fold(result, night, text)
