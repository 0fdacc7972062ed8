"""The pull request of an accepted epoch: its title and its body, fitted to GitHub's limit."""

from __future__ import annotations

import re

from gitsleep.core import markdown as md
from gitsleep.core.models import (
    EditOutcome,
    EpochResult,
    Split,
    SplitSummary,
    TaskDelta,
    TaskResult,
)
from gitsleep.core.scores import fmt_score
from gitsleep.outcome import PR_BODY_LIMIT
from gitsleep.redact import Redactor
from gitsleep.report.common import (
    SPLIT_NAMES,
    block_diff,
    change,
    group_scores,
    integrity_counts,
    metric_note,
    model_costs,
    small_sample_note,
    split_passes,
    task_changes,
)

ANSWER_PAIRS = 3  # held-out tasks whose answers before and after the PR body shows
ANSWER_CHARS = 600


def _first_answer(task: TaskResult | None) -> str | None:
    if task is None:
        return None
    return next((s.answer for s in task.samples if s.answer is not None), None)


def answer_pairs(result: EpochResult, redactor: Redactor,
                 limit: int = ANSWER_PAIRS) -> list[tuple[TaskDelta, str, str]]:
    """Up to `limit` held-out tasks whose score changed, with their first answer before
    and after: redacted whole first, then clipped, so a cut never leaves part of a secret."""
    before, after = split_passes(result, "test")
    if before is None or after is None:
        return []
    prior, final = before.by_id(), after.by_id()
    pairs = []
    for delta in task_changes(result, "test"):
        if delta.status not in ("improved", "regressed"):
            continue
        old, new = _first_answer(prior.get(delta.task_id)), _first_answer(final.get(delta.task_id))
        if old is None or new is None:
            continue
        pairs.append((delta, redactor.clip(old, ANSWER_CHARS),
                      redactor.clip(new, ANSWER_CHARS)))
        if len(pairs) >= limit:
            break
    return pairs



def held_out_chart(points: list[tuple[str, float]], metric: str) -> str:
    """A Mermaid `xychart-beta` of held-out per epoch (GitHub renders it); "" below 2 points."""
    if len(points) < 2:
        return ""
    labels = ", ".join('"' + md.one_line(label).replace('"', "'") + '"' for label, _ in points)
    values = ", ".join(f"{value:.3f}" for _, value in points)
    name = re.sub(r"[^a-z]", "", metric.lower()) or "score"
    return "\n".join([
        "```mermaid", "xychart-beta", f'    title "Held-out {name} score per epoch"',
        f"    x-axis [{labels}]", '    y-axis "held-out" 0 --> 1', f"    line [{values}]", "```",
    ])




def pr_title(result: EpochResult) -> str:
    """`gitsleep(<skill>): held-out <b> -> <c>` (val when it decided)."""
    skill = " ".join(md.one_line(result.skill).split())
    if result.decided_by == "val":
        return f"gitsleep({skill}): val {change(result.val)}"
    return f"gitsleep({skill}): held-out {change(result.test)}"


def _interval(summary: SplitSummary) -> str:
    if summary.ci_low is None or summary.ci_high is None:
        return "n/a"
    return f"{summary.ci_low:+.3f} to {summary.ci_high:+.3f}"


def _sample_reason(task: TaskResult | None) -> str:
    if task is None:
        return ""
    for sample in task.samples:
        if sample.error:
            return f"error: {sample.error}"
        if sample.score is not None:
            return sample.score.reason
    return ""


class _Prose:
    """Redact, clip, then escape: the one road from untrusted text into Markdown."""

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def text(self, value: str, limit: int = 300) -> str:
        return md.escape(md.clip(md.one_line(self.redactor.redact(value)), limit))

    def code(self, value: str, limit: int = 300) -> str:
        return md.code_span(md.clip(md.one_line(self.redactor.redact(value)), limit))


def _edit_items(outcomes: list[EditOutcome], prose: _Prose, why_label: str) -> list[str]:
    items = []
    for outcome in outcomes:
        edit = outcome.edit
        if edit.op in ("add", "template"):
            what = f"**{edit.op}** {prose.code(edit.content)}"
        elif edit.op == "delete":
            what = f"**delete** {prose.code(edit.anchor)}"
        else:
            what = (f"**{prose.text(edit.op, 20)}** {prose.code(edit.anchor)} "
                    f"with {prose.code(edit.content)}")
        why = edit.rationale if why_label == "why" else outcome.reason
        item = f"- {what} ({prose.text(edit.target, 20)})"
        if why:
            item += f"  \n  _{why_label}:_ {prose.text(why, 500)}"
        items.append(item)
    return items


def _task_rows(result: EpochResult, split: Split, prose: _Prose) -> list[str]:
    """One Markdown table row per task of a split, regressions first."""
    _, after = split_passes(result, split)
    final = after.by_id() if after is not None else {}
    rows = []
    for delta in task_changes(result, split):
        cells = [
            prose.text(delta.task_id, 120),
            fmt_score(delta.before),
            fmt_score(delta.after),
            delta.status,
            prose.text(_sample_reason(final.get(delta.task_id)), 160),
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


_LEFT_OUT = "_Left out to keep this body under the size limit; see diagnostics.json._"
_REST_LEFT_OUT = ("_The rest of this report is left out to keep this body under the size limit; "
                  "see diagnostics.json._")
_TASK_HEADER = md.table(["task", "baseline", "candidate", "change", "why (candidate)"], [],
                        "lrrll")



def _group_section(result: EpochResult, prose: _Prose) -> list[str]:
    """The score per group, so a reviewer sees that a rule lifts every group."""
    rows = group_scores(result)
    if not rows:
        return []
    names = {"val": "val", "test": "held-out (test)"}
    return ["", "### Scores per group (tasks whose checks want different values)", "",
            md.table(["split", "the tasks that want", "n", "baseline", "candidate"],
                     [[names[r.split], prose.code(r.group, 120), str(r.n),
                       fmt_score(r.baseline), fmt_score(r.candidate)] for r in rows],
                     "llrrr")]


def pr_body(
    result: EpochResult,
    *,
    diff_hint: str = "",
    rerun: str,
    redactor: Redactor,
    limit: int = PR_BODY_LIMIT,
    chart: str = "",
) -> str:
    """The pull-request body: scores first, then the learned-block diff, the edits, the
    per-task tables, models, cost and a footer on how to re-run or stop gitsleep.

    At most `limit` characters: per-task rows go first (with a note of how many), then
    whole lower sections; the score table is never cut. `rerun` is the command to show
    (default `gitsleep consolidate --skill <skill>`); `diff_hint` is one plain-text line
    under the diff (e.g. where to see the full diff).
    """
    prose = _Prose(redactor)
    skill = prose.code(result.skill, 100)
    decision = f"**Decision:** {prose.text(result.decision, 40)}. {prose.text(result.reason, 500)}"
    head = [f"## gitsleep: {skill}", "", decision]
    if result.decided_by == "val":
        head += ["", "> [!NOTE]", "> No task is in the held-out `test` split, so the val split "
                 "decided whether to open this pull request. Val also chose the edits, so its "
                 "gain overstates how well they generalise: add held-out tasks for a fair check."]
    if result.backend == "offline":
        head += ["", "> [!WARNING]", "> These scores come from gitsleep's offline simulator "
                 "(`backend: offline`), which follows directives literally. They say nothing "
                 "about how a real model would do."]
    if small_sample_note(result):
        head += ["", "> [!CAUTION]", f"> {small_sample_note(result)}"]
    if result.warnings:
        head += ["", "> [!WARNING]", "> What the checks cannot see:"]
        head += [f"> - {prose.text(w, 400)}" for w in result.warnings]
    integrity = integrity_counts(result)
    if integrity:
        head += ["", "> [!NOTE]", "> Scored as failing whatever the checks said, because the "
                 "answer repeated a placeholder of the learned template or a slot of a learned "
                 "rule, or left a section the template requires empty: "
                 + ", ".join(f"{prose.text(k, 80)}: {v}" for k, v in integrity.items())]
    head += [
        "",
        f"### Scores ({prose.code(result.metric, 40)} metric, 0 to 1)",
        "",
        md.table(
            ["split", "baseline", "candidate", "n",
             "change: 95% interval (paired bootstrap)"],
            [
                [name, fmt_score(s.baseline), fmt_score(s.candidate), str(s.n), _interval(s)]
                for name, s in (("val", result.val), ("held-out (test)", result.test))
            ],
            "lrrrl",
        ),
    ]
    if metric_note(result.metric):
        head += ["", f"_{metric_note(result.metric)}._"]
    head += _group_section(result, prose)
    if chart:  # held-out per epoch, from `held_out_chart`: our own text, never a task's
        head += ["", "### Held-out per epoch", "", chart]

    diff_parts: list[str] = []
    for target, (before, after) in result.documents.items():
        if before == after:
            continue
        text = redactor.redact(block_diff(redactor.redact(before), redactor.redact(after), target))
        diff_parts += [*([""] if diff_parts else []), f"**{prose.text(target, 20)} document**",
                       "", md.fence(md.clip(text, 20000), "diff")]
    if diff_hint:
        diff_parts += [*([""] if diff_parts else []), prose.text(diff_hint, 500)]
    # Optional sections, least important last: they are dropped from the end when the
    # body would not fit even without per-task rows.
    optional: list[tuple[str, list[str]]] = []
    if diff_parts:
        optional.append(("Learned block diff", diff_parts))
    shown: list[str] = []
    for delta, old, new in answer_pairs(result, redactor):
        shown += [*([""] if shown else []),
                  f"**{prose.text(delta.task_id, 120)}**: {fmt_score(delta.before)} -> "
                  f"{fmt_score(delta.after)} ({delta.status})", "",
                  "Before:", "", md.fence(old, "text"), "", "After:", "", md.fence(new, "text")]
    if shown:
        optional.append(("Held-out answers before and after", shown))
    for title, outcomes, label in (
        ("Applied edits", result.applied, "why"),
        ("Rejected by the gate", result.rejected, "gate"),
        ("Edits that changed nothing", result.unmatched, "reason"),
    ):
        if outcomes:
            optional.append((f"{title} ({len(outcomes)})", _edit_items(outcomes, prose, label)))
    if result.diagnosis:
        optional.insert(0, ("Why no candidate beat the baseline", [
            f"- {prose.code(str(v['check']), 120)}: {prose.text(str(v['detail']), 300)}"
            for v in result.diagnosis]))

    cost = result.cost
    tail = [
        "### Models and cost",
        "",
        f"- agent {prose.code(result.agent_model, 100)}, optimizer "
        f"{prose.code(result.optimizer_model, 100)}, judge {prose.code(result.judge_model, 100)}"
        f" (backend {prose.code(result.backend, 40)})",
        f"- {cost.calls} model calls, {cost.cache_hits} cache hits, {cost.errors} failed calls; "
        f"{cost.prompt_tokens} prompt and {cost.completion_tokens} completion tokens",
        *([f"- wall time {cost.seconds:.1f} s" + "".join(
            f"; {prose.code(model, 100)}: {used['calls']} calls, {used['prompt_tokens']} prompt "
            f"and {used['completion_tokens']} completion tokens, latency p50 {used['p50_s']:.1f}"
            f" s, p95 {used['p95_s']:.1f} s" for model, used in model_costs(cost).items())]
          if cost.seconds else []),
        "",
        "---",
        f"**Re-run:** {prose.code(rerun or f'gitsleep consolidate --skill {result.skill}', 200)}"
        " (or re-run the workflow); later epochs update this pull request in place.  ",
        "**Stop:** close this pull request and delete its branch to drop this proposal; remove "
        f"the skill {skill} from `.gitsleep.yml` to stop gitsleep for it.",
    ]

    tables = [(split, _task_rows(result, split, prose)) for split in ("test", "val")]

    def finish(out: list[str]) -> str:
        return "\n".join(redactor.redact(x) for x in "\n".join(out).split("\n")) + "\n"

    def render(sections: list[tuple[str, list[str]]], kept: dict[str, int]) -> str:
        out = [*head]
        for title, lines in sections:
            out += ["", f"### {title}", "", *lines]
        for split in ("val", "test"):
            rows = dict(tables)[split]
            if not rows:
                continue
            out += ["", f"### Per-task changes: {SPLIT_NAMES[split]}", "", _TASK_HEADER,
                    *rows[: kept[split]]]
            if kept[split] < len(rows):
                out += ["", f"_{len(rows) - kept[split]} of {len(rows)} rows left out to keep "
                        "this body under the size limit; diagnostics.json has them all._"]
        return finish([*out, "", *tail])

    full = {split: len(rows) for split, rows in tables}
    body = render(optional, full)
    if len(body) <= limit:
        return body
    # Without any row it must fit: failing that, replace whole sections, last first.
    sections = list(optional)
    empty = {split: 0 for split in full}
    index = len(sections)
    while len(render(sections, empty)) > limit and index > 0:
        index -= 1
        sections[index] = (sections[index][0], [_LEFT_OUT])
    if len(render(sections, empty)) > limit:  # a tiny limit: scores, then what fits
        for short in ([*head, "", _REST_LEFT_OUT, "", *tail], [*head, "", _REST_LEFT_OUT]):
            body = finish(short)
            if len(body) <= limit:
                return body
        return md.clip(body, limit)
    # Then fill rows, held-out first, into the room left by everything else.
    room = limit - len(render(sections, empty))
    kept = dict(empty)
    for split, rows in tables:
        for row in rows:
            if len(row) + 1 > room:
                break
            room -= len(row) + 1
            kept[split] += 1
    body = render(sections, kept)
    while len(body) > limit and any(kept.values()):  # the note grew with a wider count
        split = next(s for s in ("val", "test") if kept[s])
        kept[split] -= 1
        body = render(sections, kept)
    return body
