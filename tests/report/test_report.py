from __future__ import annotations

import errno
import json
import os
import re
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gitsleep import report
from gitsleep.base.errors import GitsleepError
from gitsleep.base.redact import Redactor, secrets_from_env
from gitsleep.core import documents as d
from gitsleep.core import markdown as md
from gitsleep.core.markdown import ZWSP
from gitsleep.core.models import (
    Check,
    Cost,
    Edit,
    EditOutcome,
    EpochResult,
    GateTrial,
    PassResult,
    Proposal,
    SampleResult,
    Score,
    SplitSummary,
    TaskDelta,
    TaskResult,
)
from gitsleep.core.outcome import PrResult
from gitsleep.git_forge import record
from gitsleep.report import diagnostics_json

SHA = "0123456789abcdef0123456789abcdef01234567"
TRAILERS = {
    "Gitsleep-Base": SHA,
    "Gitsleep-Tasks": "sha256:" + "a" * 64,
    "Gitsleep-Model": "gpt-4.1-mini / gpt-4.1",
    "Gitsleep-Inputs": "sha256:" + "b" * 64,
}
SKILL_DOC = "---\nname: brief-writer\n---\n# Brief writer\n\nWrite plainly.\n"


# -- a hand-built epoch ----------------------------------------------------------------


def task(task_id: str, split: str, value: float | None, answer: str, reason: str) -> TaskResult:
    if value is None:
        sample = SampleResult(0, None, f"timeout {reason}", None)
    else:
        failed = () if value == 1.0 else (Check("contains", "Confidence:"),)
        sample = SampleResult(0, answer, None, Score(value, value, reason, failed))
    return TaskResult(task_id, split, [sample], value, value, value)


def make_result(
    text: str = "",
    *,
    n_val: int = 3,
    n_test: int = 2,
    backend: str = "openai",
    decision: str = "accepted",
    rationale: str = "three train tasks lacked a confidence line",
    task_prefix: str = "",
    rule: str = 'Always include "Confidence: medium"',
) -> EpochResult:
    """An accepted epoch as epoch.py builds it; `text` is planted in every string field."""

    def p(base: str) -> str:
        return f"{base}{text}"

    before = p(SKILL_DOC)
    after = before + f"\n{d.START}\n{d.HEADING}\n\n- {p(rule)}\n{d.END}\n"
    applied = Edit("add", p(rule), "", p(rationale), "skill")
    refused = Edit("add", p('Use the heading "## Sources"'), "", p("train wanted sources"),
                   "skill")
    lost = Edit("replace", p("Keep it short"), p("missing anchor"), p("tidy"), "skill")

    def passes(split: str, n: int, label: str, value: float | None) -> PassResult:
        answer = " Plain words." * 50
        tasks = [task(p(f"{task_prefix}{split}-{i}"), split, value,
                      p(f"Answer {i}: a brief.") + answer, p(f"missing 'Confidence:' {i}"))
                 for i in range(n)]
        return PassResult(label, split, p(f"v-{label}"), tasks)

    val_base = passes("val", n_val, "baseline", 0.0)
    val_trial = passes("val", n_val, "skill round 1 proposal 1", 1.0)
    val_trial.final = True  # the winning trial's pass, as epoch.py marks it
    test_base = passes("test", n_test, "baseline", 0.0)
    test_final = passes("test", n_test, "final", 1.0)
    if n_val:  # one task that got worse, one whose calls failed
        val_trial.tasks[0] = task(val_trial.tasks[0].task_id, "val", None, "", p("err"))
    trial = GateTrial(
        target="skill", round=1, proposal=0, baseline=0.0, candidate=1.0, accepted=True,
        reason=p("val 0.000 -> 1.000 on 3 task(s)"), applied=[applied],
        unmatched=[EditOutcome(lost, "unmatched", p("anchor not found"))],
        deltas=[TaskDelta(t.task_id, 0.0, 1.0) for t in val_trial.tasks], interval=(0.5, 1.0),
    )
    return EpochResult(
        skill=p("brief-writer"),
        decision=p(decision),
        reason=p("1 edit(s) accepted: val 0.000 -> 1.000, held-out 0.000 -> 1.000"),
        metric=p("mixed"),
        backend=p(backend),
        agent_model=p("gpt-4.1-mini"),
        optimizer_model=p("gpt-4.1"),
        judge_model=p("gpt-4.1"),
        train=SplitSummary(0.25, 0.75, 4),
        val=SplitSummary(0.25, 0.917, n_val, 0.333, 1.0),
        test=SplitSummary(0.0, 1.0, n_test, 0.5, 1.0) if n_test else SplitSummary(None, None, 0),
        documents={"skill": (before, after)},
        applied=[EditOutcome(applied, "applied")],
        rejected=[EditOutcome(refused, "rejected", p("val 0.917 -> 0.833: worse"))],
        unmatched=[EditOutcome(lost, "unmatched", p("anchor not found"))],
        passes=[val_base, *( [test_base] if n_test else []), val_trial,
                *([test_final] if n_test else [])],
        proposals=[Proposal("skill", 1, 0, p('{"edits": [{"op": "add"}]} raw reply'),
                            [applied], [EditOutcome(lost, "unmatched", p("dropped"))],
                            p("parse warning"), 1)],
        trials=[trial],
        errors=[p("call 7: timeout after 60s")],
        cost=Cost(calls=41, cache_hits=12, errors=1, prompt_tokens=9000, completion_tokens=700,
                  by_model={"qwen": {"calls": 40, "prompt_tokens": 9000,
                                     "completion_tokens": 700}},
                  seconds=95.0, latency={"qwen": {"seconds": 80.0, "p50_s": 1.2, "p95_s": 3.4}}),
        pr_eligible=True,
        decided_by="test" if n_test else "val",
    )


# -- helpers ---------------------------------------------------------------------------

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(*args: str, stdin: str) -> str:
    done = subprocess.run(["git", *args], input=stdin, capture_output=True, text=True,
                          check=True, env=GIT_ENV)
    return done.stdout


def parsed_trailers(message: str) -> list[tuple[str, str]]:
    """What `git interpret-trailers --parse` reads from a commit message."""
    out = git("interpret-trailers", "--parse", stdin=message)
    return [tuple(line.split(": ", 1)) for line in out.splitlines()]  # type: ignore[misc]


def expected_trailers(result: EpochResult) -> list[tuple[str, str]]:
    return list(record.trailer_values(result, TRAILERS).items())


def outside_code(body: str) -> str:
    """The body without fenced blocks and code spans; asserts every fence is closed."""
    kept, fence = [], None
    for line in body.split("\n"):
        if fence is None:
            opening = re.match(r"(`{3,})", line)
            if opening:
                fence = opening.group(1)
                continue
            kept.append(line)
        elif re.fullmatch(rf"{fence}`*\s*", line):
            fence = None
    assert fence is None, "a code fence was left open"
    return re.sub(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)", "", "\n".join(kept))


def unescaped_pipes(row: str) -> int:
    return len(re.findall(r"(?<!\\)\|", row))


def all_strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in (*all_strings(k), *all_strings(v))]
    if isinstance(data, (list, tuple)):
        return [s for v in data for s in all_strings(v)]
    return []


# -- commit message --------------------------------------------------------------------


def test_subject_has_both_splits_with_three_decimals_and_n_a_for_missing() -> None:
    assert report.commit_subject(make_result()) == (
        "gitsleep(brief-writer): val 0.250 -> 0.917, held-out 0.000 -> 1.000"
    )
    assert report.commit_subject(make_result(n_test=0)) == (
        "gitsleep(brief-writer): val 0.250 -> 0.917, held-out n/a -> n/a"
    )


def test_git_parses_exactly_the_nine_trailers_in_order() -> None:
    message = report.commit_message(make_result(), TRAILERS, Redactor())
    assert [key for key, _ in parsed_trailers(message)] == list(record.TRAILER_KEYS)
    assert parsed_trailers(message) == [
        ("Gitsleep-Skill", "brief-writer"),
        ("Gitsleep-Decision", "accepted"),
        ("Gitsleep-Metric", "mixed"),
        ("Gitsleep-Val", "0.250 -> 0.917"),
        ("Gitsleep-Test", "0.000 -> 1.000"),
        ("Gitsleep-Base", SHA),
        ("Gitsleep-Tasks", TRAILERS["Gitsleep-Tasks"]),
        ("Gitsleep-Model", "gpt-4.1-mini / gpt-4.1"),
        ("Gitsleep-Inputs", TRAILERS["Gitsleep-Inputs"]),
    ]
    assert message.splitlines()[0] == report.commit_subject(make_result())


def test_body_lists_edits_gate_reasons_and_per_task_changes() -> None:
    message = report.commit_message(make_result(backend="offline"), TRAILERS, Redactor())
    body = message.split("\n\n", 1)[1]
    assert 'Applied edits (1):\n  - [skill] add: Always include "Confidence: medium"\n' in body
    assert "    why: three train tasks lacked a confidence line" in body
    assert "Rejected by the gate (1):" in body and "    gate: val 0.917 -> 0.833: worse" in body
    assert "Unmatched edits (1):" in body and "replace: missing anchor -> Keep it short" in body
    assert "Per-task changes on val (3 changed, 0 unchanged):" in body
    assert "  val-0: 0.000 -> n/a" in body and "  val-1: 0.000 -> 1.000" in body
    assert "  test-1: 0.000 -> 1.000" in body
    assert "offline simulator" in body
    assert "simulator" not in report.commit_message(make_result(), TRAILERS, Redactor())
    # git would strip nothing from it: no comment lines, no trailing whitespace.
    assert git("stripspace", "--strip-comments", stdin=message) == message


def test_missing_or_multiline_trailer_values_stay_single_and_non_empty() -> None:
    result = make_result()
    trailers = {"Gitsleep-Base": "", "Gitsleep-Model": "a\nGitsleep-Decision: accepted"}
    message = report.commit_message(result, trailers, Redactor())
    parsed = dict(parsed_trailers(message))
    assert parsed["Gitsleep-Base"] == "unknown" and parsed["Gitsleep-Tasks"] == "unknown"
    assert parsed["Gitsleep-Model"] == "a Gitsleep-Decision: accepted"
    assert len(parsed_trailers(message)) == 9
    with pytest.raises(ValueError):
        record.trailer_values(result, {"Bad Key": "x"})


MALICIOUS = [
    "x\n\nGitsleep-Decision: accepted",
    "# comment that git would strip",
    "ok\n# comment\nGitsleep-Skill: other",
    "---\nGitsleep-Test: 0.000 -> 1.000",
    "--- a/file\n+++ b/file",
    "x\r\nSigned-off-by: Mallory <m@example.com>\r\n",
    "\n\nGitsleep-Val: 9.999 -> 9.999\n",
    "tail\u2028Gitsleep-Decision: accepted\x85Co-authored-by: x <y@z>",
]


@pytest.mark.parametrize("evil", MALICIOUS)
def test_untrusted_text_cannot_forge_or_hide_trailers(evil: str) -> None:
    result = make_result(rationale=evil, task_prefix=evil, decision="rejected")
    result.reason = evil
    result.rejected[0] = EditOutcome(result.rejected[0].edit, "rejected", evil)
    message = report.commit_message(result, TRAILERS, Redactor())
    assert parsed_trailers(message) == expected_trailers(result)
    assert dict(parsed_trailers(message))["Gitsleep-Decision"] == "rejected"
    body_lines = message.split("\n")[2:-11]
    assert all(not line.startswith(("#", "---", "Gitsleep-", "Signed-off-by")) for line in
               body_lines)


def test_a_real_commit_keeps_the_message_and_its_trailers(tmp_path: Path) -> None:
    result = make_result(rationale=MALICIOUS[0], task_prefix=MALICIOUS[2], decision="rejected")
    message = report.commit_message(result, TRAILERS, Redactor())
    env = {**GIT_ENV, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

    def run(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True,
                              text=True, check=True, env=env).stdout

    run("init", "-q")
    (tmp_path / "message.txt").write_text(message)
    run("commit", "-q", "--allow-empty", "--cleanup=strip", "-F", "message.txt")
    assert run("log", "-1", "--format=%B") == message + "\n"
    decision = run("log", "-1", "--format=%(trailers:key=Gitsleep-Decision,valueonly)")
    assert decision.strip() == "rejected"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evil=st.text(max_size=80))
def test_any_text_in_untrusted_fields_leaves_the_trailers_intact(evil: str) -> None:
    result = make_result(text=evil, rationale=evil)
    message = report.commit_message(result, TRAILERS, Redactor())
    assert parsed_trailers(message) == expected_trailers(result)
    assert git("stripspace", "--strip-comments", stdin=message) == message


# -- diagnostics -----------------------------------------------------------------------


def test_a_night_the_simulator_took_part_in_says_so_everywhere() -> None:
    """`backend: command` with `optimizer_backend: offline` was reported as a real night."""
    result = make_result(backend="command+offline")
    assert report.diagnostics(result, {}, redactor=Redactor())["simulated"] is True
    assert "Simulated: " in report.commit_message(result, TRAILERS, Redactor())
    assert report.json_summary(result, branch=None, commit=None, pr=PrResult(),
                               diagnostics_path=None).simulated is True
    real = make_result(backend="command+openai")
    assert report.diagnostics(real, {}, redactor=Redactor())["simulated"] is False
    assert "Simulated: " not in report.commit_message(real, TRAILERS, Redactor())


def test_diagnostics_hold_every_pass_proposal_trial_and_cost() -> None:
    extra = {"base_sha": SHA, "timings": {"epoch_s": 12.5}, "path": Path("/tmp/x")}
    data = report.diagnostics(make_result(backend="offline"), extra, redactor=Redactor())
    assert data["schema"] == "gitsleep.diagnostics" and data["schema_version"] == 1
    assert data["simulated"] is True and data["backend"] == "offline"
    assert data["models"] == {"agent": "gpt-4.1-mini", "optimizer": "gpt-4.1", "judge": "gpt-4.1"}
    assert [(p["split"], p["label"]) for p in data["passes"]] == [
        ("val", "baseline"), ("test", "baseline"), ("val", "skill round 1 proposal 1"),
        ("test", "final")]
    sample = data["passes"][0]["tasks"][0]["samples"][0]
    assert len(sample["response_head"]) == report.RESPONSE_HEAD_CHARS
    assert sample["response_chars"] > 600
    assert sample["reason"] == "missing 'Confidence:' 0"
    assert sample["failed_checks"] == ["contains 'Confidence:'"]
    failed = data["passes"][2]["tasks"][0]
    assert failed["value"] is None and failed["samples"][0]["error"].startswith("timeout")
    assert data["proposals"][0]["raw"].startswith('{"edits"')
    assert data["trials"][0]["deltas"][0]["status"] == "improved"
    assert data["trials"][0]["reason"].startswith("val 0.000 -> 1.000")
    assert data["call_errors"] == ["call 7: timeout after 60s"]
    assert data["cost"]["calls"] == 41 and data["cost"]["cache_hits"] == 12
    assert data["extra"]["base_sha"] == SHA
    assert "+- Always include" in data["documents"]["skill"]["learned_block_diff"]
    assert data["edits"]["rejected"][0]["reason"] == "val 0.917 -> 0.833: worse"
    json.loads(report.dumps_diagnostics(data))  # serialisable, Paths included


def test_response_heads_are_redacted_before_they_are_cut() -> None:
    secret = "topsecret-value-" + "z" * 24
    redactor = Redactor([secret])
    across = "x" * 490 + secret + " tail"
    assert report.response_head(across, redactor) == "x" * 490 + "[REDACTED]"
    key = "sk-" + "A1b2" * 10
    assert report.response_head("y" * 494 + " " + key, Redactor()) == "y" * 494 + " [REDA"
    # Many secrets early shrink the text: the head still never shows a partial secret.
    crowded = (secret + " ") * 400 + secret
    head = report.response_head(crowded, redactor)
    assert head.startswith("[REDACTED] [REDACTED]") and "topsecret" not in head
    assert len(head) == report.RESPONSE_HEAD_CHARS


def test_write_diagnostics_replaces_the_file_atomically(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "brief-writer-1" / "diagnostics.json"
    report.write_diagnostics(path, {"n": 1})
    report.write_diagnostics(path, {"n": 2})
    assert json.loads(path.read_text()) == {"n": 2}
    assert sorted(os.listdir(path.parent)) == ["diagnostics.json"]


def test_a_write_into_a_file_path_gives_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(report.ReportWriteError) as info:
        report.write_diagnostics(blocker / "diagnostics.json", {"n": 1})
    assert isinstance(info.value, GitsleepError) and info.value.exit_code == 4
    assert "\n" not in str(info.value) and str(blocker) in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_a_write_into_a_read_only_directory_gives_one_line_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(report.ReportWriteError) as info:
            report.write_diagnostics(tmp_path / "diagnostics.json", {"n": 1})
    finally:
        tmp_path.chmod(0o700)
    assert "\n" not in str(info.value)


def test_a_full_disk_keeps_the_old_file_and_leaves_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "diagnostics.json"
    report.write_diagnostics(path, {"n": 1})

    def full(fd: int) -> None:  # the kernel's answer when the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(diagnostics_json.os, "fsync", full)
    with pytest.raises(report.ReportWriteError, match="No space left on device"):
        report.write_diagnostics(path, {"n": 2})
    assert json.loads(path.read_text()) == {"n": 1}
    assert os.listdir(tmp_path) == ["diagnostics.json"]


# -- pull request ----------------------------------------------------------------------


def test_pr_title_names_the_deciding_split() -> None:
    assert report.pr_title(make_result()) == "gitsleep(brief-writer): held-out 0.000 -> 1.000"
    assert report.pr_title(make_result(n_test=0)) == "gitsleep(brief-writer): val 0.250 -> 0.917"


def test_pr_body_has_scores_diff_edits_tables_cost_and_footer() -> None:
    body = report.pr_body(make_result(), rerun="", redactor=Redactor(),
                          diff_hint="Full diff: git diff main...gitsleep/brief-writer")
    assert "| val | 0.250 | 0.917 | 3 | +0.333 to +1.000 |" in body
    assert "| held-out (test) | 0.000 | 1.000 | 2 | +0.500 to +1.000 |" in body
    assert "```diff\n--- skill (before)\n+++ skill (after)\n" in body
    assert '+- Always include "Confidence: medium"' in body
    assert "Full diff: git diff main...gitsleep/brief-writer" in body
    assert '- **add** `Always include "Confidence: medium"` (skill)' in body
    assert "- **replace** `missing anchor` with `Keep it short` (skill)" in body
    assert "_why:_ three train tasks lacked a confidence line" in body
    assert "_gate:_ val 0.917 -> 0.833: worse" in body
    assert "| val-0 | 0.000 | n/a | missing | error: timeout" in body
    assert "| test-0 | 0.000 | 1.000 | improved |" in body
    assert "41 model calls, 12 cache hits, 1 failed calls; 9000 prompt and 700 completion" in body
    assert ("- wall time 95.0 s; `qwen`: 40 calls, 9000 prompt and 700 completion tokens, "
            "latency p50 1.2 s, p95 3.4 s") in body
    assert "`gitsleep consolidate --skill brief-writer`" in body
    assert ".gitsleep.yml" in body and "delete its branch" in body
    assert "simulator" not in body and "[!NOTE]" not in body
    outside_code(body)


def test_pr_body_says_when_val_decided_and_when_the_simulator_scored() -> None:
    body = report.pr_body(make_result(n_test=0, backend="offline"), rerun="make sleep",
                          redactor=Redactor())
    assert "No task is in the held-out `test` split" in body
    assert "offline simulator" in body
    assert "`make sleep`" in body
    assert "| held-out (test) | n/a | n/a | 0 | n/a |" in body


def test_a_huge_epoch_is_cut_in_the_per_task_rows_and_keeps_the_score_table() -> None:
    result = make_result(n_val=5000, n_test=5000, task_prefix="a-rather-long-task-name-")
    body = report.pr_body(result, rerun="", redactor=Redactor())
    assert len(body) <= report.PR_BODY_LIMIT
    assert "| val | 0.250 | 0.917 | 5000 | +0.333 to +1.000 |" in body
    left_out = re.findall(r"_(\d+) of 5000 rows left out", body)
    assert left_out and all(int(n) > 0 for n in left_out)
    assert "Re-run:" in body  # the footer survives too
    outside_code(body)


@pytest.mark.parametrize("limit", [2500, 1600, 1200, 800])
def test_a_tiny_limit_drops_sections_but_never_the_score_table(limit: int) -> None:
    body = report.pr_body(make_result(n_val=50, n_test=50), rerun="", redactor=Redactor(),
                          limit=limit)
    assert len(body) <= limit
    assert "| held-out (test) | 0.000 | 1.000 | 50 | +0.500 to +1.000 |" in body
    assert "size limit" in body
    outside_code(body)


def test_mentions_pipes_fences_and_html_in_untrusted_text_are_neutralised() -> None:
    evil = "@octocat | ```` <!-- <img src=x onerror=alert(1)> owner/repo#12 ` `"
    result = make_result(rationale=evil, task_prefix=evil + " ", rule=evil)
    result.passes[-1].tasks[0].samples[0].score = Score(1.0, 1.0, "reply: " + evil)
    body = report.pr_body(result, rerun="", redactor=Redactor())
    prose = outside_code(body)
    assert "@octocat" not in prose and f"@{ZWSP}octocat" in prose
    assert "<!--" not in prose and "<img" not in prose  # inside code they are only text
    assert "repo#12" not in prose
    table_rows = [line for line in prose.split("\n") if line.startswith("| ")]
    assert table_rows and all(unescaped_pipes(row) in (6, 7) for row in table_rows)
    fences = re.findall(r"^(`{3,})diff$", body, flags=re.M)
    assert fences and all(len(f) > 4 for f in fences)  # longer than the ```` inside


def test_markdown_helpers_keep_untrusted_text_literal() -> None:
    assert md.code_span("a ``b`` c") == "```a ``b`` c```"
    assert md.code_span("`edge`") == "`` `edge` ``"
    assert md.code_span("") == "(empty)"
    assert md.fence("x\n`````\ny") == "``````\nx\n`````\ny\n``````"
    assert md.escape("a|b *c* [d](e) <x> & &lt; @me #1\nnext") == (
        "a\\|b \\*c\\* \\[d\\](e) &lt;x> & &amp;lt; @\u200bme #\u200b1 next"
    )
    assert md.escape("> quoted -> arrow") == "\\> quoted -> arrow"
    assert md.one_line("a\r\nb\u2028c\u202ed") == "a b cd"
    assert md.clip("abcdef", 4) == "abc…" and md.clip("abc", 4) == "abc"


# -- summaries -------------------------------------------------------------------------


def test_json_summary_has_exactly_the_contract_keys() -> None:
    data = report.json_summary(
        make_result(), branch="gitsleep/brief-writer", commit=SHA,
        pr=PrResult("created", 7, "http://127.0.0.1/pr/7"),
        diagnostics_path=Path(".gitsleep/runs/x/diagnostics.json"), redactor=Redactor(),
    ).to_json()
    assert list(data) == ["skill", "decision", "reason", "metric", "val", "test", "edits",
                          "branch", "commit", "pr", "cost", "diagnostics"]
    assert data["val"] == {"baseline": 0.25, "candidate": 0.917, "n": 3}
    assert data["edits"]["applied"] == [{
        "op": "add", "content": 'Always include "Confidence: medium"', "anchor": "",
        "rationale": "three train tasks lacked a confidence line", "target": "skill",
        "reason": "",
    }]
    assert data["pr"] == {"operation": "created", "number": 7, "url": "http://127.0.0.1/pr/7"}
    assert data["cost"] == {"calls": 41, "cache_hits": 12, "prompt_tokens": 9000,
                            "completion_tokens": 700, "seconds": 95.0, "by_model": {
                                "qwen": {"calls": 40, "prompt_tokens": 9000,
                                         "completion_tokens": 700, "seconds": 80.0,
                                         "p50_s": 1.2, "p95_s": 3.4}}}
    assert data["diagnostics"] == ".gitsleep/runs/x/diagnostics.json"
    json.dumps(data)
    empty = report.json_summary(make_result(), branch=None, commit=None, pr=PrResult(),
                                diagnostics_path=None, redactor=Redactor()).to_json()
    # gitsleep's one addition to `pr`: why there is none
    assert empty["pr"] == {"operation": "none", "number": None, "url": None,
                           "reason": "not requested"}


def test_summary_line_is_one_line() -> None:
    line = report.summary_line(make_result(text="\nsecond line"), redactor=Redactor())
    assert "\n" not in line
    assert line.startswith("brief-writer second line: accepted second line | val 0.250 -> 0.917")


# -- secrets never leave ---------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
SHAPED = st.one_of(
    st.text(alphabet=ALNUM, min_size=30, max_size=48).map(lambda s: "sk-proj-" + s),
    st.text(alphabet=ALNUM, min_size=36, max_size=36).map(lambda s: "ghp_" + s),
    st.text(alphabet=ALNUM + "_", min_size=40, max_size=60).map(lambda s: "github_pat_" + s),
    st.text(alphabet=string.ascii_uppercase + string.digits, min_size=16,
            max_size=16).map(lambda s: "AKIA" + s),
    st.text(alphabet=ALNUM, min_size=20, max_size=30).map(lambda s: "xoxb-1234-" + s),
    st.text(alphabet=ALNUM, min_size=20, max_size=30).map(
        lambda s: f"eyJhbGciOiJIUzI1NiJ9.eyJ{s}.{s[::-1]}"),
)
ENV_SECRETS = st.text(alphabet=ALNUM + "!#$%&*+-./:;=?@^_|~<>`", min_size=12, max_size=40)
PEM = st.text(alphabet=ALNUM + "+/", min_size=24, max_size=40).map(
    lambda s: f"-----BEGIN PRIVATE KEY-----\n{s}\n{s[::-1]}\n-----END PRIVATE KEY-----")


def rendered(result: EpochResult, redactor: Redactor) -> dict[str, Any]:
    return {
        "commit": report.commit_message(result, {**TRAILERS, "Gitsleep-Model": result.agent_model},
                                        redactor),
        "pr": report.pr_body(result, rerun="", redactor=redactor, diff_hint=result.reason),
        "title": report.pr_title(result),
        "diagnostics": report.diagnostics(result, {"note": result.reason}, redactor=redactor),
        "json": report.json_summary(result, branch=None, commit=None, pr=PrResult(),
                                    diagnostics_path=None, redactor=redactor).to_json(),
        "line": report.summary_line(result, redactor=redactor),
    }


CLEAN = rendered(make_result(), Redactor())
CLEAN_TEXTS = [CLEAN["commit"], CLEAN["pr"], report.dumps_diagnostics(CLEAN["diagnostics"])]


def assert_absent(secret: str, outputs: dict[str, Any]) -> None:
    for name in ("commit", "pr", "line"):
        assert secret not in outputs[name], name
    for name in ("diagnostics", "json"):
        assert all(secret not in s for s in all_strings(outputs[name])), name
        assert secret not in report.dumps_diagnostics(outputs[name]), name


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret=ENV_SECRETS, name=st.sampled_from(["OPENAI_API_KEY", "GITHUB_TOKEN",
                                                  "AZURE_SECRET", "DB_PASSWORD", "LLM_CRED"]))
def test_an_env_secret_in_every_field_never_leaves(secret: str, name: str) -> None:
    # A "secret" that is part of our own fixed wording (say "Gitsleep-Inp") cannot leak.
    assume(all(secret not in text for text in CLEAN_TEXTS))
    redactor = Redactor(secrets_from_env({name: secret}, extra_names=["LLM_CRED"]))
    result = make_result(text=f" {secret} ")
    outputs = rendered(result, redactor)
    assert_absent(secret, outputs)
    assert parsed_trailers(outputs["commit"])[0][0] == "Gitsleep-Skill"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secret=st.one_of(SHAPED, PEM))
def test_a_shaped_secret_in_every_field_never_leaves(secret: str) -> None:
    outputs = rendered(make_result(text=f" {secret} "), Redactor())
    for part in secret.split("\n"):
        if "PRIVATE KEY" not in part:
            assert_absent(part, outputs)


def test_a_bearer_header_in_a_reply_never_leaves() -> None:
    result = make_result(text=" Authorization: Bearer abcDEF0123456789xyz ")
    outputs = rendered(result, Redactor())
    assert_absent("abcDEF0123456789xyz", outputs)
    assert "Bearer [REDACTED:bearer]" in outputs["pr"]


def test_the_body_scores_each_group_of_a_varying_key_on_val_and_held_out() -> None:
    result = make_result(n_val=3, n_test=2)
    assert "Scores per group" not in report.pr_body(result, rerun="", redactor=Redactor([]))
    result.groups = {r"regex Verdict:\s*reject": ["val-1", "test-0"],
                     r"regex Verdict:\s*approve": ["val-2", "test-1"]}
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    section = body.split("### Scores per group", 1)[1].split("###", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "Verdict" in r]
    assert len(rows) == 4 and all(r.endswith("| 1 | 0.000 | 1.000 | 0 -> 0 |") for r in rows)
    assert rows[0].startswith("| val |") and rows[2].startswith("| held-out (test) |")
    assert [g.group for g in report.group_scores(result)][:2] == list(result.groups)


def test_the_group_table_counts_the_answers_that_carry_another_groups_value() -> None:
    result = make_result(n_val=3, n_test=2)
    result.groups = {r"regex Verdict:\s*reject": ["val-1", "test-0"],
                     r"regex Verdict:\s*approve": ["val-2", "test-1"]}
    result.other_wants = {"test-1": ((Check("regex", r"Verdict:\s*reject"),),),
                          "test-0": ((Check("regex", r"Verdict:\s*approve"),),)}
    final = next(p for p in result.passes if p.split == "test" and p.label == "final")
    final.tasks[1].samples[0].answer = "A brief.\nVerdict: reject"  # a pin, on an approve task
    body = report.pr_body(result, rerun="", redactor=Redactor([]))
    section = body.split("### Scores per group", 1)[1].split("###", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| held-out")]
    assert rows[0].endswith("| 0 -> 0 |") and rows[1].endswith("| 0 -> 1 |")
    assert "carry another group's value" in section
    assert [(g.wrong_baseline, g.wrong_candidate) for g in report.group_scores(result)
            if g.split == "test"] == [(0, 0), (0, 1)]
