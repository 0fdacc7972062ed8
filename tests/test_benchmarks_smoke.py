"""The benchmark suite runs on tiny inputs and its accounting is exact.

Counts and ratios only: timings on a shared CI machine mean nothing, so no test reads one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks import (
    bench_agents,
    bench_calls,
    bench_harvest,
    bench_overhead,
    bench_parallel,
    bench_timeouts,
    bench_validate,
    generate,
    run,
)
from benchmarks.bench_calls import RoundOutcome, floor_of, measure_epoch, skillopt_calls
from gitsleep.backends.offline import OfflineBackend
from gitsleep.core.models import Answer
from gitsleep.core.ports import ModelCall
from gitsleep.inputs.config import load_config
from gitsleep.inputs.tasks import load_skill_tasks

pytestmark = pytest.mark.slow  # runs the offline benchmarks


class GarbledFirstReply(OfflineBackend):
    """The offline optimizer, but its first reply to each proposal is prose, not JSON."""

    def complete(self, call: ModelCall) -> Answer:
        if call.purpose == "propose" and len(call.messages) == 2:
            return Answer(text="Add a heading, I think.", prompt_tokens=5, completion_tokens=5)
        return super().complete(call)


def test_generated_tasks_are_deterministic_and_load_through_gitsleep(tmp_path: Path) -> None:
    tasks = generate.make_tasks(12, 6, 6)
    assert tasks == generate.make_tasks(12, 6, 6)
    assert [sum(t.split == s for t in tasks) for s in ("train", "val", "test")] == [12, 6, 6]
    config_file = generate.write_repo(tmp_path, tasks)
    skill = load_config(config_file).skill(generate.SKILL_NAME)
    loaded = load_skill_tasks(tmp_path, skill)
    assert {(t.id, t.split, t.prompt, t.judge) for t in loaded} == {
        (t.id, t.split, t.prompt, t.judge) for t in tasks
    }
    assert skill.memory == "AGENTS.md"


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_demo_epoch_makes_exactly_the_floor(rounds: int) -> None:
    row, result = measure_epoch(bench_calls.demo_workload(), rounds)
    samples = sum(len(t.samples) for p in result.passes for t in p.tasks)
    assert row.floor.total == result.cost.calls
    assert row.ratio == 1.0
    # every answer scored beyond the distinct ones came from the cache, none was paid twice
    assert result.cost.cache_hits == samples - row.floor.answers
    assert row.floor.proposals == len(result.proposals)


def test_the_judgment_example_learns_its_condition_at_exactly_the_floor() -> None:
    row, result = measure_epoch(bench_calls.example_workload("dependency-review"), 2)
    assert row.floor.total == result.cost.calls and row.ratio == 1.0
    assert (result.decision, result.test.baseline, result.test.candidate) == (
        "accepted", 0.25, 1.0)


def test_floor_counts_rubric_judge_calls() -> None:
    workload = bench_calls.generated_workload(12, 8, 6, rubric_share=0.4)
    assert any(t.judge.kind == "rubric" for t in workload.tasks)
    row, result = measure_epoch(workload, 2)
    assert row.floor.judges > 0
    assert row.floor.total == result.cost.calls


def test_floor_counts_parse_retries() -> None:
    row, result = measure_epoch(bench_calls.generated_workload(12, 8, 6), 1,
                                backend_factory=GarbledFirstReply)
    assert result.proposals and all(p.parse_failures == 1 for p in result.proposals)
    assert row.floor.proposals == 2 * len(result.proposals)
    assert row.floor.total == result.cost.calls


def test_floor_counts_a_repeated_version_once() -> None:
    """A pass re-scored under the same documents needs no new answer: the floor says so."""
    _, result = measure_epoch(bench_calls.demo_workload(), 1)
    tasks = bench_calls.demo_workload().tasks
    again = dataclasses.replace(result, passes=result.passes + result.passes[:2])
    assert floor_of(again, tasks) == floor_of(result, tasks)


@pytest.mark.parametrize("sizes", [(10, 6, 6), (12, 8, 6)])
def test_without_a_cache_every_hit_becomes_a_call(sizes: tuple[int, int, int]) -> None:
    workload = bench_calls.generated_workload(*sizes)
    cached, _ = measure_epoch(workload, 2)
    uncached, _ = measure_epoch(workload, 2, cache=bench_calls.NoCache())
    assert cached.calls == cached.floor.total
    assert uncached.calls == cached.calls + cached.cache_hits
    assert uncached.cache_hits == 0


def test_skillopt_model_matches_a_hand_count() -> None:
    sizes = {"train": 10, "val": 4, "test": 3}
    accept = RoundOutcome(failures=True, replied=True, trial=True, accepted=True)
    reject = RoundOutcome(failures=True, replied=True, trial=True, accepted=False)
    empty = RoundOutcome(failures=True, replied=False, trial=False, accepted=False)
    # held-out baseline 3; val 4 + train 10 + reflect 1 + trial 4; final val cached; test 3
    assert skillopt_calls({"skill": [accept]}, sizes, nights=1, cache_across_nights=False) == 25
    # memory: train re-replayed under the new skill 10, reflect 1, trial 4
    both = {"skill": [accept], "memory": [reject]}
    assert skillopt_calls(both, sizes, nights=1, cache_across_nights=False) == 40
    # night 2 (new process): val 4 + train 10 + asked twice after an empty reply 2 + test 3
    two = {"skill": [accept, empty]}
    assert skillopt_calls(two, sizes, nights=2, cache_across_nights=False) == 25 + 19
    # one process: night 2's val is cached, train under the new skill is not, test is cached
    assert skillopt_calls(two, sizes, nights=2, cache_across_nights=True) == 25 + 12


def test_round_outcomes_repeat_a_stopped_target() -> None:
    workload = bench_calls.demo_workload()
    _, result = measure_epoch(workload, 3)
    outcomes = bench_calls.round_outcomes(result, "skill", 5)
    assert len(outcomes) == 5
    assert outcomes[0].trial and outcomes[0].accepted
    assert outcomes[4] == outcomes[3] or not outcomes[3].failures


def test_rerun_from_the_persistent_cache_makes_no_call(tmp_path: Path) -> None:
    result = bench_calls.rerun_section(bench_calls.generated_workload(10, 6, 6), rounds=2,
                                       directory=tmp_path)
    assert result.first_calls > 0
    assert result.rerun_calls == 0
    assert result.rerun_cache_hits == result.first_calls + result.first_cache_hits
    assert result.same_decision


def test_parallel_scores_every_task_through_rate_limits() -> None:
    row = bench_parallel.measure(4, 12, latency=0.0, rate_limit_every=4, in_process=True)
    assert row.scored == row.tasks == row.calls == 12
    assert row.lost == 0 and row.call_errors == 0
    assert row.rate_limited >= 2
    assert row.requests == row.calls + row.rate_limited


def test_overhead_counts_every_answer() -> None:
    row = bench_overhead.measure_here(30)
    assert sum(row.splits.values()) == 30
    assert row.decision in ("accepted", "rejected", "no_edits")
    assert row.answers >= 30  # the baseline alone scores every task once
    assert row.calls >= 30


def test_growth_is_a_ratio_between_sizes_ten_times_apart() -> None:
    rows = [
        bench_overhead.OverheadRow(n, {}, answers=n * 4, calls=n, seconds=n / 100,
                                   peak_rss_mb=50.0, held_mb=n / 50, decision="accepted")
        for n in (10, 100, 300, 1000)
    ]
    assert bench_overhead.growth(rows, "answers") == [
        {"from": 10, "to": 100, "ratio": 10.0}, {"from": 100, "to": 1000, "ratio": 10.0},
    ]


def test_validate_runs_on_a_generated_repo() -> None:
    row = bench_validate.measure(30, repeats=1)
    assert row.ok, row.output_tail


def test_timeouts_section_runs_both_ways_and_counts_what_the_server_held() -> None:
    rows = bench_timeouts.timeouts_section(workers=2, calls=2, latency=0.01, timeout=1.0)
    assert [r.pause for r in rows] == [False, True]
    assert all(r.answered == r.calls == 2 and r.requests == 2 for r in rows)
    assert all(1 <= r.peak_held <= r.workers for r in rows)


def test_harvest_reads_every_generated_session() -> None:
    rows = bench_harvest.harvest_section((9,), huge_lines=60, in_child=False)
    assert [(r.sessions, r.tasks) for r in rows] == [(9, 3), (1, 0)]
    assert rows[0].lines == 9 * 30  # every line of every session was read
    assert rows[1].lines == (60 + 12) * 2 + 6


def test_the_agents_section_shows_a_one_agent_gate_shipping_what_hurts_the_other() -> None:
    alone, _, mean, weakest = bench_agents.agents_section()
    assert alone.decision == "accepted"
    before, after = alone.scores["short (not gated)"][2:]
    assert before is not None and after is not None and after < before
    assert mean.decision == weakest.decision == "rejected"
    assert "hurts agent short" in mean.reason
    assert mean.ceiling > alone.ceiling and mean.calls <= mean.ceiling


def test_quick_run_writes_every_section(tmp_path: Path) -> None:
    out = tmp_path / "latest.json"
    assert run.main(["--quick", "--output", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert set(data["sections"]) == {"calls", "formula", "thrifty", "rerun", "parallel",
                                     "overhead", "validate", "timeouts", "harvest",
                                     "agents", "null"}
    assert all(row["calls_over_floor"] == 1.0 for row in data["sections"]["calls"])
    assert all(row["same_decision"] for row in data["sections"]["thrifty"])
    assert all(t["met"] for t in data["targets"] if not t["timing"])


def test_the_thrifty_section_screens_a_noisy_optimizers_proposals_off_val() -> None:
    workload = bench_calls.generated_workload(12, 8, 6)
    rows = bench_calls.thrifty_section([(workload, bench_calls.NoisyOptimizer)], rounds=(1,))
    row = rows[0]
    assert row.screened == 4  # proposals 2 and 3 fix nothing, for the skill and the memory
    assert row.same_decision and row.thrifty_calls < row.thorough_calls
    assert row.thrifty_phase.get("screen", 0) > 0 and "screen" not in row.thorough_phase


def test_the_calls_section_compares_with_a_run_without_early_stopping() -> None:
    workload = bench_calls.generated_workload(12, 8, 6)
    rows = bench_calls.calls_section([workload], rounds=(1,))
    row = rows[0]
    assert row.calls_without_early_stop is not None and row.calls <= row.calls_without_early_stop
    assert 0.0 < row.val_share <= 1.0
    assert row.as_dict()["calls_without_early_stop"] == row.calls_without_early_stop


def test_a_decision_that_early_stopping_changed_fails_the_benchmark(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = bench_calls.measure_epoch

    def flipped(workload: bench_calls.Workload, rounds: int, **kwargs: object):
        row, result = real(workload, rounds, **kwargs)
        if not workload.settings.early_stop:
            result = dataclasses.replace(result, decision="rejected")
        return row, result

    monkeypatch.setattr(bench_calls, "measure_epoch", flipped)
    with pytest.raises(bench_calls.EarlyStopChangedADecision):
        bench_calls.calls_section([bench_calls.generated_workload(12, 8, 6)], rounds=(1,))


def test_the_calls_by_phase_add_up_to_the_epochs_calls() -> None:
    rows = bench_calls.calls_section([bench_calls.generated_workload(12, 8, 6)], rounds=(2,))
    phases = rows[0].by_phase
    assert sum(phases.values()) == rows[0].calls
    assert phases["baseline"] == 12 + 8 + 6 and phases["reflect"] >= 3
    assert set(phases) <= set(bench_calls.PHASES) and "other" not in phases
    assert rows[0].as_dict()["calls_by_phase"] == phases
