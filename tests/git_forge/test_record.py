"""The git record: trailer keys written in order, read back, and what makes an epoch current."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitsleep.core.scores import fmt_change, parse_change
from gitsleep.git_forge import record


def test_trailer_lines_parse_back_and_only_gitsleep_keys_are_ours() -> None:
    text = "Gitsleep-Val: 0.250 -> 1.000\nSigned-off-by: A <a@b>\nGitsleep-Val: 0.500 -> 1.000\n"
    parsed = record.parse_lines(text)
    assert parsed["Gitsleep-Val"] == "0.500 -> 1.000"  # a key given twice keeps its last value
    assert record.ours(parsed) == {"Gitsleep-Val": "0.500 -> 1.000"}


def test_scores_round_trip_through_the_trailer_form() -> None:
    assert parse_change(fmt_change(0.25, 1.0)) == (0.25, 1.0)
    assert parse_change(fmt_change(None, 0.5)) == (None, 0.5)
    assert parse_change("garbage") == (None, None)


def test_held_out_decides_before_val_and_nothing_without_scores() -> None:
    both = {record.TEST: "0.100 -> 0.200", record.VAL: "0.300 -> 0.900"}
    assert record.deciding_scores(both) == (0.1, 0.2)
    assert record.deciding_scores({record.VAL: "0.300 -> 0.900",
                                   record.TEST: "n/a -> n/a"}) == (0.3, 0.9)
    assert record.deciding_scores({}) is None


def test_digests_are_current_only_for_the_same_base_tasks_and_inputs() -> None:
    digests = record.Digests(base="b" * 40, tasks="sha256:t", model="m / o",
                             inputs="sha256:i")
    trailers = digests.trailers()
    assert list(trailers) == [record.BASE, record.TASKS, record.MODEL, record.INPUTS]
    assert digests.recorded_in(trailers)
    assert digests.recorded_in({**trailers, record.MODEL: "another / model"})
    assert not digests.recorded_in({**trailers, record.INPUTS: "sha256:other"})
    assert not digests.recorded_in({})


def test_a_recorded_decision_is_one_of_the_contracts_values() -> None:
    """An up-to-date run repeats the branch's decision in `--json`: a trailer anyone could
    have written reads as one of the contract's four values, never as its own text."""
    assert record.recorded_decision({record.DECISION: "rejected"}) == "rejected"
    assert record.recorded_decision({record.DECISION: "no_edits"}) == "no_edits"
    # gitsleep commits only an accepted epoch: a missing or foreign value reads as that
    assert record.recorded_decision({}) == "accepted"
    assert record.recorded_decision({record.DECISION: "<b>merged</b>"}) == "accepted"


def test_task_files_digest_names_each_file_its_length_and_bytes(tmp_path: Path) -> None:
    from gitsleep.base.errors import UsageError
    from gitsleep.inputs.config import SkillConfig

    def skill_for(files: dict[str, str]) -> SkillConfig:
        return SkillConfig.model_validate({"name": "s", "skill": "SKILL.md", "tasks": [
            {"path": path, "split": split} for path, split in files.items()]})

    (tmp_path / "a.jsonl").write_text('{"id": "a"}\n')
    (tmp_path / "b.jsonl").write_text('{"id": "b"}\n')
    skill = skill_for({"a.jsonl": "auto", "b.jsonl": "test"})
    digest = record.task_files_digest(tmp_path, skill)
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert digest == record.task_files_digest(tmp_path, skill)
    assert digest != record.task_files_digest(
        tmp_path, skill_for({"b.jsonl": "test", "a.jsonl": "auto"}))
    (tmp_path / "b.jsonl").write_text('{"id": "b"}\n\n')
    assert digest != record.task_files_digest(tmp_path, skill)
    with pytest.raises(UsageError, match="missing.jsonl: cannot be read"):
        record.task_files_digest(tmp_path, skill_for({"missing.jsonl": "auto"}))


def test_a_trigger_pass_that_measured_its_noise_says_so_in_a_trailer() -> None:
    from gitsleep.core.models import EpochResult, SplitSummary
    from tests.report.test_triggers import night, noisy_night

    def result(triggers: object) -> EpochResult:
        none = SplitSummary(None, None, 0)
        return EpochResult("scribe", "accepted", "", "mixed", "offline", "m", "m", "m",
                           none, none, none, {}, triggers=triggers)  # type: ignore[arg-type]

    trailers = record.trigger_trailers(result(noisy_night()))
    assert list(trailers)[-1] == "Gitsleep-Trigger-Noise"
    assert trailers["Gitsleep-Trigger-Noise"] == (
        "val 6/20 moved under a placebo; val gain +0.400 p=0.0107 <= 0.1 (sign test); "
        "held-out gain +0.350 p=0.0195 <= 0.1 (sign test)")
    assert "Gitsleep-Trigger-Noise" not in record.trigger_trailers(result(night()))
