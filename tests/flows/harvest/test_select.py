"""Selection: sessions about this repository and in the window, the skill's own first;
the ids harvested before."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from gitsleep.flows.harvest import select
from gitsleep.flows.harvest.mine import task_id
from gitsleep.flows.harvest.select import parse_since
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo
from tests.support.harvest import BRIEF, FIX, harvest
from tests.support.transcripts import (
    T0,
    claude_file,
)


def test_sessions_outside_the_repo_or_the_window_are_dropped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    now = datetime.now(timezone.utc)
    turns = [(BRIEF, "Draft."), (FIX, "Fixed.")]
    claude_file(home, repo / "sub", turns, start=now - timedelta(hours=2))
    claude_file(home, tmp_path / "elsewhere", turns, start=now - timedelta(hours=2))
    old = claude_file(home, repo, [("Write a decision brief on the old cron jobs.", "x"),
                                   (FIX, "Fixed.")], start=now - timedelta(days=30))
    result = harvest(tmp_path, "claude", [home / ".claude"], since=parse_since("7d"))
    assert len(result.records) == 1
    assert result.session_drops == {"outside the repository": 1, "older than --since": 1}
    # a file last written before the window is not even opened
    stamp = (now - timedelta(days=30)).timestamp()
    os.utime(old, (stamp, stamp))
    result = harvest(tmp_path, "claude", [home / ".claude"], since=parse_since("7d"))
    assert result.session_drops["older than --since (file not opened)"] == 1


def test_a_session_that_used_the_skill_counts_most(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = tmp_path / "repo"
    claude_file(home, repo, [("Summarise the meeting for me, short one.", "x"),
                             ("no, add a Decision section", "ok")], skill="brief-writer",
                start=T0)
    claude_file(home, repo, [(BRIEF, "Draft."), (FIX, "Fixed.")], start=T0 + timedelta(days=1))
    result = harvest(tmp_path, "claude", [home / ".claude"], max_tasks=1)
    assert [r["prompt"] for r in result.records] == ["Summarise the meeting for me, short one."]
    assert result.task_drops == {"over --max 1": 1}


def test_harvested_ids_are_read_from_every_branch_of_the_history(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path)
    line = json.dumps({"id": task_id(BRIEF), "prompt": BRIEF, "review": "pending"}) + "\n"
    git(work, "checkout", "--quiet", "-b", "side")
    commit_files(work, {"evals/h.jsonl": line}, "harvest")
    git(work, "rm", "--quiet", "evals/h.jsonl")
    git(work, "commit", "--quiet", "-m", "review: delete it")  # the side adds nothing net
    git(work, "checkout", "--quiet", "main")
    git(work, "merge", "--quiet", "--no-ff", "-m", "merge the review", "side")
    assert select.harvested_before(work, ["HEAD"], ["evals/h.jsonl"]) == {task_id(BRIEF)}
    assert select.harvested_before(work, ["HEAD"], ["evals/other.jsonl"]) == frozenset()
    (tmp_path / "plain").mkdir()
    assert select.harvested_before(tmp_path / "plain", ["HEAD"], ["x"]) == frozenset()
    assert select.harvested_before(tmp_path / "missing", ["HEAD"], ["x"]) == frozenset()
