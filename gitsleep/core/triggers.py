"""Which skill an agent picks for a request, judged like any score.

Before an agent reads a skill, its harness shows it a catalog: each skill's name and
description. A trigger task asks whether this skill is picked for one user query
(`should_trigger`), and a near miss may name the sibling it belongs to (`expect`). A
sibling's own should-trigger queries come in as near misses that expect it, so the gate
sees every skill of the repository.

A pick is a call like an answer: the catalog as the harness presents it, the query as the
user message, a structured reply naming one skill or none. A reply that names no skill of
the catalog is "no skill", never an error; a failed call is an error and is not scored.
Accuracy is the share of runs that pick right: this skill for a should-trigger query,
anything else for a should-not one.

A night's trigger pass tunes the skill's `description:` (`gitsleep.core.description`)
from the train queries it missed and the ones it took wrongly, side by side. A candidate
must raise val accuracy and take no sibling's query; a pull request needs held-out to rise
with no sibling falling.

Picks are sampled, so "rise" and "fall" are the gate's noise rule (`gitsleep.core.noise`):
a placebo pass on val (the description with a content-free sentence, never written) shows
which queries' picks move when nothing that matters changed; when any does, a gain must pass
the one-sided sign test on the per-query differences in correctness, seen afresh under two
re-wordings, and held-out likewise. When nothing moves (a deterministic picker) strictly
better decides, as for the body.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gitsleep.base.errors import BackendError, BudgetExhausted
from gitsleep.core import description as desc
from gitsleep.core import gate, noise
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.models import (
    SPLITS,
    Answer,
    Decision,
    EpochResult,
    EpochSettings,
    Noise,
    NoiseTest,
    Split,
    Task,
)
from gitsleep.core.outcome import PickRow
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.core.scores import fmt_score

PICK_TOOL = "use_skill"
PICK_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["skill"],
               "properties": {"skill": {"type": ["string", "null"]}}}
PROPOSE_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["description"],
                  "properties": {"description": {"type": "string"}}}
NO_SKILL = "(no skill)"
# Content-free sentences for a description's placebo. A pick reads the words of a catalog,
# so these use only words no request names (the offline simulator's picker drops them all):
# a pick that moves under one moved by noise, not by what the description says.
PLACEBOS = ("That is all.", "And that is all there is to it.")


def placebo(value: str, wording: int = 0) -> str:
    """The description with the content-free sentence `PLACEBOS[wording]` appended; only
    ever scored, never written."""
    return f"{value.rstrip()} {PLACEBOS[wording % len(PLACEBOS)]}".strip()


@dataclass(frozen=True)
class Listing:
    """One skill as the catalog shows it: its name and its description."""

    name: str
    description: str


def catalog_prompt(catalog: Sequence[Listing]) -> str:
    """The catalog as a harness presents it: each skill's name and description, and how
    to use one. Angle-bracket tags as Claude Code lists skills."""
    entries = "\n".join(f"<skill>\n<name>{s.name}</name>\n<description>{s.description}"
                        f"</description>\n</skill>" for s in catalog)
    return ("You are a coding agent. Skills are instructions you can load for a request. "
            "Before answering the user, decide whether one of these skills fits the "
            "request; load at most one, and only when its description says it fits.\n\n"
            f"<available_skills>\n{entries}\n</available_skills>\n\n"
            f"To load a skill, call {PICK_TOOL} with its name: reply with JSON "
            '{"skill": "<name>"}. When none fits, reply {"skill": null}.')


def pick_call(catalog: Sequence[Listing], query: str, model: str, sample: int,
              skill: str = "") -> ModelCall:
    """One run of one query: which skill, if any, the agent loads (`skill`: the one being
    tuned, for a harness that sees several loaded in one run)."""
    return ModelCall(
        purpose="answer", model=model,
        messages=(("system", catalog_prompt(catalog)), ("user", query)),
        temperature=0.0, seed=sample, sample=sample, max_tokens=200,
        json_schema=json.dumps(PICK_SCHEMA, sort_keys=True, separators=(",", ":")),
        context={"pick": {"catalog": [[s.name, s.description] for s in catalog],
                          "query": query, "skill": skill}})


def read_pick(text: str | None, names: Sequence[str]) -> str | None:
    """The skill a reply picked: `{"skill": name}`, a `use_skill` call naming it, or a bare
    name; None (no skill) for anything else, a name outside the catalog included."""
    if not text:
        return None
    data = _reply_json(text)
    if isinstance(data, dict):
        if isinstance(data.get("arguments"), dict):  # a use_skill tool call, as JSON
            data = data["arguments"]
        value = data.get("skill", data.get("name"))
        return value if isinstance(value, str) and value in names else None
    bare = text.strip().strip("`").removeprefix("json").strip().strip("\"' .")
    return bare if bare in names else None


# -- scoring -----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryPicks:
    """Every run of one trigger task: what was picked (None: no skill), failed runs apart."""

    task_id: str
    query: str
    should_trigger: bool
    expect: str | None  # should-not: the sibling it belongs to, when known
    split: str
    picks: tuple[str | None, ...]
    errors: int = 0

    def correct(self, skill: str) -> float | None:
        """The share of runs that picked right for `skill` (None: no run was scored)."""
        if not self.picks:
            return None
        right = sum(1 for p in self.picks if (p == skill) == self.should_trigger)
        return right / len(self.picks)

    def taken(self, skill: str) -> int:
        return sum(1 for p in self.picks if p == skill)

    def shown(self) -> str:
        """The most frequent pick and how often, e.g. `notes-writer (2/3)`."""
        if not self.picks:
            return "error"
        top, count = Counter(self.picks).most_common(1)[0]
        name = top or NO_SKILL
        return name if count == len(self.picks) else f"{name} ({count}/{len(self.picks)})"

    def expected(self, skill: str) -> str:
        return skill if self.should_trigger else (self.expect or f"not {skill}")


@dataclass(frozen=True)
class TriggerPass:
    """One split scored under one description."""

    label: str
    split: str
    description: str
    queries: tuple[QueryPicks, ...]

    def accuracy(self, skill: str) -> float | None:
        values = [v for q in self.queries if (v := q.correct(skill)) is not None]
        return sum(values) / len(values) if values else None

    def by_id(self) -> dict[str, QueryPicks]:
        return {q.task_id: q for q in self.queries}


def pooled(passes: Sequence[TriggerPass]) -> TriggerPass:
    """One pass holding every run of `passes` (the same queries under re-wordings of one
    description): each query's correctness is then its share over all of them."""
    first = passes[0]
    runs: dict[str, list[str | None]] = {q.task_id: [] for q in first.queries}
    errors: Counter[str] = Counter()
    for scored in passes:
        for q in scored.queries:
            if q.task_id in runs:
                runs[q.task_id] += q.picks
                errors[q.task_id] += q.errors
    return TriggerPass(first.label, first.split, first.description, tuple(
        dataclasses.replace(q, picks=tuple(runs[q.task_id]), errors=errors[q.task_id])
        for q in first.queries))


def differences(skill: str, before: TriggerPass, after: TriggerPass) -> list[float]:
    """Per query scored on both sides (in `after`'s order): its correctness after minus
    before, the paired observations of the sign test."""
    prior = before.by_id()
    out = []
    for q in after.queries:
        old = prior.get(q.task_id)
        a, b = q.correct(skill), old.correct(skill) if old is not None else None
        if a is not None and b is not None:
            out.append(a - b)
    return out


def with_description(catalog: Sequence[Listing], skill: str, value: str) -> list[Listing]:
    """The catalog with `skill`'s description set to `value` (added when missing)."""
    out = [Listing(s.name, value) if s.name == skill else s for s in catalog]
    return out if any(s.name == skill for s in out) else [*out, Listing(skill, value)]


class Picker:
    """Scores trigger tasks under a description through one CallRunner."""

    def __init__(self, runner: CallRunner, catalog: Sequence[Listing], skill: str,
                 settings: EpochSettings) -> None:
        self.runner = runner
        self.catalog = list(catalog)
        self.skill = skill
        self.settings = settings
        self.repeats = max(1, settings.gate.repeats)

    def score(self, tasks: Sequence[Task], value: str, label: str, split: str) -> TriggerPass:
        catalog = with_description(self.catalog, self.skill, value)
        names = [s.name for s in catalog]
        calls = [pick_call(catalog, t.prompt, self.settings.model, r, self.skill)
                 for t in tasks for r in range(self.repeats)]
        answers = self.runner.map(calls)
        failed = sum(1 for a in answers if a.error)
        if calls and failed > self.settings.max_error_rate * len(calls):
            first = next(a.error for a in answers if a.error)
            raise BackendError(f"{failed} of {len(calls)} pick calls failed ({label} {split}); "
                               f"first: {first}")
        out = []
        for i, task in enumerate(tasks):
            mine: list[Answer] = answers[i * self.repeats:(i + 1) * self.repeats]
            trigger = task.trigger
            assert trigger is not None  # only trigger tasks are scored here
            out.append(QueryPicks(task.id, task.prompt, trigger.should_trigger, trigger.expect,
                                  task.split, tuple(read_pick(a.text, names)
                                                    for a in mine if not a.error),
                                  sum(1 for a in mine if a.error)))
        return TriggerPass(label, split, value, tuple(out))


# -- the gate ----------------------------------------------------------------------------


def siblings_lost(skill: str, before: TriggerPass, after: TriggerPass,
                  min_delta: float, noisy: bool = False) -> dict[str, list[str]]:
    """sibling -> its queries the candidate lost: ones this skill now takes more often, and
    every query of a sibling whose share of picks on them fell by more than `min_delta`
    (`noisy`: and beyond noise, `noise.fell` on the per-query differences)."""
    prior = before.by_id()
    lost: dict[str, list[str]] = {}
    for q in after.queries:
        old = prior.get(q.task_id)
        if old is None or q.should_trigger or not q.expect:
            continue
        if q.taken(skill) * len(old.picks) > old.taken(skill) * len(q.picks):
            lost.setdefault(q.expect, []).append(q.query)
    for sibling in sorted({q.expect for q in after.queries if q.expect} - set(lost)):
        mine = [q for q in after.queries if q.expect == sibling]
        was = [prior[q.task_id] for q in mine if q.task_id in prior]
        b = _share(was, sibling)
        a = _share(mine, sibling)
        if b is None or a is None or not gate.improves(a, b, min_delta):
            continue
        prior_of = {q.task_id: q for q in was}
        moves = [(_share([q], sibling) or 0.0) - (_share([prior_of[q.task_id]], sibling) or 0.0)
                 for q in mine if q.task_id in prior_of and q.picks
                 and prior_of[q.task_id].picks]
        if not noisy or noise.fell(moves):
            lost[sibling] = [q.query for q in mine]
    return lost


def _share(queries: Sequence[QueryPicks], name: str) -> float | None:
    """The share of runs that picked `name` (a sibling's accuracy on its own queries)."""
    runs = [p for q in queries for p in q.picks]
    return sum(1 for p in runs if p == name) / len(runs) if runs else None


def lost_text(lost: Mapping[str, list[str]]) -> str:
    return "; ".join(f"sibling {name} would lose " + ", ".join(repr(q) for q in queries)
                     for name, queries in sorted(lost.items()))


@dataclass(frozen=True)
class TriggerTrial:
    """One candidate description on val, and the gate's word on it."""

    description: str
    baseline: float | None
    candidate: float | None
    accepted: bool
    reason: str
    test: NoiseTest | None = None  # the sign test of its val gain


def judge(skill: str, before: TriggerPass, after: TriggerPass, min_delta: float,
          noisy: bool = False) -> TriggerTrial:
    """Accept only when val accuracy rises by more than `min_delta` and no sibling loses;
    `noisy` (the picks moved under a placebo): the rise must be beyond noise, the sign test
    on the per-query differences."""
    b, a = before.accuracy(skill), after.accuracy(skill)
    lost = siblings_lost(skill, before, after, min_delta, noisy)
    tested = noise.judge("val", differences(skill, before, after), min_delta, noisy)
    rises = b is not None and a is not None and tested.beyond
    if lost:
        reason = (f"val {fmt_score(b)} -> {fmt_score(a)}, but it takes a sibling's queries: "
                  f"{lost_text(lost)}")
    elif not rises:
        reason = f"val {fmt_score(b)} -> {fmt_score(a)}: " + (
            f"not beyond noise ({tested.line()})" if noisy and a is not None and b is not None
            and a > b + min_delta else "no rise")
    else:
        reason = f"val {fmt_score(b)} -> {fmt_score(a)}" + (
            f" ({tested.line()})" if noisy else "")
    return TriggerTrial(after.description, b, a, rises and not lost, reason, tested)


# -- proposals ---------------------------------------------------------------------------


def propose_call(skill: str, value: str, train: TriggerPass, catalog: Sequence[Listing],
                 rejected: Sequence[str], model: str, sample: int,
                 max_tokens: int | None) -> ModelCall:
    """Ask for a better description from the train queries missed and taken wrongly."""
    missed = [q for q in train.queries if q.should_trigger and (q.correct(skill) or 0) < 1]
    taken = [q for q in train.queries if not q.should_trigger and (q.correct(skill) or 0) < 1]
    siblings = [s for s in catalog if s.name != skill]
    rows = ["| query | should pick | picked |", "|---|---|---|"]
    rows += [f"| {q.query} | {skill} | {q.shown()} |" for q in missed]
    rows += [f"| {q.query} | {q.expected(skill)} | {q.shown()} |" for q in taken]
    text = (f"The skill `{skill}` is shown to an agent only by its description:\n\n"
            f"{value}\n\nOther skills in the same catalog:\n"
            + "".join(f"- {s.name}: {s.description}\n" for s in siblings)
            + f"\nRequests it missed ({len(missed)}) and requests it took that belong "
            f"elsewhere ({len(taken)}), side by side:\n\n" + "\n".join(rows)
            + ("\n\nDescriptions already tried and refused:\n"
               + "".join(f"- {r}\n" for r in rejected) if rejected else "")
            + f"\n\nWrite a new description for `{skill}` (one paragraph, at most "
            f"{desc.MAX_CHARS} characters, no angle brackets) that says what it is for so "
            "the agent picks it for requests like the missed ones and leaves the others "
            "to the skills they belong to. Reply with JSON {\"description\": \"...\"}.")
    return ModelCall(
        purpose="propose", model=model,
        messages=(("system", "You improve how a skill describes itself to an agent."),
                  ("user", text)),
        temperature=0.0 if sample == 0 else 0.7, seed=sample, sample=sample,
        max_tokens=max_tokens,
        json_schema=json.dumps(PROPOSE_SCHEMA, sort_keys=True, separators=(",", ":")),
        context={"trigger_propose": {
            "skill": skill, "description": value,
            "missed": [q.query for q in missed], "taken": [q.query for q in taken],
            "siblings": [[s.name, s.description] for s in siblings]}})


def _reply_json(text: str) -> object:
    """A reply's JSON, fences and a `json` tag taken off; None when it is not JSON."""
    try:
        return json.loads(text.strip().strip("`").removeprefix("json").strip())
    except ValueError:
        return None


def read_proposal(text: str | None) -> str | None:
    """The description an optimizer's reply proposes (`{"description": ...}`), or None."""
    data = _reply_json(text) if text else None
    value = data.get("description") if isinstance(data, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


# -- the night's trigger pass ------------------------------------------------------------


@dataclass(frozen=True)
class SplitScores:
    baseline: float | None
    final: float | None
    n: int


@dataclass
class TriggerNight:
    """What the trigger pass decided, for the commit, the note, the PR body and --json."""

    skill: str
    decision: Decision
    reason: str
    description_before: str
    description_after: str
    pr_eligible: bool = False
    decided_by: str = "test"
    train: SplitScores = field(default_factory=lambda: SplitScores(None, None, 0))
    val: SplitScores = field(default_factory=lambda: SplitScores(None, None, 0))
    test: SplitScores = field(default_factory=lambda: SplitScores(None, None, 0))
    trials: list[TriggerTrial] = field(default_factory=list)
    rows: list[PickRow] = field(default_factory=list)
    siblings_fell: str = ""
    noise: Noise | None = None  # how far val picks moved under a placebo, and the sign tests
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    abort_code: int = 0


def ceiling(settings: EpochSettings, tasks: Sequence[Task]) -> int:
    """The most calls a trigger pass makes: every query x run, baseline on each split, each
    proposal and its val pass per round, and the final held-out (and train) pass; with the
    noise rule's passes: the placebo on val, the val gain seen afresh (three val passes) and
    held-out's re-worded copies (two held-out passes)."""
    runs = max(1, settings.gate.repeats)
    n = {s: sum(1 for t in tasks if t.split == s) * runs for s in SPLITS}
    proposals = max(1, settings.proposals)
    searched = n["train"] + n["val"] + n["test"] + settings.rounds * (
        proposals * (1 + n["val"]) + n["train"]) + n["test"]
    return searched + 4 * n["val"] + 2 * n["test"]


def run_triggers(tasks: Sequence[Task], catalog: Sequence[Listing], skill_text: str,
                 settings: EpochSettings, backend: Backend, *, skill: str,
                 cache: ResponseCache | None = None, max_calls: int | None = None,
                 redact: Callable[[str], str] | None = None) -> tuple[TriggerNight, str]:
    """The trigger pass: (what it decided, the skill document with the accepted
    description, else as given). `tasks` are this skill's trigger tasks and its siblings'
    should-trigger queries as near misses expecting them; `redact` (the run's secret
    masker) refuses a description that would write a secret."""
    before = desc.read(skill_text)
    limits = dataclasses.replace(settings, max_calls=max_calls if max_calls is not None
                                 else settings.max_calls)
    runner = CallRunner.for_settings(backend, limits, cache=cache)
    picker = Picker(runner, catalog, skill, settings)
    split: dict[Split, list[Task]] = {s: [t for t in tasks if t.split == s and t.trigger]
                                      for s in SPLITS}
    night = TriggerNight(skill, "no_edits", "", before, before,
                         decided_by="test" if split["test"] else "val")
    try:
        text = _search(night, picker, split, skill_text, settings, redact or (lambda v: v))
    except (BackendError, BudgetExhausted) as exc:
        night.decision, night.reason, night.pr_eligible = "aborted", str(exc), False
        night.description_after, text = before, skill_text
        night.abort_code = 6 if isinstance(exc, BudgetExhausted) else 3
    night.calls, night.cache_hits = runner.cost.calls, runner.cost.cache_hits
    night.prompt_tokens = runner.cost.prompt_tokens
    night.completion_tokens = runner.cost.completion_tokens
    return night, text


def _search(night: TriggerNight, picker: Picker, split: Mapping[Split, list[Task]],
            skill_text: str, settings: EpochSettings, redact: Callable[[str], str]) -> str:
    skill, delta = night.skill, settings.gate.min_delta
    base = {s: picker.score(split[s], night.description_before, "baseline", s)
            for s in SPLITS if split[s]}
    if "val" not in base:
        night.reason = "no val trigger tasks: the gate has nothing to decide on"
        return skill_text
    current, text = night.description_before, skill_text
    best_val, train = base["val"], base.get("train")
    placebo_val: TriggerPass | None = None
    rejected: list[str] = []
    asked = failed = 0
    for _ in range(settings.rounds):
        if train is None or (train.accuracy(skill) or 0.0) >= 1.0:
            break
        calls = [propose_call(skill, current, train, picker.catalog, rejected,
                              settings.optimizer_model, i, settings.max_reflect_tokens)
                 for i in range(max(1, settings.proposals))]
        answers = picker.runner.map(calls)
        asked += len(answers)
        failed += sum(1 for a in answers if a.error)
        values = {v for a in answers if (v := read_proposal(a.text))}
        winner: tuple[TriggerTrial, TriggerPass, str] | None = None
        for value in sorted(values - {current}):
            try:
                if redact(value) != value:
                    raise desc.DescriptionError("the description would write a secret")
                candidate_text = desc.replace(text, value)
            except desc.DescriptionError as exc:
                night.trials.append(TriggerTrial(value, None, None, False, str(exc)))
                rejected.append(value)
                continue
            if night.noise is None:  # the first candidate to judge: measure the noise
                night.noise, placebo_val = measure(picker, skill, split["val"],
                                                   night.description_before, base["val"])
            scored = picker.score(split["val"], value, "candidate", "val")
            trial = judge(skill, best_val, scored, delta, night.noise.noisy)
            night.trials.append(trial)
            if not trial.accepted:
                rejected.append(value)
            elif winner is None or (trial.candidate or 0) > (winner[0].candidate or 0):
                winner = (trial, scored, candidate_text)
        if winner is None:
            break
        current, best_val, text = winner[0].description, winner[1], winner[2]
        train = picker.score(split["train"], current, "final", "train")
    night.description_after = current
    night.val = SplitScores(base["val"].accuracy(skill), best_val.accuracy(skill),
                            len(split["val"]))
    if "train" in base and train is not None:
        night.train = SplitScores(base["train"].accuracy(skill), train.accuracy(skill),
                                  len(split["train"]))
    if current == night.description_before:
        night.decision = "rejected" if night.trials else "no_edits"
        if night.trials:
            night.reason = f"{len(night.trials)} description(s) tried; none was accepted"
        elif asked:
            night.reason = (f"{asked} proposal(s) gave no new description ({failed} failed; "
                            "a reply must be JSON {\"description\": ...})")
        else:
            night.reason = ("every train trigger task already picks right" if train is not None
                            else "no train trigger tasks to learn from")
        return skill_text
    measured = night.noise
    assert measured is not None and placebo_val is not None  # a candidate was judged
    measured.val = confirm_val(picker, measured, split["val"], night.description_before,
                               current, base["val"], best_val, placebo_val, delta)
    if not measured.val.beyond:
        night.decision, night.description_after = "rejected", night.description_before
        night.reason = (f"trigger val {fmt_score(night.val.baseline)} -> "
                        f"{fmt_score(night.val.final)}, but {noise_summary(measured)}; seen "
                        f"afresh under two re-wordings: {measured.val.line()}; the "
                        "description goes back")
        return skill_text
    night.decision = "accepted"
    _decide_pr(night, picker, split, base, best_val, measured, delta)
    return text


def _decide_pr(night: TriggerNight, picker: Picker, split: Mapping[Split, list[Task]],
               base: Mapping[Split, TriggerPass], best_val: TriggerPass, measured: Noise,
               delta: float) -> None:
    """The accepted description on held-out (val when there is none): a pull request only
    when it rises beyond noise and no sibling falls; the night's rows and reason."""
    skill, after = night.skill, night.description_after
    decider = base.get("test")
    final = (picker.score(split["test"], after, "final", "test") if decider is not None
             else best_val)
    decider = decider or base["val"]
    night.rows = _rows(skill, decider, final)
    if decider is not base["val"]:
        tested, *both = confirm_test(picker, measured, split["test"],
                                     night.description_before, after, decider, final, delta)
        measured.test, rises = tested, tested.beyond
    else:  # val decides: its gain was confirmed before
        rises, both = measured.val is not None and measured.val.beyond, [decider, final]
    lost = siblings_lost(skill, both[0], both[1], delta, measured.noisy)
    night.siblings_fell = lost_text(lost)
    b, a = decider.accuracy(skill), final.accuracy(skill)
    if decider is not base["val"]:
        night.test = SplitScores(b, a, len(split["test"]))
    night.pr_eligible = rises and not lost
    where = "held-out" if night.decided_by == "test" else "val (no held-out trigger tasks)"
    why_not = (f"a sibling fell: {night.siblings_fell}" if lost
               else f"{where} did not rise beyond noise" if measured.noisy
               else f"{where} did not rise")
    said = (f" ({measured.test.line()})" if measured.noisy and measured.test is not None
            else "")
    night.reason = (f"description accepted: trigger val {fmt_score(night.val.baseline)} -> "
                    f"{fmt_score(night.val.final)}, {where} {fmt_score(b)} -> {fmt_score(a)}"
                    + said + ("" if night.pr_eligible else f"; {why_not}, so no PR"))


def measure(picker: Picker, skill: str, tasks: Sequence[Task], value: str,
            base_val: TriggerPass) -> tuple[Noise, TriggerPass]:
    """Score val under the placebo description and compare each query with the baseline:
    the queries whose correctness moved are the night's pick noise."""
    placebo_val = picker.score(tasks, placebo(value, 0), "placebo: the description, re-worded",
                               "val")
    moves = differences(skill, base_val, placebo_val)
    spread = sum(abs(d) for d in moves) / len(moves) if moves else 0.0
    measured = Noise(tasks=len(moves), moved=sum(1 for d in moves if d), spread=spread,
                     alpha=noise.ALPHA)
    if measured.noisy and noise.too_small(measured.tasks):
        measured.note = noise.small_split_line("val", measured.tasks)
    return measured, placebo_val


def noise_summary(measured: Noise) -> str:
    """`3 of 12 val queries' picks moved under a placebo ...`, the trigger pass's words."""
    if not measured.noisy:
        return (f"no val query of {measured.tasks} moved under a placebo: no noise, strictly "
                "better decides")
    return (f"{measured.moved} of {measured.tasks} val queries' picks moved under a placebo "
            f"(mean |change| {measured.spread:.3f}): a gain must pass the sign test at "
            f"{measured.alpha:g}")


def _again(picker: Picker, tasks: Sequence[Task], value: str,
           wordings: Sequence[int] = (0,)) -> list[TriggerPass]:
    return [picker.score(tasks, placebo(value, w), "re-worded", tasks[0].split)
            for w in wordings]


def confirm_val(picker: Picker, measured: Noise, tasks: Sequence[Task], before: str,
                after: str, base_val: TriggerPass, best_val: TriggerPass,
                placebo_val: TriggerPass, min_delta: float) -> NoiseTest:
    """The accepted description's val gain. Without noise: the search's own passes,
    strictly better. With noise: seen afresh, since the search chose the description on
    its own val pass: the description and the original, each under both re-wordings."""
    skill = picker.skill
    if not measured.noisy:
        return noise.judge("val", differences(skill, base_val, best_val), min_delta, False)
    old = pooled([placebo_val, *_again(picker, tasks, before, (1,))])
    new = pooled(_again(picker, tasks, after, (0, 1)))
    return noise.judge("val", differences(skill, old, new), min_delta, True, observations=2)


def confirm_test(picker: Picker, measured: Noise, tasks: Sequence[Task], before: str,
                 after: str, base_test: TriggerPass, final_test: TriggerPass,
                 min_delta: float) -> tuple[NoiseTest, TriggerPass, TriggerPass]:
    """Held-out's gain for the pull request, and the picks it judged (before, after): no
    description was chosen on it, so its own passes count, each side with one re-worded
    copy beside it when the picks are noisy."""
    skill = picker.skill
    if not measured.noisy:
        return (noise.judge("held-out", differences(skill, base_test, final_test), min_delta,
                            False), base_test, final_test)
    old = pooled([base_test, *_again(picker, tasks, before)])
    new = pooled([final_test, *_again(picker, tasks, after)])
    return (noise.judge("held-out", differences(skill, old, new), min_delta, True,
                        observations=2), old, new)


def _rows(skill: str, before: TriggerPass, after: TriggerPass) -> list[PickRow]:
    prior = before.by_id()
    return [PickRow(q.query, q.expected(skill), prior[q.task_id].shown(), q.shown())
            for q in after.queries if q.task_id in prior]


def body_fell(tasks: Sequence[Task], documents: Mapping[str, str | None], text: str,
              settings: EpochSettings, backend: Backend, *,
              cache: ResponseCache | None = None, max_calls: int | None = None) -> str:
    """Why the body tasks fell when the agent is shown the skill document with the new
    description (`text`), or ''. The agent reads the frontmatter too, so a description
    change is re-scored on the body's held-out tasks (val without them) before and after;
    identical calls before it are cache hits. A fall is the gate's: by more than
    `gate.min_delta`, and when the answers move under a placebo of the documents, beyond
    noise (`noise.fell`, the sign test on the per-task differences)."""
    from gitsleep.core import agents, replay

    body = agents.expand([t for t in tasks if t.trigger is None], settings.agents)
    split: Split = "test" if any(t.split == "test" for t in body) else "val"
    chosen = [t for t in body if t.split == split]
    if not chosen or documents.get("skill") == text:
        return ""
    limits = dataclasses.replace(settings, max_calls=max_calls if max_calls is not None
                                 else settings.max_calls)
    runner = CallRunner.for_settings(backend, limits, cache=cache)
    before = replay.score_split(runner, chosen, documents, settings, label="description-before",
                                split=split)
    after = replay.score_split(runner, chosen, {**documents, "skill": text}, settings,
                               label="description-after", split=split)
    b, a = before.mean, after.mean
    if b is None or a is None or not gate.improves(a, b, settings.gate.min_delta):
        return ""
    where = "held-out" if split == "test" else "val"
    fell = (f"with the new description the body tasks fell on {where} {fmt_score(b)} -> "
            f"{fmt_score(a)}")
    # only a fall is worth the placebo pass that tells whether the answers are noisy
    placebo = replay.score_split(runner, chosen, noise.placebo(documents), settings,
                                 label="placebo: the original, re-worded", split=split)
    if not any(noise.differences([before], [placebo])):
        return fell
    diffs = noise.differences([before], [after])
    if noise.fell(diffs):
        return (f"{fell} (sign test p={noise.sign_p([-d for d in diffs]):.3g} <= "
                f"{noise.ALPHA:g}, beyond noise)")
    return ""


def refused(night: TriggerNight, why: str) -> TriggerNight:
    """The pass with its accepted description refused after all (`why`)."""
    return dataclasses.replace(night, decision="rejected", pr_eligible=False,
                               description_after=night.description_before,
                               reason=f"description refused: {why} ({night.reason})")


def fold(result: EpochResult, night: TriggerNight, text: str) -> EpochResult:
    """The night's result with the trigger pass in it: the skill document carries the
    accepted description, and an accepted description alone makes an accepted night. When
    the learned block changed too, a pull request opens only if both held-outs rose (and no
    sibling fell)."""
    documents = dict(result.documents)
    if "skill" in documents and night.decision == "accepted":
        documents["skill"] = (documents["skill"][0], text)
    decision, reason, eligible = result.decision, result.reason, result.pr_eligible
    if night.decision == "accepted":
        if decision != "accepted":
            decision, reason, eligible = "accepted", night.reason, night.pr_eligible
        else:  # both surfaces changed: a pull request needs each one's held-out to rise
            reason, eligible = f"{reason}; {night.reason}", eligible and night.pr_eligible
    elif night.decision == "aborted":  # a budget or backend stop: the night stops whole
        return dataclasses.replace(
            result, triggers=night, decision="aborted", abort_code=night.abort_code,
            pr_eligible=False, documents={k: (b, b) for k, (b, _) in documents.items()},
            reason=f"trigger pass stopped: {night.reason}; nothing is written")
    elif result.val.n == 0 and not result.changed:  # the pass was the whole night
        decision, reason = night.decision, night.reason
    cost = dataclasses.replace(
        result.cost, calls=result.cost.calls + night.calls,
        cache_hits=result.cost.cache_hits + night.cache_hits,
        prompt_tokens=result.cost.prompt_tokens + night.prompt_tokens,
        completion_tokens=result.cost.completion_tokens + night.completion_tokens)
    return dataclasses.replace(result, documents=documents, decision=decision, reason=reason,
                               pr_eligible=eligible, triggers=night, cost=cost)
