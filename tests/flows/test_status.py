"""The last night of a skill as `status` reads it from this clone's run folders."""

from __future__ import annotations

import json
from pathlib import Path

from gitsleep.flows.status import last_run


def write_run(root: Path, name: str, data: object) -> None:
    folder = root / ".gitsleep" / "runs" / name
    folder.mkdir(parents=True)
    (folder / "diagnostics.json").write_text(json.dumps(data), encoding="utf-8")


def test_the_newest_real_night_wins_and_dry_runs_and_other_skills_do_not_count(
        tmp_path: Path) -> None:
    write_run(tmp_path, "brief-20261127T010000000001Z",
              {"decision": "accepted", "reason": "old"})
    write_run(tmp_path, "brief-20261128T020000000001Z",
              {"decision": "rejected", "reason": "none was accepted\x1b[31m"})
    write_run(tmp_path, "brief-20261128T030000000001Z",
              {"decision": "accepted", "extra": {"dry_run": True}})
    write_run(tmp_path, "brief-notes-20261128T040000000001Z", {"decision": "no_edits"})
    write_run(tmp_path, "brief-20261128T050000000001Z", ["not", "an", "object"])
    night = last_run(tmp_path, "brief")
    assert night is not None
    assert (night.date, night.decision, night.where) == ("2026-11-28 02:00", "rejected", "run")
    assert "\x1b" not in night.reason
    assert last_run(tmp_path, "other") is None
