"""Several agents per night: each task answered by every agent that reads the
documents, and each agent's scores kept apart.

A night of N agents scores N copies of each task, one per agent (`expand`): the copy's id is
`<task id>@<agent>` and its `agent` names who answers it. Everything downstream (the
cache, the budget, the passes, the gate's pairing) then counts every agent without a
special case; what needs the agents apart (the gate's per-agent rule, the per-agent
reports) splits a pass by `agent_ids`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from gitsleep.core.models import AgentRef, EpochSettings, PassResult, Task

SEPARATOR = "@"  # `<task id>@<agent>`; agent names never hold it


def expand(tasks: Sequence[Task], agents: Sequence[AgentRef]) -> list[Task]:
    """Each task once per agent (agent by agent within a task, in the configured order);
    the tasks as they are for a night of one agent (no `agents`)."""
    if not agents:
        return list(tasks)
    return [dataclasses.replace(task, id=f"{task.id}{SEPARATOR}{agent.name}", agent=agent.name)
            for task in tasks for agent in agents]


def agent_ids(tasks: Sequence[Task]) -> dict[str, list[str]]:
    """Agent name -> the ids of its copies among `tasks`, in the tasks' order (empty for
    tasks of a night of one agent)."""
    out: dict[str, list[str]] = {}
    for task in tasks:
        if task.agent:
            out.setdefault(task.agent, []).append(task.id)
    return out


def only_agent(result: PassResult, ids: Sequence[str]) -> PassResult:
    """The part of a pass one agent answered (its tasks among `ids`)."""
    wanted = set(ids)
    return dataclasses.replace(result, tasks=[t for t in result.tasks if t.task_id in wanted])


def unique_tasks(tasks: Sequence[Task]) -> list[Task]:
    """One copy per task (the first agent's), for what reads a task's text rather than an
    answer (groups of train tasks, worked examples)."""
    seen: set[str] = set()
    out = []
    for task in tasks:
        if task.base_id not in seen:
            seen.add(task.base_id)
            out.append(task)
    return out


def cheapest_first(settings: EpochSettings) -> list[str]:
    """The agents' names, cheapest first: by the price of a million prompt plus a million
    completion tokens when every agent's model has a price, else in the configured order
    (the first listed is taken as the cheapest; `search: thrifty` screens with it)."""
    prices = settings.prices
    if not all(agent.model in prices for agent in settings.agents):
        return [agent.name for agent in settings.agents]

    def price(agent: AgentRef) -> float:
        known = prices[agent.model]
        return known.get("prompt", 0.0) + known.get("completion", 0.0)

    return [agent.name for agent in sorted(settings.agents, key=price)]
