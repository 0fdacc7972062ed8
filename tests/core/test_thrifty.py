"""Thrifty nights: screening on train, budgets in minutes and money, and reuse
of the cached baseline across nights."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gitsleep.backends.offline import OfflineBackend, simulate_answer
from gitsleep.base.errors import BudgetExhausted, UsageError
from gitsleep.core import documents as d
from gitsleep.core.cache import ResponseCache
from gitsleep.core.calls import CallRunner
from gitsleep.core.epoch import TRAIN_MINIBATCH, call_ceiling, run_epoch, train_minibatch
from gitsleep.core.models import Answer, Check, EpochSettings, Judge, Task
from gitsleep.core.outcome import SkillSummary
from gitsleep.core.ports import Backend, ModelCall
from gitsleep.inputs.config import load_config
from gitsleep.report.action_outputs import outputs_for, summary_markdown
from tests.core.test_epoch import example_tasks
from tests.support.cli import run_cli
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import commit_files, example_repo, git

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
SKILL = "# Brief writer\n\nWrite plainly.\n"
BRANCH = "gitsleep/brief-writer"
KEY = "sk-test-thrifty-0123456789abcdefghijklmnop"


def rule(*checks: tuple[Any, ...]) -> Judge:
    return Judge("rule", tuple(Check(*c) for c in checks))


def settings(**overrides: Any) -> EpochSettings:
    base = EpochSettings(model="offline", optimizer_model="offline", judge_model="offline")
    return replace(base, **overrides)


class Scripted(Backend):
    """Offline answers (the real simulator); proposal k (by its seed) gets the k-th rules.
    Every call is recorded."""

    name = "offline"
    simulated = True

    def writes_free_values(self, purpose: str) -> bool:  # as the simulator it wraps
        return self.inner.writes_free_values(purpose)

    def __init__(self, *replies: list[str]) -> None:
        self.inner = OfflineBackend()
        self.replies = replies
        self.calls: list[ModelCall] = []
        self._lock = threading.Lock()

    def complete(self, call: ModelCall) -> Answer:
        with self._lock:
            self.calls.append(call)
        if call.purpose != "propose":
            return self.inner.complete(call)
        rules = self.replies[(call.seed or 0) % 1000 % len(self.replies)]
        edits = [{"op": "add", "content": c, "anchor": "", "rationale": "r"} for c in rules]
        return Answer(json.dumps({"edits": edits}), None, 10, 10)


def alpha_beta_tasks() -> list[Task]:
    return [Task("t1", "first", "train", rule(("contains", "Alpha"))),
            Task("t2", "second", "train", rule(("contains", "Alpha"))),
            Task("t3", "third", "train", rule(("max_chars", 5000))),
            Task("v1", "one", "val", rule(("contains", "Alpha"))),
            Task("v2", "two", "val", rule(("contains", "Alpha"))),
            Task("v3", "three", "val", rule(("max_chars", 5000)))]


# -- 1. screening --------------------------------------------------------------------------


def test_thrifty_screens_out_a_proposal_that_does_not_beat_the_current_documents_on_train(
) -> None:
    """Proposal 1 adds a rule no train failure wants: its train tasks score as before, so
    it never reaches val. Proposal 2 fixes them and goes on to val and wins."""
    backend = Scripted(['Always include "Gamma"'], ['Always include "Alpha"'])
    result = run_epoch(alpha_beta_tasks(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=2, search="thrifty"), backend, skill="s")
    assert result.decision == "accepted", result.reason
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']
    labels = [(p.split, p.label) for p in result.passes]
    assert ("val", "skill round 1 proposal 1") not in labels
    assert ("val", "skill round 1 proposal 2") in labels
    gamma = [c for c in backend.calls if c.purpose == "answer"
             and "Gamma" in c.messages[0][1]]
    assert gamma and {c.messages[-1][1] for c in gamma} <= {"first", "second", "third"}, \
        "the screened-out proposal was answered on train tasks only"
    screened = result.trials[0]
    assert screened.screened and not screened.accepted and screened.candidate is None
    assert "screened out on train" in screened.reason
    # its lone edit is reported (and fed back to the optimizer) as rejected
    assert any("Gamma" in o.edit.content and "screened out" in o.reason for o in result.rejected)


def test_thorough_scores_the_same_proposal_on_val() -> None:
    backend = Scripted(['Always include "Gamma"'], ['Always include "Alpha"'])
    result = run_epoch(alpha_beta_tasks(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=2), backend, skill="s")
    assert settings().search == "thorough"
    assert ("val", "skill round 1 proposal 1") in [(p.split, p.label) for p in result.passes]
    assert not any(t.screened for t in result.trials)
    assert d.learned_rules(result.documents["skill"][1]) == ['Always include "Alpha"']


def test_a_winner_screened_on_train_costs_no_call_in_the_train_rescore() -> None:
    """The screening's train answers under the winner are the re-score's: cache hits."""
    backend = Scripted(['Always include "Alpha"'])
    # two rounds: the train re-score after round 1 is what round 2 reflects on (thrifty
    # skips only the re-score after the last round)
    result = run_epoch(alpha_beta_tasks(), {"skill": SKILL, "memory": None},
                       settings(rounds=2, proposals=1, search="thrifty"), backend, skill="s")
    assert result.decision == "accepted"
    screen = [p for p in result.passes if p.split == "train" and "screen" in p.label]
    rescore = [p for p in result.passes if p.label == "after skill round 1"]
    assert screen and screen[0].calls == 3  # two failures it was shown, one passing task
    assert rescore and rescore[0].calls == 0


def with_held_out() -> list[Task]:
    return [*alpha_beta_tasks(), Task("h1", "held one", "test", rule(("contains", "Alpha"))),
            Task("h2", "held two", "test", rule(("max_chars", 5000)))]


def test_thrifty_skips_the_train_rescore_after_the_last_round() -> None:
    """SkillOpt-Sleep's schedule does not replay train after its last step; thorough does,
    for the reported train score. Thrifty reflects on nothing after the last round, so it
    skips that pass: the train summary keeps its baseline and says it was not re-scored."""
    lines: list[str] = []
    backend = Scripted(['Always include "Alpha"'])
    result = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=1, search="thrifty"), backend, skill="s",
                       progress=lines.append)
    assert result.decision == "accepted", result.reason
    assert "after skill round 1" not in [p.label for p in result.passes]
    assert result.train.baseline is not None and result.train.candidate is None
    assert any("train not re-scored after the last round (search: thrifty)" in line
               for line in lines), lines
    assert result.test.candidate == 1.0  # held-out is still scored: the PR rests on it
    thorough = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                         settings(rounds=1, proposals=1), Scripted(['Always include "Alpha"']),
                         skill="s")
    assert "after skill round 1" in [p.label for p in thorough.passes]
    # its screen answered all three train tasks, the re-score it skips: no more calls
    assert result.cost.calls <= thorough.cost.calls


def test_thrifty_scores_held_out_only_once_something_was_accepted() -> None:
    """No candidate accepted: no pull request can open, so the held-out baseline would
    only be a number in the report. Thrifty leaves it unscored and says so."""
    lines: list[str] = []
    nothing = Scripted(['Always include "Gamma"'])  # fixes no train failure: screened out
    result = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=1, search="thrifty"), nothing, skill="s",
                       progress=lines.append)
    assert result.decision != "accepted"
    assert [p for p in result.passes if p.split == "test"] == []
    assert not any(c.messages[-1][1].startswith("held") for c in nothing.calls)
    assert result.test.baseline is None
    assert any("held-out not scored: nothing was accepted (search: thrifty)" in line
               for line in lines), lines
    # accepted: both held-out passes, baseline and final
    accepted = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                         settings(rounds=1, proposals=1, search="thrifty"),
                         Scripted(['Always include "Alpha"']), skill="s")
    assert [p.label for p in accepted.passes if p.split == "test"] == ["baseline", "final"]
    assert (accepted.test.baseline, accepted.test.candidate) == (0.5, 1.0)


def test_thrifty_ceiling_counts_the_screening() -> None:
    tasks = alpha_beta_tasks()
    thorough = call_ceiling(settings(), tasks, False)
    assert call_ceiling(settings(search="thrifty"), tasks, False) > thorough


# -- 1b. the lazy val baseline and the train minibatch ---------------------------------------


def test_thrifty_never_scores_val_when_every_proposal_is_screened_out() -> None:
    """Val is scored under the original documents only once a candidate passed its screen
    and needs the gate: a night whose every proposal is screened out on train scores no
    val task, and says so (never a 0.000 for a split that was not scored)."""
    lines: list[str] = []
    nothing = Scripted(['Always include "Gamma"'], ['Always include "Delta"'])
    result = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                       settings(rounds=2, proposals=2, search="thrifty"), nothing, skill="s",
                       progress=lines.append)
    assert [p for p in result.passes if p.split in ("val", "test")] == []
    assert not any(c.messages[-1][1] in ("one", "two", "three") for c in nothing.calls)
    assert result.decision == "rejected"
    assert "screened out on train" in result.reason and "val was not scored" in result.reason
    assert "0.000" not in result.reason
    assert (result.val.baseline, result.val.candidate, result.val.n) == (None, None, 3)
    assert all(t.screened for t in result.trials) and len(result.trials) == 4
    assert any("val not scored: every proposal was screened out on train (search: thrifty)"
               in line for line in lines), lines
    # thorough scores the val baseline first, whatever the proposals do
    thorough = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                         settings(rounds=2, proposals=2),
                         Scripted(['Always include "Gamma"'], ['Always include "Delta"']),
                         skill="s")
    assert [p.label for p in thorough.passes][:2] == ["baseline", "baseline"]
    assert thorough.val.baseline is not None


def test_thrifty_scores_the_val_baseline_when_the_first_candidate_needs_it() -> None:
    """The first proposal is screened out; the second passes its screen, and only then is
    the val baseline scored (once), before that candidate's val pass."""
    backend = Scripted(['Always include "Gamma"'], ['Always include "Alpha"'])
    result = run_epoch(with_held_out(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=2, search="thrifty"), backend, skill="s")
    assert result.decision == "accepted", result.reason
    labels = [(p.split, p.label) for p in result.passes]
    first_screen = labels.index(("train", "skill round 1 proposal 1: screen on train"))
    second_screen = labels.index(("train", "skill round 1 proposal 2: screen on train"))
    val_base = labels.index(("val", "baseline"))
    assert first_screen < second_screen < val_base
    assert labels[val_base + 1] == ("val", "skill round 1 proposal 2")
    assert labels.count(("val", "baseline")) == 1
    assert (result.val.baseline, result.val.candidate) == (pytest.approx(1 / 3), 1.0)
    assert "val 0.333 -> 1.000" in result.reason


def many_train_tasks(failing: set[str] | None = None, count: int = 20) -> list[Task]:
    """`count` train tasks (odd ones want "Alpha", unless `failing` names those that do),
    and the val and held-out tasks of `with_held_out`."""
    train = []
    for i in range(1, count + 1):
        tid = f"t{i:02d}"
        wants = tid in failing if failing is not None else i % 2 == 1
        train.append(Task(tid, f"train {i}", "train",
                          rule(("contains", "Alpha")) if wants else rule(("max_chars", 5000))))
    return [*train, *(t for t in with_held_out() if t.split != "train")]


def test_thrifty_reflects_on_a_seeded_sample_of_train() -> None:
    """GEPA's reflection minibatch: thrifty scores a seeded sample of train (seeded by the
    skill's name and the documents' text), shows the optimizer its failures and
    screens on them; thorough scores all of train."""
    lines: list[str] = []
    backend = Scripted(['Always include "Alpha"'])
    result = run_epoch(many_train_tasks(), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=1, search="thrifty"), backend, skill="s",
                       progress=lines.append)
    assert result.decision == "accepted", result.reason
    base = [p for p in result.passes if p.split == "train" and p.label == "baseline"]
    assert len(base) == 1 and len(base[0].tasks) == TRAIN_MINIBATCH == 8
    sample = {t.task_id for t in base[0].tasks}
    answered = {c.messages[-1][1] for c in backend.calls
                if c.purpose == "answer" and c.messages[-1][1].startswith("train")}
    assert answered == {f"train {int(tid[1:])}" for tid in sample}
    assert any("train: scored on 8 of 20" in line for line in lines), lines
    assert result.train.n == 20 and result.train.baseline == base[0].mean
    # the same inputs draw the same sample; another skill name another one
    again = run_epoch(many_train_tasks(), {"skill": SKILL, "memory": None},
                      settings(rounds=1, proposals=1, search="thrifty"),
                      Scripted(['Always include "Alpha"']), skill="s")
    assert {t.task_id for p in again.passes if p.split == "train" and p.label == "baseline"
            for t in p.tasks} == sample
    train = [t for t in many_train_tasks() if t.split == "train"]
    documents: dict[str, str | None] = {"skill": SKILL, "memory": None}
    assert [t.id for t in train_minibatch(train, "s", documents)] == sorted(sample)
    assert train_minibatch(train, "other", documents) != train_minibatch(train, "s", documents)
    changed: dict[str, str | None] = {"skill": SKILL + "- a rule\n", "memory": None}
    assert train_minibatch(train, "s", changed) != train_minibatch(train, "s", documents)
    thorough = run_epoch(many_train_tasks(), {"skill": SKILL, "memory": None},
                         settings(rounds=1, proposals=1), Scripted(['Always include "Alpha"']),
                         skill="s")
    assert [len(p.tasks) for p in thorough.passes if p.split == "train"
            and p.label == "baseline"] == [20]


@pytest.mark.parametrize("count", [9, 12, 15])
def test_thrifty_scores_a_train_split_under_twice_the_sample_whole(count: int) -> None:
    """A sample is drawn only when it leaves out at least half of train: on 10-15 train
    tasks (every bundled example) an 8-task sample saved a few calls a pass but hid the
    failures a proposal needed, and cost held-out gain on real models
    (benchmarks/real_model/results.md)."""
    lines: list[str] = []
    train = [t for t in many_train_tasks(count=count) if t.split == "train"]
    assert train_minibatch(train, "s", {"skill": SKILL, "memory": None}) == train
    result = run_epoch(many_train_tasks(count=count), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=1, search="thrifty"),
                       Scripted(['Always include "Alpha"']), skill="s", progress=lines.append)
    assert [len(p.tasks) for p in result.passes
            if p.split == "train" and p.label == "baseline"] == [count]
    assert not any("scored on" in line for line in lines), lines
    assert result.decision == "accepted", result.reason
    at_twice = [t for t in many_train_tasks(count=2 * TRAIN_MINIBATCH) if t.split == "train"]
    assert len(train_minibatch(at_twice, "s", {"skill": SKILL, "memory": None})) == 8


def test_a_sample_with_no_failure_scores_the_rest_of_train() -> None:
    """A sample of passing tasks has nothing to reflect on: the rest of train is scored,
    so one failing task outside the sample is still learned from, and a night reports
    "every train task already passes" only when all of them were scored."""
    train = [t for t in many_train_tasks() if t.split == "train"]
    outside = next(t.id for t in train
                   if t.id not in {s.id for s in train_minibatch(
                       train, "s", {"skill": SKILL, "memory": None})})
    backend = Scripted(['Always include "Alpha"'])
    result = run_epoch(many_train_tasks({outside}), {"skill": SKILL, "memory": None},
                       settings(rounds=1, proposals=1, search="thrifty"), backend, skill="s")
    passes = [p for p in result.passes if p.split == "train" and "screen" not in p.label]
    assert [len(p.tasks) for p in passes] == [8, 12]
    assert passes[1].label == "baseline (the rest of train: the sample had no failure)"
    propose = [c for c in backend.calls if c.purpose == "propose"]
    assert propose and f"train {int(outside[1:])}" in propose[0].messages[-1][1]
    assert result.decision == "accepted", result.reason
    assert result.train.baseline == pytest.approx(19 / 20)  # all twenty, one failing
    clean = run_epoch(many_train_tasks(set()), {"skill": SKILL, "memory": None},
                      settings(rounds=1, proposals=1, search="thrifty"),
                      Scripted(['Always include "Alpha"']), skill="s")
    assert clean.decision == "no_edits"
    assert clean.reason == "every train task already passes: nothing to learn"
    assert sum(len(p.tasks) for p in clean.passes if p.split == "train") == 20


def test_thrifty_calls_stay_under_the_ceiling() -> None:
    tasks = example_tasks()
    skill = (EXAMPLE / "skills" / "brief-writer" / "SKILL.md").read_text()
    for extra in ({}, {"rounds": 3, "proposals": 1}, {"rounds": 1}):
        s = settings(search="thrifty", **extra)
        for backend in (OfflineBackend(), Scripted(['Always include "Gamma"'])):
            result = run_epoch(tasks, {"skill": skill, "memory": None}, s, backend,
                               skill="brief-writer")
            assert 0 < result.cost.calls <= call_ceiling(s, tasks, with_memory=False)


def screened_out_config(work: Path, server: FakeOpenAIServer) -> str:
    """The example's config on the loopback server with `search: thrifty`."""
    cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
    cfg.update(backend="openai", model="agent-model", optimizer_model="agent-model",
               base_url=server.base_url, api_key_env="GITSLEEP_E2E_KEY", timeout=5,
               max_retries=0, workers=1, search="thrifty")
    return yaml.safe_dump(cfg)


def test_a_night_that_never_scored_val_reports_it_everywhere_without_a_score(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every proposal fixes nothing: screened out, val never scored. The JSON, the
    diagnostics, the Action's outputs and summary and `log` stay valid and say n/a (or
    nothing), never 0.000; nothing is committed."""
    work, origin = repo
    monkeypatch.setenv("GITSLEEP_E2E_KEY", KEY)

    def model(request: dict[str, Any]) -> str:
        if request.get("response_format"):
            return json.dumps({"edits": [{"op": "add", "content": "Always include \"Gamma\"",
                                          "rationale": "r"}]})
        return simulated(request)

    with FakeOpenAIServer(responder=model) as server:
        commit_files(work, {".gitsleep.yml": screened_out_config(work, server)}, "thrifty")
        git(work, "push", "--quiet", "origin", "main")
        result = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["decision"] == "rejected"
    assert "val was not scored" in data["reason"]
    assert data["val"] == {"baseline": None, "candidate": None, "n": 6}
    assert "0.000" not in result.out
    assert "val not scored: every proposal was screened out on train" in result.err
    diagnostics = json.loads(Path(data["diagnostics"]).read_text())
    assert diagnostics["splits"]["val"]["baseline"] is None
    assert not [p for p in diagnostics["passes"] if p["split"] == "val"]
    summary = SkillSummary.from_json(data)
    outputs = outputs_for([summary])
    assert outputs["val-baseline"] == "" and outputs["val-candidate"] == ""
    assert "0.000" not in summary_markdown([summary], 0)
    assert git(origin, "branch", "--list", BRANCH) == ""
    log = run_cli(capsys, "--repo", str(work), "log", "--skill", "brief-writer")
    assert log.code == 0, log.err


def test_search_setting_is_read_and_a_bad_value_is_one_line(tmp_path: Path) -> None:
    base = "backend: offline\nskills:\n  - {name: a, skill: a.md, tasks: [a.jsonl]}\n"
    (tmp_path / "good.yml").write_text(base + "search: thrifty\n")
    assert load_config(tmp_path / "good.yml").epoch_settings().search == "thrifty"
    (tmp_path / "default.yml").write_text(base)
    assert load_config(tmp_path / "default.yml").epoch_settings().search == "thorough"
    (tmp_path / "bad.yml").write_text(base + "search: cheap\n")
    with pytest.raises(UsageError) as caught:
        load_config(tmp_path / "bad.yml")
    assert "search" in str(caught.value) and "\n" not in str(caught.value)


# -- 2. budgets in minutes and money ---------------------------------------------------------


class Timed(Backend):
    """Each call reports the wall time and tokens an agent CLI or a server would."""

    name = "timed"

    def __init__(self, seconds: float = 30.0, prompt: int = 1000, completion: int = 500
                 ) -> None:
        self.seconds, self.prompt, self.completion = seconds, prompt, completion
        self.calls: list[ModelCall] = []

    def complete(self, call: ModelCall) -> Answer:
        self.calls.append(call)
        return Answer(f"answer {len(self.calls)}", prompt_tokens=self.prompt,
                      completion_tokens=self.completion, seconds=self.seconds)


def ask(i: int) -> ModelCall:
    return ModelCall("answer", "m", (("user", f"q{i}"),))


def test_agent_minutes_stop_before_the_call_that_would_pass_them() -> None:
    backend = Timed(seconds=30.0)
    runner = CallRunner(backend, workers=1, max_agent_minutes=2.0)
    for i in range(4):
        runner.call(ask(i))
    with pytest.raises(BudgetExhausted, match=r"max_agent_minutes \(2"):
        runner.call(ask(4))
    assert len(backend.calls) == 4 and runner.cost.calls == 4
    assert runner.agent_seconds() == 120.0
    runner.call(ask(0))  # a cache hit costs nothing and is still answered


def test_cost_stops_before_the_call_that_would_pass_it() -> None:
    # 1000 prompt tokens at $1/M + 500 completion at $2/M = $0.002 a call
    backend = Timed(prompt=1000, completion=500)
    runner = CallRunner(backend, workers=1, max_cost=0.007,
                        prices={"m": {"prompt": 1.0, "completion": 2.0}})
    with pytest.raises(BudgetExhausted, match=r"max_cost"):
        for i in range(10):
            runner.call(ask(i))
    assert len(backend.calls) == 3, "a fourth call would spend $0.008"
    assert runner.spent_usd() == pytest.approx(0.006)


def test_epoch_over_its_minutes_aborts_with_exit_6_and_says_what_it_skipped() -> None:
    result = run_epoch(alpha_beta_tasks(), {"skill": SKILL, "memory": None},
                       settings(max_agent_minutes=3.0, workers=1), Timed(seconds=30.0),
                       skill="s")
    assert result.decision == "aborted" and result.abort_code == 6
    assert "max_agent_minutes" in result.reason and "skipped" in result.reason
    assert result.cost.calls == 6
    assert result.documents["skill"][0] == result.documents["skill"][1]


def test_max_cost_needs_a_price_for_every_model(tmp_path: Path) -> None:
    (tmp_path / "c.yml").write_text(
        "skills:\n  - {name: a, skill: a.md, tasks: [a.jsonl]}\nmodel: agent\n"
        "budget: {max_cost: 2.5}\nprices: {agent: {prompt: 1.0, completion: 2.0}}\n"
        "optimizer_model: big\n")
    with pytest.raises(UsageError, match=r"budget\.max_cost.*big"):
        load_config(tmp_path / "c.yml").epoch_settings()


def test_the_missing_price_error_names_the_file_and_line(tmp_path: Path) -> None:
    """The run's error had no `file:line` and a stray `}}`, unlike every other config error."""
    (tmp_path / "c.yml").write_text(
        "skills:\n  - {name: a, skill: a.md, tasks: [a.jsonl]}\nmodel: agent\n"
        "budget:\n  max_cost: 2.5\n")
    with pytest.raises(UsageError) as info:
        load_config(tmp_path / "c.yml").epoch_settings()
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 'c.yml'}:5: budget.max_cost: no price for model")
    assert "}}" not in message and "(agent: {prompt: " in message


# -- 3. the cache across nights and in the progress line ---------------------------------------


def test_progress_line_says_how_many_answers_came_from_the_cache() -> None:
    cache = ResponseCache()
    skill = (EXAMPLE / "skills" / "brief-writer" / "SKILL.md").read_text()
    run_epoch(example_tasks(), {"skill": skill, "memory": None}, settings(), OfflineBackend(),
              skill="brief-writer", cache=cache)
    lines: list[str] = []
    again = run_epoch(example_tasks(), {"skill": skill, "memory": None}, settings(),
                      OfflineBackend(), skill="brief-writer", cache=cache,
                      progress=lines.append)
    assert again.cost.calls == 0
    assert "brief-writer: val (baseline): 6/6, 6 from cache" in lines


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    return example_repo(tmp_path, monkeypatch)


def test_the_night_after_a_merged_pr_starts_from_the_cached_baseline(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    first = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")
    assert first.code == 0, first.err
    assert json.loads(first.out)["decision"] == "accepted"
    # a person merges the pull request on the forge
    git(work, "fetch", "--quiet", "origin")
    git(work, "merge", "--quiet", "--no-ff", "-m", "Merge gitsleep/brief-writer",
        f"origin/{BRANCH}")
    git(work, "push", "--quiet", "origin", "main")
    second = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")
    assert second.code == 0, second.err
    night1 = json.loads(Path(json.loads(first.out)["diagnostics"]).read_text())
    night2 = json.loads(Path(json.loads(second.out)["diagnostics"]).read_text())
    final = {p["split"]: p["version"] for p in night1["passes"]
             if p["label"] in ("final", "after skill round 1")}
    baseline = {p["split"]: p["version"] for p in night2["passes"] if p["label"] == "baseline"}
    assert baseline["test"] == final["test"], "the merged documents are the accepted ones"
    assert "brief-writer: val (baseline): 6/6, 6 from cache" in second.err
    assert "brief-writer: test (baseline): 6/6, 6 from cache" in second.err


def priced_config(work: Path, server: FakeOpenAIServer) -> str:
    """The example's config on the loopback server, priced so that $0.01 runs out early."""
    cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
    cfg.update(backend="openai", model="agent-model", optimizer_model="agent-model",
               base_url=server.base_url, api_key_env="GITSLEEP_E2E_KEY", timeout=5,
               max_retries=0, workers=1, budget={"max_cost": 0.01},
               prices={"agent-model": {"prompt": 100.0, "completion": 100.0}})
    return yaml.safe_dump(cfg)


def simulated(request: dict[str, Any]) -> str:
    """The offline simulator's answer to a chat request the loopback server received."""
    system = [m["content"] for m in request["messages"] if m["role"] == "system"]
    user = "\n".join(m["content"] for m in request["messages"] if m["role"] == "user")
    return simulate_answer(system, user)


def test_a_cost_budget_stops_a_real_run_with_exit_6_and_commits_nothing(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    work, origin = repo
    monkeypatch.setenv("GITSLEEP_E2E_KEY", KEY)

    def model(request: dict[str, Any]) -> str:
        if request.get("response_format"):
            return json.dumps({"edits": [{"op": "add", "content": "Keep answers under 300 "
                                          "characters", "rationale": "r"}]})
        return simulated(request)

    with FakeOpenAIServer(responder=model) as server:
        commit_files(work, {".gitsleep.yml": priced_config(work, server)}, "a real model")
        git(work, "push", "--quiet", "origin", "main")
        result = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")
        requests = server.request_count
    assert result.code == 6, result.err
    data = json.loads(result.out)
    assert data["decision"] == "aborted" and "budget.max_cost" in data["reason"]
    assert 0 < requests < 27
    assert "estimated cost at most" in result.err  # the estimate, before the first call
    assert git(origin, "branch", "--list", BRANCH) == ""
    assert git(work, "branch", "--list", BRANCH) == ""


def test_eval_keeps_the_cost_budget_too(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command that spends calls keeps every budget (one constructor builds them)."""
    work, _ = repo
    monkeypatch.setenv("GITSLEEP_E2E_KEY", KEY)

    def model(request: dict[str, Any]) -> str:
        return simulated(request)

    with FakeOpenAIServer(responder=model) as server:
        (work / ".gitsleep.yml").write_text(priced_config(work, server))
        result = run_cli(capsys, "--repo", str(work), "eval", "--split", "val")
        requests = server.request_count
    assert result.code == 6, result.err
    assert "budget.max_cost" in result.err
    assert 0 < requests < 6


def test_a_budget_stop_names_the_step_it_skipped() -> None:
    """Six baseline answers take 3 minutes; the optimizer call, estimated at the longest
    call of its model so far, would pass 3.4: the reason names the proposals it skipped."""
    result = run_epoch(alpha_beta_tasks(), {"skill": SKILL, "memory": None},
                       settings(max_agent_minutes=3.4, workers=1), Timed(seconds=30.0),
                       skill="s")
    assert result.abort_code == 6 and result.cost.calls == 6
    assert "3.00 min spent in 6 calls, the next estimated at 30 s" in result.reason
    assert "skipped: the skill round 1 proposals and the rest of the epoch" in result.reason
