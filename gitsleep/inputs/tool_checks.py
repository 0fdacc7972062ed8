"""`validate`'s findings about tools: the folders they read, and trajectory checks that
could never pass or never be judged.

GS160: a tool's folder is missing, not a folder, or leads out of the repository.
GS161: a trajectory check names a tool the agent is not given (an API agent can only call
the tools declared for its task or skill; an agent CLI's own tool names are mapped by
`agent.tool_names`).
GS162: trajectory checks while the answering backend cannot say what its agent called.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from gitsleep.base.problems import ERROR, Problem
from gitsleep.core.check_ops import OPS
from gitsleep.core.models import Task
from gitsleep.core.tools import ToolSpec
from gitsleep.sandbox.workspace import folder_problem_on_disk


def named_tools(task: Task) -> list[str]:
    """The tool names the task's trajectory checks name, in order."""
    names: list[str] = []
    for check in task.judge.checks if task.judge.kind == "rule" else ():
        spec = OPS.get(check.op)
        if spec is None or spec.reads != "trace" or spec.arg_shape == "count":
            continue
        if spec.arg_shape == "tool_pair":
            names += json.loads(check.text)
        else:
            names.append(check.text)
    return names


def folder_problems(repo_root: Path, tools: Iterable[ToolSpec], source: str,
                    line: int | None, who: str) -> list[Problem]:
    """GS160 for each tool whose folder this checkout cannot serve."""
    found = []
    for tool in tools:
        if tool.folder is None:
            continue
        problem = folder_problem_on_disk(repo_root, tool.folder)
        if problem:
            problem = problem.replace("the task's workspace", "the tool's folder")
            found.append(Problem(source, line, "GS160", ERROR,
                                 f"{who}tool {tool.name!r}: folder {tool.folder!r} {problem}"))
    return found


def tool_problems(repo_root: Path, tasks: Sequence[Task], skill_tools: Sequence[ToolSpec],
                  *, answering: str, mapped: Iterable[str] = (),
                  traces: bool = True) -> list[Problem]:
    """GS160, GS161 and GS162 for one skill's tasks. `answering`: the backend that answers
    (openai, offline, command); `mapped`: the names an agent CLI's tools are mapped to;
    `traces`: whether that backend reports its agent's calls."""
    problems = folder_problems(repo_root, skill_tools, ".gitsleep.yml", None, "")
    given_by_cli = set(mapped)
    for task in tasks:
        where = f"task {task.id!r}: "
        problems += folder_problems(repo_root, task.tools, task.source, task.line, where)
        names = named_tools(task)
        if not task.judge.reads_trace:
            continue
        if not traces:
            problems.append(Problem(task.source, task.line, "GS162", ERROR, (
                f"{where}its trajectory checks judge the tools the agent called, and the "
                f"{answering} agent does not report them: answer with backend openai or "
                "offline (with `tools:`), or an agent CLI that reports its tool calls "
                "(see docs/agent-clis.md)")))
            continue
        given = {t.name for t in (task.tools or skill_tools)}
        if answering == "command":
            given |= given_by_cli
            if not given:
                continue  # the CLI's own names, unmapped: nothing to compare with
        for name in dict.fromkeys(names):
            if name not in given:
                shown = ", ".join(sorted(given)) or "none"
                problems.append(Problem(task.source, task.line, "GS161", ERROR, (
                    f"{where}a trajectory check names the tool {name!r}, and the agent is "
                    f"given no such tool (given: {shown}): declare it under `tools:` "
                    "(the skill's in .gitsleep.yml, or the task's)")))
    return problems
