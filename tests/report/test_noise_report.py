"""The night's noise and the sign tests' verdicts in every record of it: the commit body
and its `Gitsleep-Noise` trailer, the PR body's score table, `--json` and diagnostics.json."""

from __future__ import annotations

import json

from gitsleep import report
from gitsleep.base.redact import Redactor
from gitsleep.core.models import Noise, NoiseTest
from gitsleep.core.outcome import PrResult
from gitsleep.git_forge import record
from gitsleep.report import diagnostics_json
from tests.report.test_report import TRAILERS, make_result, parsed_trailers


def noisy_result():  # type: ignore[no-untyped-def]
    result = make_result(n_val=12, n_test=12)
    result.noise = Noise(
        tasks=12, moved=5, spread=0.417, alpha=0.1,
        val=NoiseTest("val", 12, 8, 0, 0.5, 1 / 256, 0.1, True, 2, True),
        test=NoiseTest("held-out", 12, 5, 2, 0.25, 0.227, 0.1, True, 2, False))
    return result


def test_the_commit_says_the_noise_and_ends_with_a_noise_trailer() -> None:
    message = report.commit_message(noisy_result(), TRAILERS, Redactor())
    trailers = dict(parsed_trailers(message))
    assert trailers[record.NOISE] == ("val 5/12 moved under a placebo; val gain +0.500 "
                                      "p=0.00391 <= 0.1 (sign test); held-out gain +0.250 "
                                      "p=0.227 > 0.1 (sign test)")
    keys = [k for k, _ in parsed_trailers(message)]
    assert keys.index(record.NOISE) == keys.index(record.TEST) + 1
    assert "Noise: 5 of 12 val tasks moved under a placebo" in message
    assert "sign test p=0.00391 <= 0.1, beyond noise" in message
    assert "sign test p=0.227 > 0.1, not beyond noise" in message


def test_a_night_without_noise_says_strictly_better_decided() -> None:
    result = make_result()
    result.noise = Noise(tasks=3, moved=0, spread=0.0, alpha=0.1)
    trailers = dict(parsed_trailers(report.commit_message(result, TRAILERS, Redactor())))
    assert trailers[record.NOISE] == ("val 0/3 moved under a placebo; no noise, strictly "
                                      "better decides")


def test_the_pr_score_table_has_a_beyond_noise_column() -> None:
    body = report.pr_body(noisy_result(), rerun="gitsleep consolidate", redactor=Redactor())
    assert "| beyond noise? |" in body
    val_row = next(line for line in body.splitlines() if line.startswith("| val |"))
    assert "yes: p=0.00391 (8 up, 0 down; sign test, 0.1)" in val_row
    held_row = next(line for line in body.splitlines() if line.startswith("| held-out"))
    assert "no: p=0.227 (5 up, 2 down; sign test, 0.1)" in held_row
    assert "_Noise: 5 of 12 val tasks moved under a placebo" in body


def test_json_and_diagnostics_carry_the_noise() -> None:
    result = noisy_result()
    summary = report.json_summary(result, branch=None, commit=None, pr=PrResult(),
                                  diagnostics_path=None).to_json()
    data = diagnostics_json.diagnostics(result, {})
    for noise in (summary["noise"], json.loads(json.dumps(data))["noise"]):
        assert noise["noisy"] is True and noise["moved"] == 5 and noise["tasks"] == 12
        assert noise["val"]["beyond"] is True and noise["test"]["beyond"] is False
        assert noise["val"]["p"] == 1 / 256 and noise["alpha"] == 0.1
    assert "noise" not in report.json_summary(make_result(), branch=None, commit=None,
                                              pr=PrResult(), diagnostics_path=None).to_json()
