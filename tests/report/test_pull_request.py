"""The PR body's parts: section builders in a fixed order, and the one place that fits the
body to GitHub's limit (`Body.fit`)."""

from __future__ import annotations

from dataclasses import replace

from gitsleep.base.redact import Redactor
from gitsleep.report import pull_request as pr
from gitsleep.report.pull_request import Body, Section
from tests.report.test_report import make_result


def page_of(**changes: object) -> pr._Page:
    result = replace(make_result(), **changes)
    return pr._Page(result, pr._Prose(Redactor()), diff_hint="full diff: see the branch")


def test_optional_sections_come_least_important_last() -> None:
    page = page_of(diagnosis=[{"check": "contains 'Confidence:'", "detail": "3 of 3 failed"}])
    titles = [s.title for build in pr.SECTIONS for s in build(page)]
    assert titles == ["Why no candidate beat the baseline", "Learned block diff",
                      "Held-out answers before and after", "Applied edits (1)",
                      "Rejected by the gate (1)", "Edits that changed nothing (1)"]


def test_a_builder_with_nothing_to_say_gives_no_section() -> None:
    page = page_of(applied=[], rejected=[], unmatched=[], diagnosis=[])
    assert pr._edits(page) == [] and pr._diagnosis(page) == []
    assert pr._chart(page) == []  # no chart asked for: no heading either


def test_the_head_keeps_the_decision_then_the_scores() -> None:
    head = [line for build in pr.HEAD for line in build(page_of())]
    assert head[0].startswith("## gitsleep: ")
    assert head.index("**Decision:** accepted. 1 edit(s) accepted: val 0.000 -> 1.000, "
                      "held-out 0.000 -> 1.000") < next(
        i for i, line in enumerate(head) if line.startswith("### Scores"))


def body(sections: int = 3, rows: int = 10) -> Body:
    return Body(head=["## head"], tail=["## tail"], redactor=Redactor(),
                sections=[Section(f"s{i}", [f"line {i} " + "x" * 200]) for i in range(sections)],
                tables=[("test", [f"| t{i} | 0 | 1 |" for i in range(rows)]),
                        ("val", [f"| v{i} | 0 | 1 |" for i in range(rows)])])


def test_a_body_that_fits_is_rendered_whole() -> None:
    whole = body().fit(100_000)
    assert "line 2 " in whole and "| v9 | 0 | 1 |" in whole and "left out" not in whole
    assert whole.startswith("## head\n") and whole.endswith("## tail\n")


def test_rows_go_first_then_the_last_section_is_replaced_by_a_note() -> None:
    parts = body()
    without_rows = parts.render(parts.sections, {"test": 0, "val": 0})
    text = parts.fit(len(without_rows) + 3 * 15)  # room for a few rows only
    assert "line 2 " in text  # every section stays while rows can go
    assert "| t0 | 0 | 1 |" in text and "| v9 | 0 | 1 |" not in text  # held-out first
    assert len(text) <= len(without_rows) + 3 * 15
    smaller = parts.fit(len(without_rows) - 150)
    assert "line 2 " not in smaller and "line 0 " in smaller
    assert "### s2\n\n" + pr._LEFT_OUT in smaller


def test_rows_fill_the_room_held_out_first() -> None:
    parts = body(rows=3)
    assert parts.rows_in(3 * 16) == {"test": 3, "val": 0}
    assert parts.rows_in(5 * 16) == {"test": 3, "val": 2}


def test_a_tiny_limit_keeps_the_head_and_says_the_rest_is_left_out() -> None:
    text = body().fit(130)
    assert text == f"## head\n\n{pr._REST_LEFT_OUT}\n\n## tail\n"
    assert body().fit(112) == f"## head\n\n{pr._REST_LEFT_OUT}\n"  # no room for the tail
    clipped = body().fit(20)
    assert len(clipped) <= 20 and clipped.startswith("## head")
