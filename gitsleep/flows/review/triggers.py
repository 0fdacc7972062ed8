"""`gitsleep review` of a `description:` change: which skill the agent picks, base against
head, scored as a night's trigger pass scores it (`gitsleep.core.triggers`).

The exam is the base's: its catalog of sibling skills (as the base's files describe them)
and its trigger tasks, the skill's own and its siblings' should-trigger queries as near
misses. A pull request that rewrites a sibling's description (another skill's frontmatter)
is listed, never used: scored with the head's catalog, a skill could win its siblings'
requests by weakening their descriptions. A person's description was tuned on neither val
nor held-out, so both are judged together, with the night's noise rule: a placebo pass of
the base description shows whether picks move when nothing that matters changed; when any
does, a change must pass the sign test (`gitsleep.core.noise`), else strictly better or
worse decides.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gitsleep.base.errors import UsageError
from gitsleep.core import description as desc
from gitsleep.core import gate, noise
from gitsleep.core import triggers as tr
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import EpochSettings, NoiseTest, Task
from gitsleep.core.outcome import PickRow
from gitsleep.core.scores import fmt_score, rounded
from gitsleep.flows.prepare import Setup, make_cache
from gitsleep.flows.triggers import picker_backend
from gitsleep.inputs import catalog
from gitsleep.inputs.config import Config, SkillConfig
from gitsleep.inputs.tasks import load_trigger_tasks
from gitsleep.report.triggers import picks_table

SCORED = ("val", "test")  # a review's exam: train tasks are a night's to learn from
ROWS = 20  # queries shown in the comment; --json has them all
SIDES = 3  # base, head, and the base description under a placebo

PicksVerdict = Literal["improved", "regressed", "no clear change"]


@dataclass(frozen=True)
class Accuracy:
    before: float | None
    after: float | None
    n: int

    def to_json(self) -> dict[str, Any]:
        return {"before": rounded(self.before), "after": rounded(self.after), "n": self.n}


@dataclass(frozen=True)
class SiblingEdit:
    """A sibling skill whose description the head changes: listed, not used."""

    name: str
    path: str

    def line(self) -> str:
        return (f"the head changes the description of sibling {self.name} ({self.path}): "
                "listed, not used: picks were scored with the base's description of every "
                "sibling, so it cannot make this skill's verdict")


@dataclass
class TriggerReview:
    """A skill's picks, base against head: accuracy per split, the sign test on val and
    held-out together, the siblings that lost queries, and each query's picks. `verdict`
    is None when the head leaves this skill's description as it is (only siblings'
    changed: listed, nothing scored)."""

    skill: str
    description_before: str
    description_after: str
    verdict: PicksVerdict | None = None
    val: Accuracy = Accuracy(None, None, 0)
    test: Accuracy = Accuracy(None, None, 0)
    test_result: NoiseTest = field(default_factory=lambda: noise.judge("val + held-out", [],
                                                                       0.0, False))
    siblings_fell: str = ""
    siblings_edited: list[str] = field(default_factory=list)
    edits: list[SiblingEdit] = field(default_factory=list)
    rows: list[PickRow] = field(default_factory=list)
    calls: int = 0
    cache_hits: int = 0

    def lines(self) -> list[str]:
        """Plain sentences: the verdict and scores, the sibling edits listed."""
        out = [edit.line() for edit in self.edits]
        if self.verdict is None:
            return out
        said = (f"trigger accuracy (which skill the agent picks): val "
                f"{fmt_score(self.val.before)} -> {fmt_score(self.val.after)}, held-out "
                f"{fmt_score(self.test.before)} -> {fmt_score(self.test.after)}; "
                f"{self.test_result.line()}: {self.verdict}")
        if self.siblings_fell:
            said += f"; a sibling lost queries: {self.siblings_fell}"
        return [said, *out]

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "val": self.val.to_json(),
                "test": self.test.to_json(),
                "description": {"before": self.description_before,
                                "after": self.description_after},
                "sign_test": {"n": self.test_result.n, "up": self.test_result.up,
                              "down": self.test_result.down,
                              "gain": rounded(self.test_result.gain),
                              "p": rounded(self.test_result.p), "noisy": self.test_result.noisy,
                              "alpha": noise.ALPHA},
                "siblings_fell": self.siblings_fell, "siblings_edited": self.siblings_edited,
                "picks": [r.to_json() for r in self.rows],
                "cost": {"calls": self.calls, "cache_hits": self.cache_hits}}


@dataclass
class TriggerPlan:
    """What scoring a skill's picks takes: the base's catalog, the skill's name in it, the
    trigger tasks, both descriptions, and the most calls it needs (no cache counted)."""

    review: TriggerReview
    name: str
    catalog: list[tr.Listing]
    tasks: list[Task]
    needed: int


def _description(text: str | None) -> str | None:
    """A document's description as a catalog shows it (whitespace folded, cut where a
    harness cuts it), or None."""
    if text is None:
        return None
    try:
        return " ".join(desc.read(text).split())[:catalog.SHOWN_CHARS]
    except desc.DescriptionError:
        return None


def sibling_edits(base: Sequence[catalog.Entry], head: Sequence[catalog.Entry],
                  name: str) -> list[SiblingEdit]:
    """The siblings of `name` whose description the head changes (or drops)."""
    now = {e.name: e.description for e in head}
    return [SiblingEdit(e.name, e.path) for e in base
            if e.name != name and now.get(e.name) != e.description]


def plan(setup: Setup, base_root: Path, base_config: Config, skill: SkillConfig,
         base_text: str | None, head_text: str | None, settings: EpochSettings
         ) -> TriggerPlan | None:
    """The review of the skill's picks, or None when the skill has no val or held-out
    trigger task at the base (or the base's catalog does not list it)."""
    own = [t for t in load_trigger_tasks(base_root, skill) if t.split in SCORED]
    if not own:
        return None
    entries = catalog.build(base_root, base_config)
    try:
        name = catalog.name_of(entries, skill)
    except UsageError:
        return None
    tasks = [t for t in catalog.trigger_tasks(base_root, base_config, skill, entries, own)
             if t.split in SCORED]
    before, after = _description(base_text), _description(head_text)
    edits = sibling_edits(entries, catalog.build(setup.repo, setup.config), name)
    if before is None or (after == before and not edits):
        return None
    review = TriggerReview(name, before, after or before, edits=edits,
                           siblings_edited=[e.name for e in edits])
    changed = after is not None and after != before
    needed = SIDES * len(tasks) * max(1, settings.gate.repeats) if changed else 0
    return TriggerPlan(review, name, [e.listing() for e in entries], tasks, needed)


def score(setup: Setup, skill: SkillConfig, planned: TriggerPlan, settings: EpochSettings,
          person: bool = True) -> TriggerReview:
    """Score the picks of a planned review (nothing when only siblings changed). `person`:
    a person's description, judged on val and held-out together; a gitsleep commit's was
    chosen on val, so held-out alone decides it (val when it has no held-out query)."""
    review = planned.review
    if review.description_after == review.description_before:
        return review
    backend = picker_backend(setup, skill, [s.name for s in planned.catalog])
    try:
        runner = CallRunner.for_settings(backend, settings, cache=make_cache(setup))
        picker = tr.Picker(runner, planned.catalog, planned.name, settings)
        judged(review, picker, planned.tasks, settings.gate.min_delta, person)
        review.calls, review.cache_hits = runner.cost.calls, runner.cost.cache_hits
    finally:
        backend.close()
    return review


def judged(review: TriggerReview, picker: tr.Picker, tasks: Sequence[Task],
           min_delta: float, person: bool = True) -> None:
    """Base, head and the base under a placebo, on val and held-out; the verdict on both
    together (`person`), else on held-out alone (val without it)."""
    skill = review.skill
    held_out = any(t.split == "test" for t in tasks)
    deciding = "val + held-out" if person else "held-out" if held_out else "val"
    splits = {"val + held-out": SCORED, "held-out": ("test",), "val": ("val",)}[deciding]
    every = picker.score(tasks, review.description_before, "review base", "val+test")
    head_all = picker.score(tasks, review.description_after, "review head", "val+test")
    placebo = picker.score(tasks, tr.placebo(review.description_before),
                           "review placebo", "val+test")
    noisy = any(tr.differences(skill, every, placebo))
    kept = {t.id for t in tasks if t.split in splits}
    base, head = (tr.TriggerPass(p.label, p.split, p.description,
                                 tuple(q for q in p.queries if q.task_id in kept))
                  for p in (every, head_all))
    diffs = tr.differences(skill, base, head)
    review.test_result = noise.judge(deciding, diffs, min_delta, noisy)
    lost = tr.siblings_lost(skill, base, head, min_delta, noisy)
    review.siblings_fell = tr.lost_text(lost)
    before, after = base.accuracy(skill), head.accuracy(skill)
    fell = (before is not None and after is not None and gate.improves(after, before, min_delta)
            and (not noisy or noise.fell(diffs)))
    review.verdict = ("regressed" if lost or fell else
                      "improved" if review.test_result.beyond else "no clear change")
    for split, name in (("val", "val"), ("test", "test")):
        mine = [t for t in tasks if t.split == split]
        ids = {t.id for t in mine}
        b = tr.TriggerPass("", split, "", tuple(q for q in every.queries if q.task_id in ids))
        a = tr.TriggerPass("", split, "", tuple(q for q in head_all.queries
                                                if q.task_id in ids))
        setattr(review, name, Accuracy(b.accuracy(skill), a.accuracy(skill), len(mine)))
    prior = every.by_id()
    review.rows = [PickRow(q.query, q.expected(skill), prior[q.task_id].shown(), q.shown())
                   for q in head_all.queries if q.task_id in prior]


def markdown(review: TriggerReview, text: Callable[[str, int], str],
             code: Callable[[str, int], str], block: Callable[[str], str]) -> list[str]:
    """The comment's section: the scores and the sign test, the description before and
    after, the sibling edits, and a table of query, expected skill, picked before and after.
    `text`, `code` and `block` redact, clip and escape untrusted text."""
    out = ["**When the skill is picked** (its `description:` as the agent's catalog shows "
           "it):", ""]
    out += [f"- {text(line, 600)}" for line in review.lines()]
    if review.verdict is None:
        return [*out, ""]
    out += ["", "Description before:", "", block(review.description_before), "",
            "Description after:", "", block(review.description_after), "",
            *picks_table(review.rows[:ROWS], text, code)]
    if len(review.rows) > ROWS:
        out.append(f"\n_and {len(review.rows) - ROWS} more; --json lists all._")
    return [*out, ""]
