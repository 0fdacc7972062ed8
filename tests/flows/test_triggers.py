"""A night's trigger pass on a real repository: the description tuned on trigger tasks,
every other byte kept, opt-in per skill, counted before the first call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep import report
from gitsleep.core import description
from gitsleep.flows import consolidate as run
from gitsleep.flows.demo import make_demo_repo
from gitsleep.flows.prepare import Setup
from tests.support.gitrepo import isolate_git

SKILL = ".claude/skills/scribe/SKILL.md"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    return make_demo_repo(tmp_path, "scribe")


def night(repo: Path, said: list[str]) -> run.SkillOutcome:
    setup = Setup.load(repo, None, env={}, progress=said.append)
    return run.dry_run(setup, setup.config.skill("scribe"), repo / "out")


@pytest.mark.slow
def test_the_description_alone_changes_and_held_out_rises(repo: Path) -> None:
    before = (repo / SKILL).read_text(encoding="utf-8")
    said: list[str] = []
    outcome = night(repo, said)
    result = outcome.result
    assert result is not None and result.triggers is not None
    assert result.decision == "accepted" and result.pr_eligible, result.reason
    after = result.documents["skill"][1]
    new = description.read(after)
    assert new != description.read(before) and "commit" in new
    assert after == before.replace(description.read(before), new)  # no other byte
    night_ = result.triggers
    assert (night_.test.baseline, night_.test.final) == (0.4, 1.0)
    assert night_.siblings_fell == ""
    # counted before the first call: every query x run x candidate
    assert any("trigger pass: 15 trigger queries x 1 run(s), 2 round(s) of 1 candidate "
               "description(s) among 3 skills: at most" in line for line in said), said


def test_a_skill_with_trigger_tasks_alone_that_does_not_allow_tuning_changes_nothing(
        repo: Path) -> None:
    config = repo / ".gitsleep.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "tune_description: true", "tune_description: false"), encoding="utf-8")
    result = night(repo, []).result
    assert result is not None and result.decision == "no_edits" and not result.changed
    assert result.reason.startswith("trigger tasks only, and tune_description is off")
    assert result.cost.calls == 0


@pytest.mark.slow
def test_with_body_tasks_too_the_description_is_re_scored_on_them(repo: Path) -> None:
    config = repo / ".gitsleep.yml"
    judge = {"kind": "rule", "checks": [{"op": "max_chars", "arg": 5000}]}
    (repo / "evals" / "scribe" / "body.jsonl").write_text("".join(
        json.dumps({"id": i, "prompt": f"commit the {i} fix", "split": split, "judge": judge})
        + "\n" for i, split in (("b1", "train"), ("b2", "val"), ("b3", "test"))),
        encoding="utf-8")
    config.write_text(config.read_text(encoding="utf-8").replace(
        "        split: auto         # per-task labels (train / val / test) are kept\n",
        "        split: auto\n      - path: evals/scribe/body.jsonl\n        split: auto\n"),
        encoding="utf-8")
    said: list[str] = []
    result = night(repo, said).result
    assert result is not None and result.triggers is not None
    assert result.triggers.decision == "accepted", result.triggers.reason
    assert result.decision == "accepted" and result.changed


@pytest.mark.slow
def test_a_skill_that_does_not_allow_it_gets_no_trigger_pass(repo: Path) -> None:
    config = repo / ".gitsleep.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "tune_description: true", "tune_description: false"), encoding="utf-8")
    (repo / "evals" / "scribe" / "body.jsonl").write_text(
        '{"id": "b1", "prompt": "commit this", "split": "val", "judge": {"kind": "rule", '
        '"checks": [{"op": "max_chars", "arg": 5000}]}}\n', encoding="utf-8")
    config.write_text(config.read_text(encoding="utf-8").replace(
        "        split: auto         # per-task labels (train / val / test) are kept\n",
        "        split: auto\n      - path: evals/scribe/body.jsonl\n        split: val\n"),
        encoding="utf-8")
    outcome = night(repo, [])
    assert outcome.result is not None and outcome.result.triggers is None
    assert not outcome.result.changed


def test_a_budget_too_small_stops_the_trigger_pass_with_nothing_written(repo: Path) -> None:
    config = repo / ".gitsleep.yml"
    config.write_text(config.read_text(encoding="utf-8") + "budget:\n  max_calls: 20\n",
                      encoding="utf-8")
    outcome = night(repo, [])
    result = outcome.result
    assert result is not None and result.triggers is not None
    assert result.triggers.decision == "aborted" and result.abort_code == 6
    assert result.decision == "aborted"
    assert not result.changed and "budget" in result.reason


@pytest.mark.slow
def test_trailers_note_log_status_and_json_carry_the_trigger_scores(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tests.support.cli import run_cli

    setup = Setup.load(repo, None, env={}, progress=lambda _line: None)
    outcome = run.consolidate(setup, setup.config.skill("scribe"),
                              run.GitOptions(pr=False, output_dir=repo.parent / "out"))
    summary = outcome.summary.to_json()
    assert summary["triggers"]["test"] == {"baseline": 0.4, "candidate": 1.0, "n": 5}
    assert {"query": "project changes and notes for the version 5 users",
            "expected": "release-notes", "before": "scribe", "after": "release-notes"} \
        in summary["triggers"]["picks"]
    note = json.loads(Path(summary["diagnostics"]).read_text(encoding="utf-8"))
    assert note["triggers"]["test"] == {"baseline": 0.4, "candidate": 1.0, "n": 5}
    assert [t["accepted"] for t in note["triggers"]["trials"]][:1] == [True]
    message = outcome.commit_message or ""
    assert message.startswith("gitsleep(scribe): description, trigger held-out 0.400 -> 1.000")
    assert "Gitsleep-Trigger-Val: 0.400 -> 1.000\nGitsleep-Trigger-Test: 0.400 -> 1.000\n" \
        in message
    # the offline picker never moves under the placebo: strictly better decided
    assert ("Gitsleep-Trigger-Noise: val 0/5 moved under a placebo; no noise, strictly better "
            "decides\n") in message
    assert summary["triggers"]["noise"]["noisy"] is False
    assert outcome.result is not None
    body = report.pr_body(outcome.result, rerun="gitsleep consolidate", redactor=setup.redactor)
    assert "| project changes and notes for the version 5 users | `release-notes` | " \
           "`scribe` | `release-notes` |" in body
    logged = run_cli(capsys, "--repo", str(repo), "log", "--base", "gitsleep/scribe", "--json")
    assert logged.code == 0, logged.err
    assert json.loads(logged.out)[0]["triggers"] == {
        "decision": "accepted", "val": {"baseline": 0.4, "candidate": 1.0},
        "test": {"baseline": 0.4, "candidate": 1.0}}
    plain = run_cli(capsys, "--repo", str(repo), "log", "--base", "gitsleep/scribe")
    assert "    triggers: val 0.400 -> 1.000, held-out 0.400 -> 1.000" in plain.out
    status = run_cli(capsys, "--repo", str(repo), "status")
    assert "  triggers: accepted, val 0.400 -> 1.000, held-out 0.400 -> 1.000" in status.out, \
        status.out


CLAUDE_CONFIG = """\
backend: command
agent: claude
optimizer_backend: offline
triggers: {timeout: 20}
"""


def _with_claude(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example's config asking Claude Code (the fake on PATH) for the picks."""
    import os
    import stat
    import sys

    fake = Path(__file__).parents[1] / "support" / "fake_agents" / "claude_stream.py"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {fake} \"$@\"\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(tmp_path / "runs.jsonl"))
    config = repo / ".gitsleep.yml"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "backend: offline            # the deterministic simulator: no key, no network\n",
        CLAUDE_CONFIG), encoding="utf-8")
    return home


@pytest.mark.slow
def test_claude_code_picks_in_its_own_runs(repo: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    _with_claude(repo, tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_CLAUDE_EVENTS", "text,skill:scribe")  # takes every request
    setup = Setup.load(repo, None, env=dict(os.environ), progress=lambda _line: None)
    outcome = run.dry_run(setup, setup.config.skill("scribe"), repo / "out")
    night = outcome.result.triggers if outcome.result else None
    assert night is not None
    assert night.val.baseline == 0.4  # 2 of 5 val queries should pick scribe
    runs = (tmp_path / "runs.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(runs) >= 15  # every train, val and held-out query ran claude


def test_a_personal_claude_skill_of_the_same_name_stops_the_night_before_any_call(
        repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from gitsleep.base.errors import UsageError

    home = _with_claude(repo, tmp_path, monkeypatch)
    (home / ".claude" / "skills" / "release-notes").mkdir(parents=True)
    (home / ".claude" / "skills" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\n---\n", encoding="utf-8")
    setup = Setup.load(repo, None, env=dict(os.environ), progress=lambda _line: None)
    with pytest.raises(UsageError, match="release-notes/SKILL.md: a personal skill of the "
                                         "same name shadows the project's"):
        run.dry_run(setup, setup.config.skill("scribe"), repo / "out")
    assert not (tmp_path / "runs.jsonl").exists()


def test_with_several_agents_the_cost_line_names_the_one_agent_who_picks() -> None:
    """Picks are asked of the first agent only (docs/triggers.md, limits): said before the
    first call, so nobody reads the pass as every agent's."""
    from gitsleep.core.models import AgentRef, EpochSettings
    from gitsleep.flows.triggers import TriggerInputs, cost_line

    inputs = TriggerInputs("scribe", [], [])
    two = EpochSettings(model="small", optimizer_model="o", judge_model="o",
                        agents=(AgentRef("fast", "small"), AgentRef("big", "large")))
    assert cost_line(two, inputs).endswith(
        "; picks are asked of the first agent, fast (small), not of big")
    one = EpochSettings(model="small", optimizer_model="o", judge_model="o")
    assert "picks are asked" not in cost_line(one, inputs)
