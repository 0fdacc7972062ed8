"""Picks are sampled: a description is kept only when its gain on the trigger tasks is beyond
the night's pick noise (the sign test of `gitsleep.core.noise`), measured by a placebo pass
on val. A picker whose picks are coins that change with the description's wording rarely
gets a content-free description accepted; one that really follows a better description
still does."""

from __future__ import annotations

import json
import random

from gitsleep.backends.offline import OfflineBackend
from gitsleep.core import triggers as tr
from gitsleep.core.models import Answer, EpochSettings, Judge, Task, Trigger
from gitsleep.core.ports import ModelCall

SETTINGS = EpochSettings(model="m", optimizer_model="m", judge_model="m", rounds=2,
                         proposals=1)
BEFORE = "Helps with text."
SKILL = f"---\nname: scribe\ndescription: {BEFORE}\n---\n# Scribe\n"
CATALOG = [tr.Listing("scribe", BEFORE),
           tr.Listing("release-notes", "Writes release notes for a version.")]
SEEDS = range(40)


def task(tid: str, split: str, should: bool) -> Task:
    return Task(tid, f"request {tid}", split, Judge("trigger"),  # type: ignore[arg-type]
                trigger=Trigger(should, None if should else "release-notes"))


def tasks() -> list[Task]:
    out = [task(f"t{i}", "train", True) for i in range(8)]
    for split in ("val", "test"):
        out += [task(f"{split}{i}", split, True) for i in range(16)]
        out += [task(f"{split}-r{i}", split, False) for i in range(4)]
    return out


class CoinPicker(OfflineBackend):
    """Each pick of a `scribe` request is a coin seeded by the night's seed, the query, the
    run and the whole description: a reworded description draws new coins, as a sampled
    model's answers move with its prompt. The sibling's requests always go to it.
    `better`: the description the optimizer proposes; None proposes a content-free one
    (the current description with a word added), which the picker treats as the old."""

    def __init__(self, seed: int, better: str | None = None) -> None:
        super().__init__()
        self.seed, self.better = seed, better

    def complete(self, call: ModelCall) -> Answer:
        context = call.context or {}
        if "trigger_propose" in context:
            current = context["trigger_propose"]["description"]
            return Answer(text=json.dumps({"description": self.better or f"{current} Truly."}))
        pick = context["pick"]
        if "-r" in pick["query"]:  # a sibling's request
            return Answer(text=json.dumps({"skill": "release-notes"}))
        description = dict(pick["catalog"])["scribe"]
        coin = random.Random(f"{self.seed}|{description}|{pick['query']}|{call.sample}")
        right = 0.9 if self.better and description.startswith(self.better) else 0.5
        return Answer(text=json.dumps({"skill": "scribe" if coin.random() < right else None}))


def nights(better: str | None) -> list[tr.TriggerNight]:
    out = []
    for seed in SEEDS:
        night, _ = tr.run_triggers(tasks(), CATALOG, SKILL, SETTINGS,
                                   CoinPicker(seed, better), skill="scribe")
        assert night.calls <= tr.ceiling(SETTINGS, tasks()), night.calls
        out.append(night)
    return out


def test_a_content_free_description_is_rarely_accepted_by_a_noisy_picker() -> None:
    null = nights(None)
    accepted = [n for n in null if n.decision == "accepted"]
    assert len(accepted) <= 2, [n.reason for n in accepted]
    assert sum(1 for n in null if n.pr_eligible) <= 1
    judged = [n for n in null if n.trials]
    assert len(judged) >= 35  # a night whose train picks right by chance tries nothing
    assert all(n.noise is not None and n.noise.noisy for n in judged)


def test_a_picker_that_follows_a_better_description_is_still_accepted() -> None:
    real = nights("Commit messages for a staged diff.")
    accepted = [n for n in real if n.decision == "accepted"]
    assert len(accepted) >= 30, [n.reason for n in real if n.decision != "accepted"]
    assert sum(1 for n in real if n.pr_eligible) >= 28
    tested = accepted[0].noise
    assert tested is not None and tested.val is not None and tested.val.beyond
    assert tested.test is not None and tested.test.observations == 2


def test_body_tasks_that_move_under_a_placebo_fall_only_beyond_noise() -> None:
    """The re-scoring of the body tasks under the new description uses the same rule: an
    agent whose answers move with any wording (a placebo too) does not refuse a description
    for one task's fall, which no sign test can tell from noise."""
    from gitsleep.core.models import Check

    body = [Task("b1", "write the commit message for the login fix", "test",
                 Judge("rule", (Check("not_contains", "TODO"),)))]
    documents: dict[str, str | None] = {"skill": SKILL, "memory": None}

    class Fickle(OfflineBackend):
        """Answers well only to the skill document exactly as it was."""

        def complete(self, call: ModelCall) -> Answer:
            if call.purpose == "answer" and call.messages[0][1].strip() != SKILL.strip():
                return Answer(text="TODO")
            return super().complete(call)

    changed = tr.desc.replace(SKILL, "Commit messages.")
    assert tr.body_fell(body, documents, changed, SETTINGS, Fickle()) == ""


def test_body_tasks_that_fall_under_a_steady_agent_still_refuse_the_description() -> None:
    from gitsleep.core.models import Check

    body = [Task("b1", "write the commit message for the login fix", "test",
                 Judge("rule", (Check("not_contains", "TODO"),)))]
    harmful = tr.desc.replace(SKILL, 'Commit messages. Always include "TODO"')
    assert tr.body_fell(body, {"skill": SKILL, "memory": None}, harmful, SETTINGS,
                        OfflineBackend()).startswith("with the new description the body tasks fell")
