"""What every part of an epoch's report shares: the per-task changes of a split, the
learned block's diff, integrity and group counts, and a few words and notes."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from gitsleep.base.errors import UsageError
from gitsleep.base.redact import Redactor
from gitsleep.core import documents as docs
from gitsleep.core import gate, groups, judges
from gitsleep.core.models import (
    AgentSummary,
    Cost,
    EpochResult,
    Noise,
    NoiseTest,
    PassResult,
    Split,
    SplitSummary,
    TaskDelta,
    TaskResult,
)
from gitsleep.core.scores import SMALL_SPLIT, fmt_change, small_splits

SPLIT_NAMES = {"train": "train", "val": "val", "test": "held-out"}
_STATUS_ORDER = {"regressed": 0, "improved": 1, "missing": 2, "unchanged": 3}


def plural(count: int, noun: str) -> str:
    """`1 task`, `2 tasks`: the count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


METRIC_NOTES = {
    "hard": "`hard`: 1 when an answer passes every check, else 0",
    "soft": "`soft`: the share of an answer's checks that pass",
    "mixed": "`mixed`: a weighted mean of hard (1 when every check passes) and soft "
             "(the share of checks that pass), weighted by `gate.mixed_weight`",
}


def metric_note(metric: str) -> str:
    """One sentence that says what the metric's number means (empty for an unknown one)."""
    return METRIC_NOTES.get(metric, "")


def small_sample_note(result: EpochResult) -> str:
    """A plain warning when the decision rests on few tasks; empty otherwise."""
    small = small_splits(result.val.n, result.test.n)
    if not small:
        return ""
    return (f"Small sample: {' and '.join(small)}; with fewer than {SMALL_SPLIT} tasks one "
            "task moves the score a lot, so treat this decision as a hint and add tasks.")


def noise_json(noise: Noise | None) -> dict[str, object] | None:
    """The night's noise for `--json` and diagnostics.json: what moved under the placebo,
    the sign tests (per split) and their verdicts; None when val was never scored."""
    if noise is None:
        return None
    from gitsleep.core.models import to_dict

    return {**to_dict(noise), "noisy": noise.noisy, "summary": noise.summary()}


def noise_cell(test: NoiseTest | None, noise: Noise | None) -> str:
    """A score table's "beyond noise?" cell for one split."""
    if noise is None:
        return "not measured"
    if not noise.noisy:
        return "no noise measured: strictly better decides"
    if test is None:
        return "not tested" + (" (split too small)" if noise.note else "")
    verdict = "yes" if test.beyond else "no"
    return f"{verdict}: p={test.p:.3g} ({test.up} up, {test.down} down; sign test, {test.alpha:g})"


def noise_line(result: EpochResult) -> str:
    """`Noise: 3 of 12 val tasks moved under a placebo ...` for a commit body ('' without)."""
    noise = result.noise
    if noise is None:
        return ""
    said = [noise.summary()]
    said += [test.line() for test in (noise.val, noise.test) if test is not None]
    if noise.note:
        said.append(noise.note)
    return "Noise: " + "; ".join(said)


def change(summary: SplitSummary) -> str:
    return fmt_change(summary.baseline, summary.candidate)


AGENT_GATES = {"mean": "the mean over agents", "min": "the lowest agent's score"}


def agent_gate_how(result: EpochResult) -> str:
    """What the aggregate of the agents' scores is, in words (`the mean over agents`)."""
    return AGENT_GATES.get(result.agent_gate, result.agent_gate)


def agent_gate_note(result: EpochResult) -> str:
    """How the val and held-out scores aggregate the agents (`gate.agents: mean (...)`)."""
    return f"gate.agents: {result.agent_gate} ({agent_gate_how(result)})"


def agent_line(agent: AgentSummary) -> str:
    """`small (qwen0.5b): val 0.250 -> 0.500, held-out 0.000 -> 1.000`."""
    return (f"{agent.name} ({agent.model}): val {change(agent.val)}, "
            f"held-out {change(agent.test)}")


def _moved(agents: list[AgentSummary], split: Split, rose: bool) -> list[AgentSummary]:
    """The agents whose score on `split` rose (or, `rose=False`, fell)."""
    found = []
    for agent in agents:
        summary: SplitSummary = getattr(agent, split)
        before, after = summary.baseline, summary.candidate
        if before is not None and after is not None and (after > before if rose
                                                         else after < before):
            found.append(agent)
    return found


def agent_tradeoffs(result: EpochResult) -> list[str]:
    """Per split, when the change lifted one agent's score and lowered another's: one
    sentence naming both, e.g. `helps small (val 0.250 -> 0.500) and hurts large (val
    0.750 -> 0.500)`. A night that helps one agent by hurting another says so, even when
    the aggregate rose."""
    sentences = []
    splits: tuple[Split, ...] = ("val", "test")
    for split in splits:
        helped, hurt = _moved(result.agents, split, True), _moved(result.agents, split, False)
        if helped and hurt:
            sentences.append(f"helps {_named(helped, split)} and hurts {_named(hurt, split)}")
    return sentences


def _named(agents: list[AgentSummary], split: Split) -> str:
    """`small (val 0.250 -> 0.500), tiny (val 0.000 -> 0.250)`."""
    return ", ".join(f"{a.name} ({SPLIT_NAMES[split]} {change(getattr(a, split))})"
                     for a in agents)


def default_redactor(redactor: Redactor | None) -> Redactor:
    return redactor if redactor is not None else Redactor.from_env()


def split_passes(result: EpochResult, split: Split) -> tuple[PassResult | None, PassResult | None]:
    """(baseline pass, final pass) of a split; final is None when nothing was re-scored.

    The baseline is the pass labelled `baseline` (else the split's first pass); the final
    pass is the one the epoch marked `final` (or, for hand-made results, labelled so).
    """
    passes = [p for p in result.passes if p.split == split]
    if not passes:
        return None, None
    before = next((p for p in passes if p.label == "baseline"), passes[0])
    if result.decision == "aborted" or not result.changed:
        return before, None
    final = next((p for p in reversed(passes) if p.final or p.label == "final"), None)
    return before, final


def task_changes(result: EpochResult, split: Split) -> list[TaskDelta]:
    """Per-task baseline -> final scores of a split: regressions first, then gains."""
    before, after = split_passes(result, split)
    if before is None or after is None:
        return []
    prior = before.by_id()
    rows = [
        TaskDelta(t.task_id, prior[t.task_id].value if t.task_id in prior else None, t.value)
        for t in after.tasks
    ]
    return sorted(rows, key=lambda d: _STATUS_ORDER.get(d.status, 9))


CallNames = dict[str, list[str] | None]  # "before" / "after" -> the tools called, in order


def called_names(task: TaskResult | None) -> list[str] | None:
    """The tools the task's first answered sample called, in order; None without a trace."""
    if task is None:
        return None
    sample = next((s for s in task.samples if s.error is None), None)
    if sample is None or sample.trace is None:
        return None
    return [call.name for call in sample.trace]


def tool_calls(result: EpochResult) -> dict[str, dict[str, CallNames]]:
    """Per split and task, the tools its agent called at baseline and at the end (the
    same list twice when nothing was re-scored); only tasks whose answers carry a trace."""
    found: dict[str, dict[str, CallNames]] = {}
    splits: tuple[Split, ...] = ("val", "test")
    for split in splits:
        before, after = split_passes(result, split)
        if before is None:
            continue
        final = (after or before).by_id()
        for task in before.tasks:
            then, now = called_names(task), called_names(final.get(task.task_id))
            if then is not None or now is not None:
                found.setdefault(split, {})[task.task_id] = {"before": then, "after": now}
    return found


def shown_calls(names: list[str] | None) -> str:
    """`search, read_file`, `no tool`, or `no trace`."""
    if names is None:
        return "no trace"
    return ", ".join(names) if names else "no tool"


def _block_lines(text: str) -> list[str]:
    """The learned block's lines (markers included); the whole text if it is corrupt."""
    lines = docs.split_lines(text)
    try:
        block = docs.find_block(text)
    except UsageError:
        return lines
    if block is None:
        return []
    return lines[block.start : block.end + 1]


def block_diff(before: str, after: str, target: str) -> str:
    """A unified diff of the learned block only: the rest of the document never changes."""
    old = [line.rstrip("\r\n") for line in _block_lines(before)]
    new = [line.rstrip("\r\n") for line in _block_lines(after)]
    return "\n".join(
        difflib.unified_diff(
            old, new, f"{target} (before)", f"{target} (after)", lineterm=""
        )
    )


def integrity_counts(result: EpochResult) -> dict[str, int]:
    """Per pass (`split (label)`), the answers scored as failing for integrity: they
    repeated a placeholder of the learned template or a slot of a learned rule, or left a
    section the template requires empty."""
    counts: dict[str, int] = {}
    for p in result.passes:
        n = judges.integrity_failures(s for t in p.tasks for s in t.samples)
        if n:
            counts[f"{p.split} ({p.label})"] = n
    return counts



def model_costs(cost: Cost) -> dict[str, dict[str, float]]:
    """Per model: calls, tokens, seconds in its calls and the p50/p95 latency of one."""
    return {model: {**used, **{k: cost.latency.get(model, {}).get(k, 0.0)
                               for k in ("seconds", "p50_s", "p95_s")}}
            for model, used in sorted(cost.by_model.items())}


@dataclass(frozen=True)
class GroupScore:
    """One group's scores on one split: n tasks, their mean before and after."""

    split: Split
    group: str
    n: int
    baseline: float
    candidate: float
    # answers of the group's tasks that carry another group's value, before and after
    wrong_baseline: int = 0
    wrong_candidate: int = 0

    def to_json(self) -> dict[str, object]:
        return {"split": self.split, "group": self.group, "n": self.n,
                "baseline": self.baseline, "candidate": self.candidate,
                "wrong_baseline": self.wrong_baseline, "wrong_candidate": self.wrong_candidate}


def group_scores(result: EpochResult) -> list[GroupScore]:
    """Per split (val, test) and per group of a varying key: n and the mean before and
    after, over the tasks scored under both documents, and the answers of those tasks that
    carry another group's value (a wrong value), before and after."""
    rows: list[GroupScore] = []
    for split in ("val", "test"):
        baseline, final = split_passes(result, split)
        if baseline is None or final is None:
            continue
        values = {tid: (b, a) for tid, b, a in gate.paired(baseline, final)}
        scored = {name: [i for i in ids if i in values] for name, ids in result.groups.items()}
        wrong_before = gate.wrong_values(baseline, scored, result.other_wants)
        wrong_after = gate.wrong_values(final, scored, result.other_wants)
        for name, n, before, after in groups.group_means(result.groups, values):
            rows.append(GroupScore(split, name, n, before, after, wrong_before.get(name, 0),
                                   wrong_after.get(name, 0)))
    return rows


def simulated(backend: str) -> bool:
    """Did the offline simulator answer, propose or judge (`offline`, `command+offline`)?"""
    return "offline" in backend.split("+")

