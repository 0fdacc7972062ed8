"""Null nights: does the gate commit a rule that changes nothing, when the agent is noise?

The agent (`NoiseAgent`) answers each task with a coin toss keyed on (the night's seed,
the documents, the task, the sample): a sampled model's answers move when its prompt moves,
so the coins are tossed again whenever the document changes, and the same document gives
the same answers (a re-run is a cache hit). The optimizer proposes one rule each night:

- null: a content-free rule (`Read the statement carefully before you answer.`), which the
  agent ignores: any gain the night reports is noise;
- power: a rule that really helps (`Always end the answer with "DONE".`), which the agent
  obeys 8 times in 10 and tosses its coin for the rest (pass rate 0.5 -> 0.9).

Each night is one `run_epoch` with the default search on 8 train, 12 val and 12 held-out
tasks; over many seeds it counts how often a night commits (accepted) and how often a pull
request would open (`pr_eligible`). The tests and the benchmark share this module.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from gitsleep.core.epoch import run_epoch
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task
from gitsleep.core.ports import Backend, ModelCall

NULL_RULE = "Read the statement carefully before you answer."
HELPFUL_RULE = 'Always end the answer with "DONE".'
PASSING, FAILING = "The summary is written.\nDONE", "The summary is written."
OBEYS = 0.8  # how often the agent obeys the helpful rule; a coin for the rest
SPLIT_SIZES = {"train": 8, "val": 12, "test": 12}
SEEDS = 40


def _unit(*parts: object) -> float:
    """A number in [0, 1) fixed by its parts: the agent's coin."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class NoiseAgent(Backend):
    """An agent whose every verdict is a coin keyed on (seed, documents, task, sample), and
    an optimizer that proposes `rule` once (never again after it was rejected or kept).
    The agent obeys `HELPFUL_RULE`, when the documents have it, `OBEYS` of the time."""

    name = "noise"

    def __init__(self, seed: int, rule: str = NULL_RULE) -> None:
        self.seed = seed
        self.rule = rule

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose":
            return Answer(text=self._propose(dict(call.context or {})))
        if call.purpose != "answer":
            return Answer(text=None, error=f"noise agent: no {call.purpose} calls")
        documents = "\n".join(c for role, c in call.messages if role == "system")
        prompt = "\n".join(c for role, c in call.messages if role == "user")
        key = (self.seed, documents, prompt, call.seed)
        if HELPFUL_RULE in documents and _unit(*key, "obey") < OBEYS:
            return Answer(text=PASSING)
        return Answer(text=PASSING if _unit(*key, "coin") < 0.5 else FAILING)

    def _propose(self, context: dict[str, Any]) -> str:
        said = {" ".join(str(r).casefold().split())
                for r in [*context.get("rules", []), *context.get("rejected", [])]}
        if " ".join(self.rule.casefold().split()) in said:
            return json.dumps({"edits": []})
        return json.dumps({"edits": [{"op": "add", "content": self.rule,
                                      "rationale": "the failing answers miss the point"}]})


SKILL = ("# Summaries\n\nSummarise the item in one sentence.\n\n"
         "<!-- gitsleep:learned:start -->\n<!-- gitsleep:learned:end -->\n")


def workload() -> list[Task]:
    """8 train, 12 val and 12 held-out tasks, each checked for `DONE`."""
    judge = Judge("rule", (Check("contains", "DONE"),))
    return [Task(f"{split}-{n}", f"Summarise item {split}-{n} of the change log.", split, judge)
            for split, size in SPLIT_SIZES.items() for n in range(size)]  # type: ignore[arg-type]


def settings() -> EpochSettings:
    """The default search, as a user's night has it."""
    return EpochSettings(model="noise", optimizer_model="noise", judge_model="noise")


@dataclass
class NightsRow:
    """How often `nights` nights with one optimizer's rule committed and opened a PR."""

    case: str
    nights: int
    commits: int
    prs: int
    calls: int  # model calls over every night (the cost of telling noise apart)
    ceiling: int  # the most calls one night may make (`call_ceiling`)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def nights(rule: str, seeds: int = SEEDS) -> NightsRow:
    """Run `seeds` nights of one rule and count commits and would-be pull requests."""
    from gitsleep.core.epoch import call_ceiling

    tasks = workload()
    commits = prs = calls = 0
    for seed in range(seeds):
        result = run_epoch(tasks, {"skill": SKILL, "memory": None}, settings(),
                           NoiseAgent(seed, rule), skill="summaries")
        commits += result.decision == "accepted"
        prs += result.decision == "accepted" and result.pr_eligible
        calls += result.cost.calls
    case = "null (content-free rule)" if rule == NULL_RULE else "power (a rule obeyed 8 in 10)"
    return NightsRow(case, seeds, commits, prs, calls,
                     call_ceiling(settings(), tasks, with_memory=False))


def null_nights_section(seeds: int = SEEDS) -> list[NightsRow]:
    """The null nights and the power nights, each over `seeds` seeds."""
    return [nights(NULL_RULE, seeds), nights(HELPFUL_RULE, seeds)]
