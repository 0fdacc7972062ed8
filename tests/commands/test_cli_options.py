"""Options a newcomer types where the other commands take them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import init_repo, run_cli


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str]) -> Path:
    return init_repo(tmp_path, monkeypatch, capsys)[0]


def test_validate_takes_json_like_the_other_commands(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (work / ".gitsleep.yml").write_text(
        (work / ".gitsleep.yml").read_text() + "\n", encoding="utf-8")
    (work / "AGENTS.md").write_text("---\nname: Bad Name\n---\n", encoding="utf-8")
    plain = run_cli(capsys, "--repo", str(work), "validate", "--format", "json")
    short = run_cli(capsys, "--repo", str(work), "validate", "--json")
    assert short.code == plain.code and short.out == plain.out
    assert isinstance(json.loads(short.out), list)


def test_quiet_and_verbose_work_after_the_command_name(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gitsleep eval -q` was refused ("No such option"): only `gitsleep -q eval` worked."""
    loud = run_cli(capsys, "--repo", str(work), "eval", "--skill", "example-skill")
    assert loud.code == 0 and loud.err, loud.err
    before = run_cli(capsys, "--repo", str(work), "-q", "eval", "--skill", "example-skill")
    after = run_cli(capsys, "--repo", str(work), "eval", "--skill", "example-skill", "-q")
    assert (after.code, after.out, after.err) == (before.code, before.out, before.err)
    assert len(after.err.splitlines()) < len(loud.err.splitlines())  # no progress lines
    verbose = run_cli(capsys, "--repo", str(work), "eval", "-v", "--skill", "example-skill")
    assert verbose.code == 0


def test_doctor_picks_the_only_skill_and_asks_when_there_are_several(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = run_cli(capsys, "--repo", str(work), "doctor")
    assert one.code == 0, one.err
    assert "judge: hard " in one.out
    config = (work / ".gitsleep.yml").read_text(encoding="utf-8")
    start = config.index("  - name: example-skill")
    skill_entry = config[start:config.index("\n\n", start) + 1]
    (work / ".gitsleep.yml").write_text(config.replace(
        skill_entry, skill_entry + skill_entry.replace("name: example-skill",
                                                       "name: second-skill")),
        encoding="utf-8")
    several = run_cli(capsys, "--repo", str(work), "doctor")
    assert several.code == 2
    assert ("--skill NAME is needed: the config has 2 skills (example-skill, second-skill)"
            in several.err)
