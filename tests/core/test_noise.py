"""The noise a night measures (a placebo) and the one test that tells a gain from it."""

from __future__ import annotations

import math

import pytest

from benchmarks import null_nights
from gitsleep.backends.offline import OfflineBackend
from gitsleep.core import documents as docs
from gitsleep.core import noise
from gitsleep.core.epoch import call_ceiling, run_epoch
from gitsleep.core.models import Check, EpochSettings, Judge, Task


def test_the_sign_test_is_the_binomial_tail_of_the_tasks_that_rose() -> None:
    assert noise.sign_p([1, 1, 1, 1]) == 1 / 16
    assert noise.sign_p([1, 1, 1, 1, 1, -1]) == 7 / 64
    assert noise.sign_p([0.5, 0, 0, -0.5]) == 3 / 4  # ties drop out; one up of two
    assert noise.sign_p([0, 0]) == 1.0
    # the formula, term by term: sum_{i=k}^{m} C(m, i) / 2^m
    assert noise.sign_p([1] * 7 + [-1] * 2) == sum(math.comb(9, i) for i in range(7, 10)) / 512


def test_a_split_is_too_small_when_even_every_task_rising_is_not_beyond_noise() -> None:
    assert noise.best_p(3) == 0.125 and noise.too_small(3)
    assert noise.best_p(4) == 0.0625 and not noise.too_small(4)
    assert noise.min_tasks() == 4
    line = noise.small_split_line("val", 3)
    assert "val has 3 task(s)" in line and "2^-3 = 0.125" in line and "at least 4" in line
    assert noise.small_split_line("val", 12) == ""


def test_without_noise_a_gain_is_strictly_better_and_with_noise_it_must_pass_the_test() -> None:
    one_up = [1.0, 0.0, 0.0, 0.0]
    assert noise.judge("val", one_up, 0.0, noisy=False).beyond
    assert not noise.judge("val", one_up, 0.0, noisy=True).beyond  # p = 0.5
    assert noise.judge("val", [1.0] * 4, 0.0, noisy=True).beyond  # p = 1/16
    assert not noise.judge("val", [1.0] * 4, 1.0, noisy=True).beyond  # not above min_delta
    assert not noise.judge("val", [0.0] * 4, 0.0, noisy=False).beyond  # a tie is no gain
    assert noise.fell([-1.0] * 4) and not noise.fell([-1.0, -1.0, 0.0, 0.0])


def test_the_placebo_adds_one_content_free_sentence_to_the_learned_block_only() -> None:
    text = "# Skill\n\nDo the thing.\n\n<!-- gitsleep:learned:start -->\n- Be brief.\n" \
           "<!-- gitsleep:learned:end -->\n"
    one, two = (noise.placebo({"skill": text, "memory": None}, w)["skill"] or "" for w in (0, 1))
    assert one != two != text
    assert docs.outside_block(one) == docs.outside_block(text)
    assert docs.learned_rules(one) == ["Be brief.", noise.PLACEBOS[0]]
    # a document without a block gets one, the rest of it as written
    bare = noise.placebo({"skill": "# Skill\n\nDo it.\n"})["skill"] or ""
    assert bare.startswith("# Skill\n\nDo it.\n") and noise.PLACEBOS[0] in bare


def tasks(sizes: dict[str, int]) -> list[Task]:
    judge = Judge("rule", (Check("contains", "DONE"),))
    return [Task(f"{s}-{n}", f"Summarise item {s}-{n}.", s, judge)  # type: ignore[arg-type]
            for s, size in sizes.items() for n in range(size)]


def test_a_noisy_night_keeps_no_rule_whose_gain_it_cannot_tell_from_noise() -> None:
    # seed 1 of the null nights: the search accepts the content-free rule on val (it rose
    # by chance), the placebo moves val, and the gain seen afresh is not beyond noise
    result = run_epoch(null_nights.workload(), {"skill": null_nights.SKILL, "memory": None},
                       null_nights.settings(), null_nights.NoiseAgent(1), skill="s")
    accepted = [t for t in result.trials if "improves by" in t.reason]
    assert accepted, "the search itself accepted the rule (strictly better on val)"
    assert result.decision == "rejected" and not result.pr_eligible
    assert result.documents["skill"][0] == result.documents["skill"][1]
    assert result.noise is not None and result.noise.noisy
    assert result.noise.val is not None and not result.noise.val.beyond
    assert "not beyond noise" in result.reason and "moved under a placebo" in result.reason
    assert result.cost.calls <= call_ceiling(null_nights.settings(), null_nights.workload(),
                                             with_memory=False)


def test_a_noisy_night_on_a_split_too_small_says_so_and_keeps_nothing() -> None:
    small = tasks({"train": 8, "val": 3, "test": 3})
    for seed in range(6):
        result = run_epoch(small, {"skill": null_nights.SKILL, "memory": None},
                           null_nights.settings(),
                           null_nights.NoiseAgent(seed, null_nights.HELPFUL_RULE), skill="s")
        assert not result.pr_eligible
        if result.noise is not None and result.noise.noisy and result.trials and any(
                t.accepted for t in result.trials):
            assert result.decision == "rejected"
            assert "val has 3 task(s)" in result.reason and "2^-3" in result.reason
            return
    pytest.fail("no seed gave a noisy night whose search accepted the rule")


def test_a_deterministic_agent_shows_no_noise_and_keeps_its_strictly_better_gain() -> None:
    skill = "# Notes\n\nWrite a note.\n"
    work = [Task(f"{s}-{n}", f"Write note {n}.", s, Judge("rule", (Check("contains", "Owner:"),)))
            for s in ("train", "val", "test") for n in range(2)]
    settings = EpochSettings(model="offline", optimizer_model="offline", judge_model="offline")
    result = run_epoch(work, {"skill": skill, "memory": None}, settings, OfflineBackend(),
                       skill="notes")
    assert result.decision == "accepted" and result.pr_eligible  # 2 tasks: no noise to beat
    assert result.noise is not None and not result.noise.noisy and result.noise.tasks == 2
    assert result.noise.val is None and result.noise.test is None
    assert [p.label for p in result.passes].count("placebo: the original, re-worded") == 1
    assert result.cost.calls <= call_ceiling(settings, work, with_memory=False)


@pytest.mark.slow
def test_null_nights_rarely_commit_and_a_real_gain_is_still_kept() -> None:
    null, power = null_nights.null_nights_section()
    assert null.nights == power.nights == null_nights.SEEDS >= 20
    assert null.commits <= 0.10 * null.nights  # before the noise test: 19 of 40
    assert null.prs <= 0.05 * null.nights
    assert power.commits >= 0.80 * power.nights
    assert null.calls <= null.nights * null.ceiling and power.calls <= power.nights * power.ceiling


def test_a_held_out_too_small_commits_a_gain_beyond_noise_but_opens_no_pr() -> None:
    work = tasks({"train": 8, "val": 12, "test": 3})
    for seed in range(10):
        result = run_epoch(work, {"skill": null_nights.SKILL, "memory": None},
                           null_nights.settings(),
                           null_nights.NoiseAgent(seed, null_nights.HELPFUL_RULE), skill="s")
        if result.decision == "accepted":
            assert result.noise is not None and result.noise.val is not None
            assert result.noise.val.beyond and result.noise.test is None
            assert not result.pr_eligible
            assert "held-out has 3 task(s)" in result.reason and "so no PR" in result.reason
            return
    pytest.fail("no seed kept the helpful rule")
