"""diagnostics.json of a real offline night: the full record, redacted, written atomically,
and the note the same text with the commit it proves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.base.redact import Redactor
from gitsleep.core.models import EpochResult
from gitsleep.report.diagnostics_json import Diagnostics, diagnostics, dumps_diagnostics
from tests.support.nights import example_night


@pytest.fixture(scope="module")
def night() -> EpochResult:
    return example_night()


def test_the_record_holds_the_decision_trials_and_cost(night: EpochResult) -> None:
    data = diagnostics(night, {"gitsleep_version": "test"}, redactor=Redactor())
    assert data["skill"] == "brief-writer" and data["decision"] == "accepted"
    assert len(data["trials"]) == len(night.trials)
    assert all("refusal" in trial for trial in data["trials"])
    assert data["cost"]["calls"] == night.cost.calls
    assert data["extra"] == {"gitsleep_version": "test"}
    assert json.loads(dumps_diagnostics(data)) == json.loads(json.dumps(data, default=str))


def test_a_secret_in_the_record_is_masked(night: EpochResult) -> None:
    secret = "hunter2-team-token"
    data = diagnostics(night, {"note": f"token {secret}"}, redactor=Redactor([secret]))
    assert secret not in dumps_diagnostics(data)


def test_the_file_and_the_note_are_one_text(night: EpochResult, tmp_path: Path) -> None:
    written = Diagnostics.write(tmp_path / "run" / "diagnostics.json", night, {}, Redactor())
    on_disk = json.loads(written.path.read_text(encoding="utf-8"))
    assert on_disk == json.loads(dumps_diagnostics(written.data))
    note = json.loads(written.note_text("a" * 40, "gitsleep/brief-writer"))
    assert {k: v for k, v in note.items() if k in on_disk} == on_disk
    assert "a" * 40 in json.dumps(note)
