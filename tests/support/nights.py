"""Real nights of the bundled examples, for the tests of what a night writes (no git: their
tasks have no workspace): with the offline simulator, or with a scripted agent whose
held-out answers differ from its val answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from gitsleep.backends.offline import OfflineBackend, simulate_conditions
from gitsleep.core import documents
from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, EpochResult
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.flows.prepare import read_inputs
from gitsleep.inputs.config import load_config
from tests.support.gitrepo import EXAMPLES


def example_night(name: str = "brief-writer", backend: Backend | None = None) -> EpochResult:
    root = EXAMPLES / name
    config = load_config(root / ".gitsleep.yml")
    skill = config.skills[0]
    tasks, docs = read_inputs(root, skill)
    settings = config.epoch_settings(skill=skill.name)
    if backend is not None:  # a scripted backend proposes once: one round, one proposal
        settings = replace(settings, rounds=1, proposals=1)
    return run_epoch(tasks, docs, settings, backend or OfflineBackend(), skill=skill.name)


class FollowsExceptOnHeldOut(Backend):
    """Proposes `rule` once; the condition judge is the offline simulator's. As the agent,
    once the rule is learned, it adds `answer(prompt, held_out)` to a summary: `held_out`
    says the prompt is one of `held_out` (tasks the gate never saw). Without the rule, a
    summary and nothing else."""

    name = "scripted"

    def __init__(self, rule: str, held_out: set[str],
                 answer: Callable[[str, bool], str]) -> None:
        self.rule, self.held_out, self.answer, self.proposed = rule, held_out, answer, 0

    def complete(self, call: ModelCall) -> Answer:
        context = dict(call.context or {})
        if call.purpose == "propose":
            self.proposed += 1
            edits = [{"op": "add", "content": self.rule}] if self.proposed == 1 else []
            return Answer(json.dumps({"edits": edits}), None, 1, 1)
        if call.purpose == "judge" and context.get("kind") == "conditions":
            return Answer(simulate_conditions(context), None, 1, 1)
        prompt = call.messages[-1][1]
        lines = ["## Summary", "Read the changelog."]
        if self.rule in documents.learned_rules("\n".join(context.get("documents", []))):
            lines.append(self.answer(prompt, any(p in prompt for p in self.held_out)))
        return Answer("\n".join(lines), None, 1, 1)


# the condition examples/dependency-review is meant to learn
BREAKING_RULE = ('When the task mentions "breaking", include "Verdict: reject"; otherwise '
                 'include "Verdict: approve".')


def verdict_pinned(prompt: str, held_out: bool) -> str:
    """Right on train and val; on held-out, `Verdict: reject` whatever the changelog says."""
    return "Verdict: reject" if held_out or "BREAKING" in prompt else "Verdict: approve"


def pinned_on_held_out_night() -> EpochResult:
    """examples/dependency-review with an agent that learns the breaking rule and follows it
    on train and val, but writes `Verdict: reject` on every held-out task: val is clean,
    held-out rises (its breaking updates now pass) and its approve tasks carry the wrong
    value."""
    root = EXAMPLES / "dependency-review"
    config = load_config(root / ".gitsleep.yml")
    tasks, _ = read_inputs(root, config.skills[0])
    held = {t.prompt for t in tasks if t.split == "test"}
    return example_night("dependency-review", FollowsExceptOnHeldOut(
        BREAKING_RULE, held, verdict_pinned))
