"""The pull request of an accepted epoch: its title and its body, fitted to GitHub's limit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gitsleep.base.redact import Redactor
from gitsleep.core import markdown as md
from gitsleep.core.models import (
    EditOutcome,
    EpochResult,
    Split,
    SplitSummary,
    TaskDelta,
    TaskResult,
)
from gitsleep.core.outcome import PR_BODY_LIMIT
from gitsleep.core.scores import fmt_score
from gitsleep.report.common import (
    SPLIT_NAMES,
    agent_gate_how,
    agent_tradeoffs,
    block_diff,
    called_names,
    change,
    group_scores,
    integrity_counts,
    metric_note,
    model_costs,
    noise_cell,
    shown_calls,
    small_sample_note,
    split_passes,
    task_changes,
)
from gitsleep.report.triggers import headline, pr_lines

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
    if result.val.n == 0 and result.triggers is not None:  # the trigger pass alone
        return f"gitsleep({skill}): description, {headline(result.triggers)}"
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
    before, after = split_passes(result, split)
    final = after.by_id() if after is not None else {}
    prior = before.by_id() if before is not None else {}
    rows = []
    for delta in task_changes(result, split):
        why = _sample_reason(final.get(delta.task_id))
        then = called_names(prior.get(delta.task_id))
        now = called_names(final.get(delta.task_id))
        if then is not None or now is not None:  # what the agent called, before -> after
            why += f"; tools: {shown_calls(then)} -> {shown_calls(now)}"
        cells = [
            prose.text(delta.task_id, 120),
            fmt_score(delta.before),
            fmt_score(delta.after),
            delta.status,
            prose.text(why, 200),
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
            md.table(["split", "the tasks that want", "n", "baseline", "candidate",
                      "wrong values"],
                     [[names[r.split], prose.code(r.group, 120), str(r.n),
                       fmt_score(r.baseline), fmt_score(r.candidate),
                       f"{r.wrong_baseline} -> {r.wrong_candidate}"] for r in rows],
                     "llrrrr"),
            "", "_Wrong values: answers of the group's tasks that carry another group's "
                "value (a pin shows here even when those tasks' checks only look for their "
                "own); the gate refuses a change that adds them on val, and a change that "
                "adds them on held-out opens no pull request._"]


@dataclass(frozen=True)
class Section:
    """One `### title` section of the body that may be replaced by a note to fit the limit."""

    title: str
    lines: list[str]


@dataclass(frozen=True)
class _Page:
    """What every section builder reads: the epoch, the one road for untrusted text, and
    the caller's extras (a line under the diff, the re-run command, the held-out chart)."""

    result: EpochResult
    prose: _Prose
    diff_hint: str = ""
    rerun: str = ""
    chart: str = ""


# -- the head: never cut ------------------------------------------------------------------


def _decision(page: _Page) -> list[str]:
    result, prose = page.result, page.prose
    return [f"## gitsleep: {prose.code(result.skill, 100)}", "",
            f"**Decision:** {prose.text(result.decision, 40)}. {prose.text(result.reason, 500)}"]


def _alerts(page: _Page) -> list[str]:
    """GitHub alerts: who decided, a simulator, a small sample, what the checks cannot see,
    answers scored as failing for integrity."""
    result, prose = page.result, page.prose
    lines: list[str] = []
    if result.decided_by == "val":
        lines += ["", "> [!NOTE]", "> No task is in the held-out `test` split, so the val split "
                  "decided whether to open this pull request. Val also chose the edits, so its "
                  "gain overstates how well they generalise: add held-out tasks for a fair check."]
    if result.backend == "offline":
        lines += ["", "> [!WARNING]", "> These scores come from gitsleep's offline simulator "
                  "(`backend: offline`), which follows directives literally. They say nothing "
                  "about how a real model would do."]
    if small_sample_note(result):
        lines += ["", "> [!CAUTION]", f"> {small_sample_note(result)}"]
    if result.warnings:
        lines += ["", "> [!WARNING]", "> What the checks cannot see:"]
        lines += [f"> - {prose.text(w, 400)}" for w in result.warnings]
    integrity = integrity_counts(result)
    if integrity:
        lines += ["", "> [!NOTE]", "> Scored as failing whatever the checks said, because the "
                  "answer repeated a placeholder of the learned template or a slot of a learned "
                  "rule, or left a section the template requires empty: "
                  + ", ".join(f"{prose.text(k, 80)}: {v}" for k, v in integrity.items())]
    return lines


def _scores(page: _Page) -> list[str]:
    result = page.result
    lines = [
        "",
        f"### Scores ({page.prose.code(result.metric, 40)} metric, 0 to 1)",
        "",
        md.table(
            ["split", "baseline", "candidate", "n",
             "change: 95% interval (paired bootstrap)", "beyond noise?"],
            [
                [name, fmt_score(s.baseline), fmt_score(s.candidate), str(s.n), _interval(s),
                 noise_cell(test, result.noise)]
                for name, s, test in (
                    ("val", result.val, result.noise.val if result.noise else None),
                    ("held-out (test)", result.test, result.noise.test if result.noise else None))
            ],
            "lrrrll",
        ),
    ]
    if result.noise is not None:
        lines += ["", f"_Noise: {page.prose.text(result.noise.summary(), 300)}"
                  + (f"; {page.prose.text(result.noise.note, 300)}" if result.noise.note else "")
                  + "._"]
    if metric_note(result.metric):
        lines += ["", f"_{metric_note(result.metric)}._"]
    return lines


def _agents(page: _Page) -> list[str]:
    """Several agents: each one's scores, the rule that made the aggregate above, and a
    warning naming both sides when the change helps one agent by hurting another."""
    result, prose = page.result, page.prose
    if not result.agents:
        return []
    lines = ["", "### Scores per agent", "", md.table(
        ["agent", "model", "val", "held-out (test)", "n (val / held-out)"],
        [[prose.code(a.name, 40), prose.code(a.model, 100), change(a.val), change(a.test),
          f"{a.val.n} / {a.test.n}"] for a in result.agents], "llrrr"),
        "", f"_The val and held-out scores above aggregate these by "
        f"{prose.code(f'gate.agents: {result.agent_gate}', 40)}: "
        f"{prose.text(agent_gate_how(result), 80)}._"]
    tradeoffs = agent_tradeoffs(result)
    if tradeoffs:
        lines += ["", "> [!WARNING]", "> The change helps one agent and hurts another:"]
        lines += [f"> - it {prose.text(text, 500)}" for text in tradeoffs]
    return lines


def _groups(page: _Page) -> list[str]:
    return _group_section(page.result, page.prose)


def _chart(page: _Page) -> list[str]:
    # held-out per epoch, from `held_out_chart`: our own text, never a task's
    return ["", "### Held-out per epoch", "", page.chart] if page.chart else []


HEAD: tuple[Callable[[_Page], list[str]], ...] = (_decision, _alerts, _scores, _agents, _groups,
                                                  _chart)


# -- optional sections, least important last: dropped from the end to fit ----------------


def _diagnosis(page: _Page) -> list[Section]:
    prose = page.prose
    if not page.result.diagnosis:
        return []
    return [Section("Why no candidate beat the baseline", [
        f"- {prose.code(str(v['check']), 120)}: {prose.text(str(v['detail']), 300)}"
        for v in page.result.diagnosis])]


def _diff(page: _Page) -> list[Section]:
    prose, redactor = page.prose, page.prose.redactor
    lines: list[str] = []
    for target, (before, after) in page.result.documents.items():
        if before == after:
            continue
        text = redactor.redact(block_diff(redactor.redact(before), redactor.redact(after), target))
        if not text.strip():  # only the description changed: its section shows it
            continue
        lines += [*([""] if lines else []), f"**{prose.text(target, 20)} document**",
                  "", md.fence(md.clip(text, 20000), "diff")]
    if page.diff_hint:
        lines += [*([""] if lines else []), prose.text(page.diff_hint, 500)]
    return [Section("Learned block diff", lines)] if lines else []


def _answers(page: _Page) -> list[Section]:
    lines: list[str] = []
    for delta, old, new in answer_pairs(page.result, page.prose.redactor):
        lines += [*([""] if lines else []),
                  f"**{page.prose.text(delta.task_id, 120)}**: {fmt_score(delta.before)} -> "
                  f"{fmt_score(delta.after)} ({delta.status})", "",
                  "Before:", "", md.fence(old, "text"), "", "After:", "", md.fence(new, "text")]
    return [Section("Held-out answers before and after", lines)] if lines else []


def _edits(page: _Page) -> list[Section]:
    result = page.result
    return [Section(f"{title} ({len(outcomes)})", _edit_items(outcomes, page.prose, label))
            for title, outcomes, label in (
                ("Applied edits", result.applied, "why"),
                ("Rejected by the gate", result.rejected, "gate"),
                ("Edits that changed nothing", result.unmatched, "reason"),
            ) if outcomes]


def _triggers(page: _Page) -> list[Section]:
    night = page.result.triggers
    if night is None:
        return []
    prose = page.prose
    return [Section("When the skill is picked", pr_lines(
        night, prose.text, prose.code, prose.redactor.redact))]


SECTIONS: tuple[Callable[[_Page], list[Section]], ...] = (_diagnosis, _triggers, _diff, _answers,
                                                          _edits)


# -- the tail: never cut -------------------------------------------------------------------


def _tail(page: _Page) -> list[str]:
    """Models and cost, then the footer: how to re-run gitsleep and how to stop it."""
    result, prose, cost = page.result, page.prose, page.result.cost
    rerun = page.rerun or f"gitsleep consolidate --skill {result.skill}"
    return [
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
        f"**Re-run:** {prose.code(rerun, 200)}"
        " (or re-run the workflow); later epochs update this pull request in place.  ",
        "**Stop:** close this pull request and delete its branch to drop this proposal; remove "
        f"the skill {prose.code(result.skill, 100)} from `.gitsleep.yml` to stop gitsleep for it.",
    ]


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

    At most `limit` characters (see `Body.fit`). `rerun` is the command to show (default
    `gitsleep consolidate --skill <skill>`); `diff_hint` is one plain-text line under the
    diff (e.g. where to see the full diff).
    """
    page = _Page(result, _Prose(redactor), diff_hint=diff_hint, rerun=rerun, chart=chart)
    body = Body(
        head=[line for build in HEAD for line in build(page)],
        sections=[section for build in SECTIONS for section in build(page)],
        tables=[(split, _task_rows(result, split, page.prose)) for split in ("test", "val")],
        tail=_tail(page),
        redactor=redactor,
    )
    return body.fit(limit)


# -- fitting the body to GitHub's limit: the one place that cuts ---------------------------


_TABLE_ORDER: tuple[Split, ...] = ("val", "test")  # the order the tables are shown in


@dataclass(frozen=True)
class Body:
    """A body's parts: the head and the tail are never cut; the per-task rows go first,
    then optional sections, last first, are replaced by a note."""

    head: list[str]
    sections: list[Section]
    tables: list[tuple[Split, list[str]]]  # held-out first: it gets the room first
    tail: list[str]
    redactor: Redactor

    def finish(self, out: list[str]) -> str:
        """The last redaction, line by line, over everything we wrote around the text."""
        return "\n".join(self.redactor.redact(x) for x in "\n".join(out).split("\n")) + "\n"

    def render(self, sections: list[Section], kept: dict[Split, int]) -> str:
        out = [*self.head]
        for section in sections:
            out += ["", f"### {section.title}", "", *section.lines]
        rows_of = dict(self.tables)
        for split in _TABLE_ORDER:
            rows = rows_of[split]
            if not rows:
                continue
            out += ["", f"### Per-task changes: {SPLIT_NAMES[split]}", "", _TASK_HEADER,
                    *rows[: kept[split]]]
            if kept[split] < len(rows):
                out += ["", f"_{len(rows) - kept[split]} of {len(rows)} rows left out to keep "
                        "this body under the size limit; diagnostics.json has them all._"]
        return self.finish([*out, "", *self.tail])

    def fit(self, limit: int) -> str:
        """The whole body if it fits in `limit` characters. Else, without any per-task row,
        whole sections are replaced by a note, last first, until it fits; then rows fill
        the room left, held-out first. A tiny limit keeps the scores and what fits."""
        full = {split: len(rows) for split, rows in self.tables}
        body = self.render(self.sections, full)
        if len(body) <= limit:
            return body
        sections = list(self.sections)
        empty = {split: 0 for split in full}
        index = len(sections)
        while len(self.render(sections, empty)) > limit and index > 0:
            index -= 1
            sections[index] = Section(sections[index].title, [_LEFT_OUT])
        if len(self.render(sections, empty)) > limit:
            return self.fit_scores_only(limit)
        kept = self.rows_in(limit - len(self.render(sections, empty)))
        body = self.render(sections, kept)
        while len(body) > limit and any(kept.values()):  # the note grew with a wider count
            split = next(s for s in _TABLE_ORDER if kept[s])
            kept[split] -= 1
            body = self.render(sections, kept)
        return body

    def rows_in(self, room: int) -> dict[Split, int]:
        """How many rows of each table fit in `room` characters, held-out first."""
        kept: dict[Split, int] = {split: 0 for split, _ in self.tables}
        for split, rows in self.tables:
            for row in rows:
                if len(row) + 1 > room:
                    break
                room -= len(row) + 1
                kept[split] += 1
        return kept

    def fit_scores_only(self, limit: int) -> str:
        body = ""
        for short in ([*self.head, "", _REST_LEFT_OUT, "", *self.tail],
                      [*self.head, "", _REST_LEFT_OUT]):
            body = self.finish(short)
            if len(body) <= limit:
                return body
        return md.clip(body, limit)
