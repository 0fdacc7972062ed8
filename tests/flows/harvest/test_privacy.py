"""Masking before writing: secrets, home paths and e-mail addresses, counted."""

from __future__ import annotations

import json
from pathlib import Path

from gitsleep.base.redact import Redactor
from gitsleep.flows.harvest.privacy import Masker
from tests.support.harvest import BRIEF, harvest
from tests.support.transcripts import (
    claude_file,
)


def test_secrets_home_paths_and_emails_are_masked_and_counted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    prompt = (f"Write a decision brief on key rotation; our key is {key}, mail "
              f"ops@example.com, notes in /home/alice/notes.md and {home}/drafts")
    claude_file(home, repo, [(prompt, "Draft."), ("you forgot the Confidence line", "ok"),
                             ("also add alice@example.com", "ok")])
    result = harvest(tmp_path, "claude", [home / ".claude"])
    (record,) = result.records
    text = json.dumps(record)
    assert key not in text and "example.com" not in text and "/home/alice" not in text
    assert str(home) not in text
    assert "[REDACTED:openai-key]" in record["prompt"] and "[REDACTED:email]" in record["prompt"]
    assert "~/notes.md" in record["prompt"] and "~/drafts" in record["prompt"]
    assert record["judge"]["checks"] == [{"op": "contains", "arg": "Confidence"}]
    assert dict(result.masked) == {"secrets": 1, "home paths": 2, "e-mail addresses": 1}


def test_a_check_that_needs_a_masked_value_drops_the_task(tmp_path: Path) -> None:
    masker = Masker(Redactor())
    assert masker.mask("mail bob@corp.io") == "mail [REDACTED:email]"
    home = tmp_path / "home"
    claude_file(home, tmp_path / "repo", [(BRIEF, "Draft."), ("you forgot bob@corp.io", "ok")])
    result = harvest(tmp_path, "claude", [home / ".claude"])
    assert result.records == []
    assert result.task_drops == {
        "rules: a check would need a masked value (secret, path or e-mail)": 1}
