"""What an epoch says to people: commit message, diagnostics.json, PR body, summaries.

Everything here renders from an `EpochResult` (plus a few git facts the caller passes
in); no number is recomputed. Every string that came from a task file or a model is
untrusted: it is redacted first, then made harmless for where it goes (one line in a
commit body, escaped in Markdown), so it can neither leak a secret, forge a trailer,
nor break the pull-request page.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitsleep.core import documents as docs
from gitsleep.core import gate, groups, judges
from gitsleep.core import markdown as md
from gitsleep.core.models import (
    Cost,
    EditOutcome,
    EpochResult,
    PassResult,
    Split,
    SplitSummary,
    TaskDelta,
    TaskResult,
    to_dict,
)
from gitsleep.core.scores import fmt_change, fmt_score
from gitsleep.errors import EXIT_GIT, GitsleepError, UsageError
from gitsleep.git_forge.record import trailer_values, with_proof
from gitsleep.outcome import (
    PR_BODY_LIMIT,
    CostSummary,
    Edits,
    PrResult,
    Scores,
    SkillSummary,
    opens_pr,
)
from gitsleep.redact import Redactor

DIAGNOSTICS_SCHEMA = "gitsleep.diagnostics"
DIAGNOSTICS_VERSION = 1
RESPONSE_HEAD_CHARS = 500
_HEAD_WINDOW = 8192  # redacted beyond the head, so a secret across the cut is still whole
SPLIT_NAMES = {"train": "train", "val": "val", "test": "held-out"}
COMMIT_TASK_LINES = 50  # per split: the rest is in diagnostics.json
_STATUS_ORDER = {"regressed": 0, "improved": 1, "missing": 2, "unchanged": 3}


class ReportWriteError(GitsleepError):
    """diagnostics.json could not be written (disk full, read-only, no permission): exit 4,
    like other failures that keep the local work."""

    exit_code = EXIT_GIT


# -- small shared pieces ---------------------------------------------------------------


def plural(count: int, noun: str) -> str:
    """`1 task`, `2 tasks`: the count with its noun in the right number."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


SMALL_SPLIT = 5  # below this many val or held-out tasks, one task swings the mean a lot
METRIC_NOTES = {
    "hard": "`hard`: 1 when an answer passes every check, else 0",
    "soft": "`soft`: the share of an answer's checks that pass",
    "mixed": "`mixed`: a weighted mean of hard (1 when every check passes) and soft "
             "(the share of checks that pass), weighted by `gate.mixed_weight`",
}


def metric_note(metric: str) -> str:
    """One sentence that says what the metric's number means (empty for an unknown one)."""
    return METRIC_NOTES.get(metric, "")


def small_splits(val_n: int, test_n: int) -> list[str]:
    """The splits whose decision rests on fewer than SMALL_SPLIT tasks, e.g. `val (1 task)`."""
    return [f"{name} ({plural(n, 'task')})"
            for name, n in (("val", val_n), ("held-out", test_n)) if 0 < n < SMALL_SPLIT]


def small_sample_note(result: EpochResult) -> str:
    """A plain warning when the decision rests on few tasks; empty otherwise."""
    small = small_splits(result.val.n, result.test.n)
    if not small:
        return ""
    return (f"Small sample: {' and '.join(small)}; with fewer than {SMALL_SPLIT} tasks one "
            "task moves the score a lot, so treat this decision as a hint and add tasks.")


def _change(summary: SplitSummary) -> str:
    return fmt_change(summary.baseline, summary.candidate)


def _default_redactor(redactor: Redactor | None) -> Redactor:
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


# -- commit message --------------------------------------------------------------------


def commit_subject(result: EpochResult) -> str:
    """`gitsleep(<skill>): val <b> -> <c>, held-out <b> -> <c>` on one line."""
    skill = md.one_line(result.skill)
    return f"gitsleep({skill}): val {_change(result.val)}, held-out {_change(result.test)}"


def commit_message(
    result: EpochResult, trailers: Mapping[str, str], redactor: Redactor
) -> str:
    """Subject, body (edits, gate reasons, per-task changes) and the Gitsleep-* trailers.

    Every body line we do not write ourselves is indented and folded to one line, so
    untrusted text can neither start a `Key: value` trailer line, a `#` comment that git
    strips, nor a `---` line that ends the message for `git interpret-trailers`.
    """

    def line(text: str, limit: int = 300) -> str:
        return md.clip(" ".join(md.one_line(redactor.redact(text)).split()), limit)

    body: list[str] = [f"Decision: {line(result.decision, 40)} (metric {line(result.metric, 40)})"]
    reason = line(result.reason, 500)
    if reason:
        body.append(f"  {reason}")
    if simulated(result.backend):
        body.append(f"Simulated: gitsleep's offline simulator took part (backend "
                    f"{line(result.backend, 60)}), not only real models.")
    if small_sample_note(result):
        body.append(small_sample_note(result))
    sections = (
        ("Applied edits", result.applied, "why"),
        ("Rejected by the gate", result.rejected, "gate"),
        ("Unmatched edits", result.unmatched, "reason"),
    )
    for title, outcomes, label in sections:
        if not outcomes:
            continue
        body.append(f"{title} ({len(outcomes)}):")
        for outcome in outcomes:
            edit = outcome.edit
            body.append(f"  - [{line(edit.target, 20)}] {line(edit.summary())}")
            why = line(edit.rationale if label == "why" else outcome.reason)
            if why:
                body.append(f"    {label}: {why}")
    if result.warnings:
        body.append(f"Review notes ({len(result.warnings)}), what the checks cannot see:")
        body += [f"  - {line(w, 400)}" for w in result.warnings]
    integrity = integrity_counts(result)
    if integrity:
        body.append("Integrity: answers that repeated a template placeholder or rule slot "
                    "or left a required section empty, scored as failing: "
                    + ", ".join(f"{line(k, 80)} {v}" for k, v in integrity.items()))
    if result.diagnosis:
        body.append("Every candidate tied; per failing check:")
        body += [f"  - {line(str(v['check']), 120)}: {line(str(v['detail']))}"
                 for v in result.diagnosis]
    for split in ("val", "test"):
        changes = task_changes(result, split)
        moved = [d for d in changes if d.status != "unchanged"]
        if not changes:
            continue
        body.append(f"Per-task changes on {SPLIT_NAMES[split]} "
                    f"({len(moved)} changed, {len(changes) - len(moved)} unchanged):")
        for delta in moved[:COMMIT_TASK_LINES]:
            body.append(f"  {line(delta.task_id, 120)}: "
                        f"{fmt_score(delta.before)} -> {fmt_score(delta.after)}")
        if len(moved) > COMMIT_TASK_LINES:
            body.append(f"  ... {len(moved) - COMMIT_TASK_LINES} more in diagnostics.json")
    # A last pass, line by line so no match can span lines, over what we wrote around the
    # untrusted text; trailer keys stay exactly as they are.
    head = [redactor.redact(text) for text in [commit_subject(result), "", *body]]
    # The trailer block: its own last paragraph, one `Key: value` per line.
    block = [f"{k}: {line(v, 200)}" for k, v in trailer_values(result, trailers).items()]
    return "\n".join([*head, "", *block]) + "\n"


# -- diagnostics.json ------------------------------------------------------------------


def response_head(text: str, redactor: Redactor) -> str:
    """The first 500 characters, redacted before the cut so a cut never splits a secret.

    Only a window is redacted (answers can be long). If redaction shrank the window so
    much that its cut edge comes near the head, the whole answer is redacted instead.
    """
    window = text[: RESPONSE_HEAD_CHARS + _HEAD_WINDOW]
    clean = redactor.redact(window)
    if len(window) < len(text) and len(clean) < RESPONSE_HEAD_CHARS + _HEAD_WINDOW // 2:
        clean = redactor.redact(text)
    return clean[:RESPONSE_HEAD_CHARS]


def _task_dict(task: TaskResult, redactor: Redactor) -> dict[str, Any]:
    samples = []
    for s in task.samples:
        samples.append({
            "sample": s.sample,
            "error": s.error,
            "response_head": response_head(s.answer, redactor) if s.answer is not None else None,
            "response_chars": len(s.answer) if s.answer is not None else 0,
            "hard": s.score.hard if s.score else None,
            "soft": s.score.soft if s.score else None,
            "reason": s.score.reason if s.score else None,
            "failed_checks": [c.label() for c in s.score.failed] if s.score else [],
            "finish_reason": s.finish_reason,
        })
    return {
        "task_id": task.task_id,
        "hard": task.hard,
        "soft": task.soft,
        "value": task.value,
        "errors": task.errors,
        "samples": samples,
    }


def diagnostics(
    result: EpochResult, extra: Mapping[str, object], *, redactor: Redactor | None = None
) -> dict[str, Any]:
    """The full, redacted record of an epoch, ready for `json.dumps`.

    Response heads are redacted before they are cut to 500 characters, so a cut can
    never leave half a secret that no longer matches. `redactor` defaults to one built
    from this process's environment.
    """
    redactor = _default_redactor(redactor)
    data: dict[str, Any] = {
        "schema": DIAGNOSTICS_SCHEMA,
        "schema_version": DIAGNOSTICS_VERSION,
        "skill": result.skill,
        "decision": result.decision,
        "reason": result.reason,
        "diagnosis": list(result.diagnosis),
        "warnings": list(result.warnings),
        "integrity_failures": integrity_counts(result),
        "group_scores": group_scores(result),
        "abort_code": result.abort_code,
        "metric": result.metric,
        "decided_by": result.decided_by,
        "pr_eligible": result.pr_eligible,
        "backend": result.backend,
        "simulated": simulated(result.backend),
        "models": {
            "agent": result.agent_model,
            "optimizer": result.optimizer_model,
            "judge": result.judge_model,
        },
        "splits": {name: to_dict(getattr(result, name)) for name in ("train", "val", "test")},
        "documents": {
            target: {
                "changed": before != after,
                "learned_block_diff": block_diff(
                    redactor.redact(before), redactor.redact(after), target
                ),
            }
            for target, (before, after) in result.documents.items()
        },
        "edits": Edits.of(result).to_json(),
        "passes": [
            {
                "label": p.label,
                "split": p.split,
                "version": p.version,
                "mean": p.mean,
                "errors": p.errors,
                # answers cut at max_answer_tokens (scored as they are)
                "truncated": sum(1 for t in p.tasks for s in t.samples
                                 if s.finish_reason == "length"),
                # answers that only echoed the learned template, scored as failing
                "integrity_failures": judges.integrity_failures(
                    s for t in p.tasks for s in t.samples),
                "tasks": [_task_dict(t, redactor) for t in p.tasks],
            }
            for p in result.passes
        ],
        "proposals": [to_dict(p) for p in result.proposals],
        "trials": [to_dict(t) for t in result.trials],
        "call_errors": list(result.errors),
        "cost": to_dict(result.cost),
        "extra": to_dict(dict(extra)),
    }
    redacted: dict[str, Any] = redactor.redact_obj(to_dict(data))
    return redacted


def dumps_diagnostics(data: Mapping[str, Any]) -> str:
    """The exact text of diagnostics.json (also used for the git note)."""
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


@dataclass(frozen=True)
class Diagnostics:
    """An epoch's diagnostics.json, written once: the file at `path`, and the commit's note,
    the same text plus the commit and branch it proves (`record.with_proof`)."""

    path: Path
    data: Mapping[str, Any]

    def note_text(self, sha: str, branch: str) -> str:
        return dumps_diagnostics(with_proof(self.data, sha, branch))

    @classmethod
    def write(cls, path: Path, result: EpochResult, extra: Mapping[str, object],
              redactor: Redactor) -> Diagnostics:
        """Render the epoch's diagnostics once and write them to `path` (atomically)."""
        data = diagnostics(result, extra, redactor=redactor)
        write_diagnostics(path, data)
        return cls(path, data)


def write_diagnostics(path: Path, data: Mapping[str, Any]) -> None:
    """Write diagnostics.json atomically: readers see the old file or the new, never half.

    Any OSError (disk full, read-only directory) becomes a one-line ReportWriteError.
    """
    path = Path(path)
    text = dumps_diagnostics(data)
    tmp_name: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise ReportWriteError(f"cannot write diagnostics to {path}: {why}") from exc
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


# -- pull request ----------------------------------------------------------------------


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



def model_costs(cost: Cost) -> dict[str, dict[str, float]]:
    """Per model: calls, tokens, seconds in its calls and the p50/p95 latency of one."""
    return {model: {**used, **{k: cost.latency.get(model, {}).get(k, 0.0)
                               for k in ("seconds", "p50_s", "p95_s")}}
            for model, used in sorted(cost.by_model.items())}


def pr_title(result: EpochResult) -> str:
    """`gitsleep(<skill>): held-out <b> -> <c>` (val when it decided)."""
    skill = " ".join(md.one_line(result.skill).split())
    if result.decided_by == "val":
        return f"gitsleep({skill}): val {_change(result.val)}"
    return f"gitsleep({skill}): held-out {_change(result.test)}"


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


def group_scores(result: EpochResult) -> list[dict[str, Any]]:
    """Per split (val, test) and per group of a varying key: n and the mean before and
    after, over the tasks scored under both documents (issue 38)."""
    rows = []
    for split in ("val", "test"):
        baseline, final = split_passes(result, split)
        if baseline is None or final is None:
            continue
        values = {tid: (b, a) for tid, b, a in gate.paired(baseline, final)}
        for name, n, before, after in groups.group_means(result.groups, values):
            rows.append({"split": split, "group": name, "n": n, "baseline": before,
                         "candidate": after})
    return rows


def _group_section(result: EpochResult, prose: _Prose) -> list[str]:
    """The score per group, so a reviewer sees that a rule lifts every group."""
    rows = group_scores(result)
    if not rows:
        return []
    names = {"val": "val", "test": "held-out (test)"}
    return ["", "### Scores per group (tasks whose checks want different values)", "",
            md.table(["split", "the tasks that want", "n", "baseline", "candidate"],
                     [[names[r["split"]], prose.code(r["group"], 120), str(r["n"]),
                       fmt_score(r["baseline"]), fmt_score(r["candidate"])] for r in rows],
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


# -- terminal and --json ---------------------------------------------------------------


def summary_line(result: EpochResult, *, redactor: Redactor | None = None) -> str:
    """One line for the terminal: skill, decision, scores, edit counts, reason."""
    redactor = _default_redactor(redactor)
    parts = [
        f"{result.skill}: {result.decision}",
        f"val {_change(result.val)}, held-out {_change(result.test)}",
        f"{len(result.applied)} applied, {len(result.rejected)} rejected, "
        f"{len(result.unmatched)} unmatched edit(s)",
    ]
    if result.backend == "offline":
        parts.append("offline simulator")
    text = " | ".join(parts) + (f" — {result.reason}" if result.reason else "")
    return " ".join(md.one_line(redactor.redact(text)).split())


def no_pr_reason(result: EpochResult, pr: PrResult) -> str:
    """Why no pull request was opened or updated, in a few words."""
    if result.decision != "accepted":
        return f"the epoch was {result.decision.replace('_', ' ')}: nothing to review"
    if pr.reason:
        return pr.reason
    if not opens_pr(result):
        split = "val" if result.decided_by == "val" else "held-out"
        return f"{split} did not improve"
    return "not requested"


def simulated(backend: str) -> bool:
    """Did the offline simulator answer, propose or judge (`offline`, `command+offline`)?"""
    return "offline" in backend.split("+")


def json_summary(
    result: EpochResult,
    *,
    branch: str | None,
    commit: str | None,
    pr: PrResult,
    diagnostics_path: str | Path | None,
    redactor: Redactor | None = None,
) -> SkillSummary:
    """The `consolidate --json` record of the interface contract, redacted."""
    cost = result.cost
    summary = SkillSummary(
        skill=result.skill, decision=result.decision, reason=result.reason,
        metric=result.metric, val=Scores.of(result.val), test=Scores.of(result.test),
        edits=Edits.of(result), branch=branch, commit=commit,
        pr=replace(pr, reason=no_pr_reason(result, pr)) if pr.operation == "none" else pr,
        cost=CostSummary(cost.calls, cost.cache_hits, cost.prompt_tokens,
                         cost.completion_tokens, cost.seconds, model_costs(cost)),
        diagnostics=str(diagnostics_path) if diagnostics_path is not None else None,
        simulated=simulated(result.backend),
    )
    return summary.redacted(_default_redactor(redactor))
