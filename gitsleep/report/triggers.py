"""The trigger pass in what a person reads: the commit body, the pull request's table of
query, expected skill, picked before and picked after, and the `--json` record."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from gitsleep.core import markdown as md
from gitsleep.core.models import to_dict
from gitsleep.core.outcome import PickRow, Scores, TriggerSummary
from gitsleep.core.scores import fmt_change
from gitsleep.core.triggers import TriggerNight, noise_summary

PR_ROWS = 50  # held-out queries shown; the rest are in diagnostics.json


def headline(night: TriggerNight) -> str:
    """`trigger held-out 0.400 -> 1.000` (val when no held-out trigger task decided)."""
    if night.decided_by == "test":
        return f"trigger held-out {fmt_change(night.test.baseline, night.test.final)}"
    return f"trigger val {fmt_change(night.val.baseline, night.val.final)}"


def commit_lines(night: TriggerNight, line: Callable[[str], str]) -> list[str]:
    """The commit body's lines (`line` folds and redacts untrusted text)."""
    out = [f"Description ({night.decision}): trigger val "
           f"{fmt_change(night.val.baseline, night.val.final)}, held-out "
           f"{fmt_change(night.test.baseline, night.test.final)}",
           f"  {line(night.reason)}"]
    if night.noise is not None:
        out.append(f"  {noise_line(night)}")
    if night.description_after != night.description_before:
        out += [f"  before: {line(night.description_before)}",
                f"  after: {line(night.description_after)}"]
    return out


def pr_lines(night: TriggerNight, text: Callable[[str, int], str],
             code: Callable[[str, int], str], redact: Callable[[str], str]) -> list[str]:
    """The pull request's section: the scores, the description before and after, and per
    held-out query (val without held-out) the expected skill and the picks."""
    where = "held-out" if night.decided_by == "test" else "val"
    out = [f"**{text(night.decision, 20)}**: {text(night.reason, 600)}", "",
           "| trigger accuracy | baseline | candidate | n |", "| :--- | ---: | ---: | ---: |",
           f"| val | {fmt_change(night.val.baseline, night.val.final).replace(' -> ', ' | ')} "
           f"| {night.val.n} |"]
    if night.decided_by == "test":
        out.append(f"| held-out (test) | "
                   f"{fmt_change(night.test.baseline, night.test.final).replace(' -> ', ' | ')}"
                   f" | {night.test.n} |")
    if night.noise is not None:
        out += ["", f"_{text(noise_line(night), 900)}_"]
    if night.description_after != night.description_before:
        out += ["", "Description before:", "", md.fence(redact(night.description_before), "text"),
                "", "Description after:", "", md.fence(redact(night.description_after), "text")]
    if night.siblings_fell:
        out += ["", f"Siblings that fell: {text(night.siblings_fell, 600)}"]
    if night.rows:
        out += ["", f"Which skill each {where} query picked:", "",
                *picks_table(night.rows[:PR_ROWS], text, code)]
        if len(night.rows) > PR_ROWS:
            out.append(f"... {len(night.rows) - PR_ROWS} more in diagnostics.json")
    return out


def picks_table(rows: Sequence[PickRow], text: Callable[[str, int], str],
                code: Callable[[str, int], str]) -> list[str]:
    """Query, expected skill, picked before, picked after: one row a query. `text` and
    `code` redact, clip and escape what the rows quote."""
    return ["| query | expected skill | picked before | picked after |",
            "| :--- | :--- | :--- | :--- |",
            *(f"| {text(r.query, 200)} | {code(r.expected, 80)} | {code(r.before, 80)} | "
              f"{code(r.after, 80)} |" for r in rows)]


def summary(night: TriggerNight) -> TriggerSummary:
    """The `--json` and diagnostics record of the pass."""
    return TriggerSummary(
        decision=night.decision, reason=night.reason, pr_eligible=night.pr_eligible,
        val=Scores(night.val.baseline, night.val.final, night.val.n),
        test=Scores(night.test.baseline, night.test.final, night.test.n),
        description_before=night.description_before,
        description_after=night.description_after, siblings_fell=night.siblings_fell,
        picks=tuple(PickRow(r.query, r.expected, r.before, r.after) for r in night.rows),
        noise=({**to_dict(night.noise), "noisy": night.noise.noisy,
                "summary": noise_summary(night.noise)} if night.noise is not None else None))


def noise_line(night: TriggerNight) -> str:
    """`Noise: 6 of 20 val queries' picks moved under a placebo ...; val +0.400 ...: sign
    test p=0.0107 <= 0.1, beyond noise` ('' when the pass measured none)."""
    if night.noise is None:
        return ""
    tests = [t.line() for t in (night.noise.val, night.noise.test) if t is not None]
    return "Noise: " + "; ".join([noise_summary(night.noise), *tests]
                                 + ([night.noise.note] if night.noise.note else []))
