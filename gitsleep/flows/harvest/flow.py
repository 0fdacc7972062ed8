"""`harvest`'s flow: mine tasks for a skill from local agent history, then write them.

In order: the sources and the output file checked, the tasks the skill already has read
(so none is mined twice), the history read and mined (`pipeline.run`, with the optimizer
model too under `--llm`), and the new tasks appended to the file or committed on
`gitsleep-harvest/<skill>`. The command prints the outcome.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitsleep.base.errors import BackendError, UsageError
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


@dataclass(frozen=True)
class HarvestRequest:
    """What to harvest, as the command's options say it."""

    skill: str
    source: str
    paths: tuple[Path, ...] = ()
    since: str | None = None
    max_tasks: int = 40
    llm: bool = False
    output: Path | None = None
    on_branch: bool = False


@dataclass(frozen=True)
class HarvestOutcome:
    """What a harvest read, kept and wrote: `branch` set when it committed on a branch."""

    skill: SkillConfig
    relative: str  # the task file, repo-relative
    counts: pipeline.HarvestCounts
    branch: dict[str, Any] | None


def harvest(setup: Setup, request: HarvestRequest) -> HarvestOutcome:
    """Mine and write the tasks `request` asks for; see the module notes for the order."""
    skill = setup.config.skill(request.skill)
    skill = setup.config.skill(request.skill)
    home = setup.env.get("HOME") or os.path.expanduser("~")
    roots = list(request.paths) or pipeline.default_paths(request.source, home)
    if not roots:
        raise UsageError("--from jsonl needs the JSONL files (or folders) to read as PATHS")
    for root in roots:
        if not root.exists():
            raise UsageError(f"{root}: no such file or folder; give the {request.source} "
                             "history to read as PATH (defaults: ~/.claude/projects, "
                             "~/.codex/sessions)")
    relative = _output_path(setup, request.output, request.skill)
    pipeline.inside_work_tree(relative)
    pipeline.jsonl_name(setup.repo, relative)
    # --branch writes in its own worktree, and checks the branch's file there
    target = (setup.repo / relative if request.on_branch
              else pipeline.jsonl_target(setup.repo, relative))
    existing, _ = check_skill_tasks(setup.repo, skill)
    if target.is_file() and not request.on_branch:
        existing += parse_task_file(target, relative)[0]
    remembered = [relative, *(entry.path for entry in skill.tasks)]
    plan = pipeline.Plan(
        source=request.source, paths=roots, repo=setup.repo, skill=request.skill,
        skill_text=read_document(setup.repo, skill.skill, field_name="skill document"),
        since=parse_since(request.since), max_tasks=request.max_tasks, existing=existing,
        harvested_before=harvested_before(setup.repo, ["HEAD"], remembered),
    )
    miner = _llm_miner(setup) if request.llm else None
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
    if request.on_branch and result.records:
        branch = commit_on_branch(setup, request.skill, relative, result.records)
    elif result.records:
        pipeline.append_to(target, text)
    return HarvestOutcome(skill, relative, counts, branch)


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
