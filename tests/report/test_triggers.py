"""The trigger pass as people read it: the headline, the commit lines, the PR section with
its table of picks, and the `--json` record, from one `TriggerNight`."""

from __future__ import annotations

from gitsleep.core.triggers import PickRow, SplitScores, TriggerNight
from gitsleep.report.triggers import commit_lines, headline, pr_lines, summary


def night(**changes: object) -> TriggerNight:
    fields: dict[str, object] = dict(
        skill="scribe", decision="accepted", reason="trigger val 0.400 -> 1.000",
        description_before="Helps with notes.",
        description_after="Writes meeting notes; not release notes or commit messages.",
        pr_eligible=True, val=SplitScores(0.4, 1.0, 5), test=SplitScores(0.4, 1.0, 5),
        rows=[PickRow("notes from standup", "scribe", "(none)", "scribe"),
              PickRow("draft the v2 release notes", "release-notes", "scribe",
                      "release-notes")])
    fields.update(changes)
    return TriggerNight(**fields)  # type: ignore[arg-type]


def plain(text: str, _limit: int = 0) -> str:
    return text


def test_the_headline_names_the_split_that_decided() -> None:
    assert headline(night()) == "trigger held-out 0.400 -> 1.000"
    assert headline(night(decided_by="val")) == "trigger val 0.400 -> 1.000"


def test_the_commit_shows_the_description_before_and_after_only_when_it_changed() -> None:
    lines = commit_lines(night(), plain)
    assert lines[0] == ("Description (accepted): trigger val 0.400 -> 1.000, "
                        "held-out 0.400 -> 1.000")
    assert "  before: Helps with notes." in lines
    unchanged = night(decision="rejected",
                      description_after="Helps with notes.")
    assert not any(line.startswith("  before:") for line in commit_lines(unchanged, plain))


def test_the_pr_section_has_a_row_per_query_and_names_fallen_siblings() -> None:
    lines = pr_lines(night(siblings_fell="release-notes 1.000 -> 0.500"), plain, plain, plain)
    assert "| draft the v2 release notes | release-notes | scribe | release-notes |" in lines
    assert "| held-out (test) | 0.400 | 1.000 | 5 |" in lines
    assert "Siblings that fell: release-notes 1.000 -> 0.500" in lines
    assert "Which skill each held-out query picked:" in lines


def test_the_json_record_carries_scores_descriptions_and_picks() -> None:
    record = summary(night())
    assert (record.val.baseline, record.val.candidate, record.val.n) == (0.4, 1.0, 5)
    assert record.description_after.startswith("Writes meeting notes")
    assert [p.after for p in record.picks] == ["scribe", "release-notes"]
    assert record.to_json()["picks"][1]["before"] == "scribe"


def noisy_night() -> TriggerNight:
    from gitsleep.core.models import Noise, NoiseTest

    measured = Noise(tasks=20, moved=6, spread=0.3, alpha=0.1,
                     val=NoiseTest("val", 20, 9, 1, 0.4, 0.0107, 0.1, True, 2, True),
                     test=NoiseTest("held-out", 20, 8, 1, 0.35, 0.0195, 0.1, True, 2, True))
    return night(noise=measured)


def test_the_pick_noise_is_in_the_commit_the_pr_and_the_json_record() -> None:
    from gitsleep.core.outcome import TriggerSummary

    said = ("Noise: 6 of 20 val queries' picks moved under a placebo (mean |change| 0.300): "
            "a gain must pass the sign test at 0.1; val +0.400 on 20 task(s), 9 up 1 down, "
            "2 answers a side per task: sign test p=0.0107 <= 0.1, beyond noise; held-out "
            "+0.350 on 20 task(s), 8 up 1 down, 2 answers a side per task: sign test "
            "p=0.0195 <= 0.1, beyond noise")
    assert f"  {said}" in commit_lines(noisy_night(), plain)
    assert f"_{said}_" in pr_lines(noisy_night(), plain, plain, plain)
    record = summary(noisy_night()).to_json()
    assert (record["noise"]["moved"], record["noise"]["noisy"]) == (6, True)
    assert (record["noise"]["test"]["p"], record["noise"]["val"]["beyond"]) == (0.0195, True)
    assert TriggerSummary.from_json(record).to_json()["noise"] == record["noise"]
    assert summary(night()).to_json()["noise"] is None
    assert not any("Noise" in line for line in commit_lines(night(), plain))
