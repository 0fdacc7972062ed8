"""Whole `gitsleep consolidate` runs through real git, a bare origin and a fake GitHub."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gitsleep.git_forge.lock import RepoLock
from tests.support.cli import run_cli
from tests.support.fake_github import FakeGitHub
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import (
    clone,
    commit_files,
    example_repo,
    git,
    snapshot,
)
from tests.support.processes import kill_child

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
BRANCH = "gitsleep/brief-writer"
SKILL_MD = "skills/brief-writer/SKILL.md"
HELD_OUT = "evals/brief-writer/held-out.jsonl"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    return example_repo(tmp_path, monkeypatch)


def consolidate(capsys: pytest.CaptureFixture[str], work: Path, *extra: str) -> tuple[int, dict]:
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json", *extra)
    data = json.loads(result.out) if result.out.strip() else {}
    if result.code not in (0, 3, 6):
        data.setdefault("stderr", result.err)
    return result.code, data


def user_state(work: Path) -> dict:
    """The snapshot minus `.gitsleep/` (ignored run output and cache, written by design)."""
    state = snapshot(work)
    state["files"] = {k: v for k, v in state["files"].items() if not k.startswith(".gitsleep/")}
    return state


def trailers(repo: Path, rev: str) -> dict[str, str]:
    message = git(repo, "log", "-1", "--format=%B", rev)
    parsed = subprocess.run(["git", "interpret-trailers", "--parse"], input=message,
                            capture_output=True, text=True, check=True, cwd=repo).stdout
    return dict(line.split(": ", 1) for line in parsed.splitlines())


def test_accepted_epoch_commits_once_with_trailers_note_and_push(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    base = git(work, "rev-parse", "HEAD")
    # a messy user checkout: unstaged, staged and untracked changes and a stash
    (work / "notes.txt").write_text("untracked\n")
    (work / "README.md").write_text("draft\n")
    git(work, "add", "README.md")
    (work / SKILL_MD).write_text((work / SKILL_MD).read_text() + "\nuncommitted idea\n")
    before = user_state(work)

    code, data = consolidate(capsys, work)

    assert code == 0, data
    assert data["decision"] == "accepted"
    assert user_state(work) == before, "the user's tree, index and HEAD are untouched"
    commit = data["commit"]
    assert git(work, "rev-list", "--count", f"{base}..{BRANCH}") == "1"
    assert git(work, "rev-parse", f"{commit}^") == base
    changed = git(work, "diff", "--name-only", base, commit).splitlines()
    assert changed == [SKILL_MD]
    t = trailers(work, commit)
    assert t["Gitsleep-Skill"] == "brief-writer"
    assert t["Gitsleep-Decision"] == "accepted"
    assert t["Gitsleep-Base"] == base
    assert t["Gitsleep-Val"] == "0.250 -> 1.000"
    assert t["Gitsleep-Model"] == "offline / offline"
    assert t["Gitsleep-Tasks"].startswith("sha256:") and t["Gitsleep-Inputs"].startswith("sha256:")
    note = json.loads(git(work, "notes", "--ref=gitsleep", "show", commit))
    assert note["decision"] == "accepted" and note["simulated"] is True
    assert git(origin, "rev-parse", BRANCH) == commit
    assert git(origin, "notes", "--ref=gitsleep", "show", commit)
    assert "uncommitted idea" not in git(work, "show", f"{commit}:{SKILL_MD}")
    assert git(work, "worktree", "list").count("\n") == 0, "the worktree is gone"


def test_identical_rerun_is_up_to_date_with_zero_calls(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    consolidate(capsys, work)
    tip = git(origin, "rev-parse", BRANCH)
    code, data = consolidate(capsys, work)
    assert code == 0
    assert data["up_to_date"] is True and data["cost"]["calls"] == 0
    assert git(origin, "rev-parse", BRANCH) == tip == data["commit"]


def test_rejected_epoch_makes_no_commit(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    tasks = [
        {"id": "t1", "split": "train", "prompt": "a",
         "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Only train wants"}]}},
        {"id": "v1", "split": "val", "prompt": "b",
         "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Something else"}]}},
    ]
    commit_files(work, {"evals/brief-writer/tasks.jsonl":
                        "\n".join(json.dumps(t) for t in tasks) + "\n"}, "new tasks")
    code, data = consolidate(capsys, work)
    assert code == 0
    assert data["decision"] == "rejected" and data["commit"] is None
    assert git(work, "branch", "--list", BRANCH) == ""


def test_base_moved_supersedes_the_old_commit_and_merged_rules_start_clean(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    consolidate(capsys, work)
    old = git(origin, "rev-parse", BRANCH)
    new_base = commit_files(work, {"README.md": "# moved on\n"}, "unrelated work")
    git(work, "push", "--quiet", "origin", "main")
    code, data = consolidate(capsys, work)
    assert code == 0 and data["decision"] == "accepted"
    assert data["commit"] != old
    assert git(work, "rev-parse", f"{data['commit']}^") == new_base
    assert git(origin, "rev-parse", BRANCH) == data["commit"]
    # the PR is merged: the base holds the learned rules; only the train-only rule is left,
    # and the gate rejects it again
    git(work, "merge", "--quiet", "--ff-only", BRANCH)
    git(work, "push", "--quiet", "origin", "main")
    code, data = consolidate(capsys, work)
    assert code == 0
    assert data["decision"] == "rejected", data["reason"]
    assert data["commit"] is None and data["cost"]["cache_hits"] > 0
    assert [e["content"] for e in data["edits"]["rejected"]] == ['Always include "Internal only"']


def test_human_commit_on_the_branch_is_never_overwritten(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin = repo
    consolidate(capsys, work)
    other = clone(origin, tmp_path / "colleague")
    git(other, "checkout", "--quiet", BRANCH)
    commit_files(other, {"HUMAN.md": "my change\n"}, "a human fix")
    git(other, "push", "--quiet", "origin", BRANCH)
    human_tip = git(origin, "rev-parse", BRANCH)
    commit_files(work, {"README.md": "# base moved\n"}, "move base")
    code, data = consolidate(capsys, work)
    assert code == 4
    assert "a human fix" in data["stderr"] and "never overwrites" in data["stderr"]
    assert git(origin, "rev-parse", BRANCH) == human_tip


def test_second_run_while_locked_exits_5(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import git as gitpython

    work, _ = repo
    with RepoLock(gitpython.Repo(work), "brief-writer"):
        result = run_cli(capsys, "--repo", str(work), "consolidate", "--push")
    assert result.code == 5
    assert "lock" in result.err.lower()


def test_shallow_clone_works(repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                             tmp_path: Path) -> None:
    _, origin = repo
    shallow = clone(origin, tmp_path / "shallow", depth=1)
    code, data = consolidate(capsys, shallow)
    assert code == 0 and data["decision"] == "accepted"
    assert git(origin, "rev-parse", BRANCH) == data["commit"]


def test_status_reads_trailers_and_tells_whether_the_branch_is_up_to_date(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo

    def status() -> dict:
        result = run_cli(capsys, "--repo", str(work), "status", "--json")
        assert result.code == 0, result.err
        (row,) = json.loads(result.out)
        return row

    assert status()["exists"] is False
    consolidate(capsys, work)
    row = status()
    assert row["up_to_date"] is True
    assert row["trailers"]["Gitsleep-Decision"] == "accepted"
    assert row["trailers"]["Gitsleep-Test"] == "0.250 -> 1.000"
    commit_files(work, {"evals/brief-writer/held-out.jsonl":
                        (work / HELD_OUT).read_text() + "\n"}, "tasks changed")
    assert status()["up_to_date"] is False
    text = run_cli(capsys, "--repo", str(work), "status")
    assert "out of date: the base, the tasks or the documents changed" in text.out
    assert "accepted" in text.out and "stale" not in text.out


def test_status_says_merged_after_the_team_merges_the_branch(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """After the team merged gitsleep's pull request, `status` said
    "stale (base, tasks or documents changed)" while `log` showed the epoch as merged."""
    work, _ = repo
    code, data = consolidate(capsys, work)
    assert code == 0 and data["decision"] == "accepted"
    git(work, "merge", "--quiet", "--no-ff", "--no-edit", data["commit"])
    result = run_cli(capsys, "--repo", str(work), "status", "--json")
    (row,) = json.loads(result.out)
    assert row["merged"] is True and row["up_to_date"] is False
    text = run_cli(capsys, "--repo", str(work), "status").out
    assert "merged into the base: the next `gitsleep consolidate` starts a new epoch" in text
    log = run_cli(capsys, "--repo", str(work), "log", "--json")
    assert [epoch["where"] for epoch in json.loads(log.out)] == ["base"]


def test_not_a_repository_and_bad_base_are_one_line_exit_2(
    tmp_path: Path, repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".gitsleep.yml").write_bytes((work / ".gitsleep.yml").read_bytes())
    result = run_cli(capsys, "--repo", str(plain), "consolidate", "--push")
    assert result.code == 2 and "not inside a git repository" in result.err
    assert len(result.err.strip().splitlines()) == 1
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--base", "no-such-ref")
    assert result.code == 2 and "no-such-ref" in result.err


def test_untracked_document_is_exit_2(repo: tuple[Path, Path],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
    cfg["skills"][0]["memory"] = "AGENTS.md"
    (work / "AGENTS.md").write_text("# memory\n")
    commit_files(work, {".gitsleep.yml": yaml.safe_dump(cfg)}, "use memory")
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--push")
    assert result.code == 2 and "AGENTS.md" in result.err and "not tracked" in result.err


# -- pull requests through the fake GitHub ------------------------------------------------


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    with FakeGitHub() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        yield fake


def test_pull_request_lifecycle(
    repo: tuple[Path, Path], github: FakeGitHub, capsys: pytest.CaptureFixture[str]
) -> None:
    work, _ = repo
    code, data = consolidate(capsys, work)
    assert code == 0 and data["pr"]["operation"] == "created"
    assert len(github.pulls) == 1
    pull = next(iter(github.pulls.values())) if isinstance(github.pulls, dict) else github.pulls[0]
    assert [label["name"] for label in pull["labels"]] == ["gitsleep"]
    assert pull["head"]["ref"] == BRANCH and pull["base"]["ref"] == "main"

    writes = len(github.writes)
    code, data = consolidate(capsys, work)  # unchanged: zero API writes
    assert code == 0 and data["pr"]["operation"] == "none"
    assert len(github.writes) == writes

    commit_files(work, {"README.md": "# new base\n"}, "base moves")
    code, data = consolidate(capsys, work)  # still improving: the same PR, updated
    assert code == 0 and data["pr"]["operation"] == "updated"
    assert data["pr"]["number"] == pull["number"] and len(github.pulls) == 1

    # held-out now asks for something no edit learns: no improvement, the PR is closed
    held = "".join(
        json.dumps({"id": f"test-{i}", "prompt": f"brief {i}", "judge": {
            "kind": "rule", "checks": [{"op": "contains", "arg": "unreachable zzz"}]}}) + "\n"
        for i in range(3)
    )
    commit_files(work, {HELD_OUT: held}, "harder held-out")
    code, data = consolidate(capsys, work)
    assert code == 0 and data["pr"]["operation"] == "closed", data
    assert data["decision"] == "accepted"  # val still improved: the commit exists, no PR
    assert not github.open_pulls()
    assert github.comments, "closing explains why"


def test_secrets_in_task_text_never_reach_github(
    repo: tuple[Path, Path], github: FakeGitHub, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    work, origin = repo
    api_key = "sk-proj-PLANTEDabcdefghijklmnopqrstuvwxyz0123"
    monkeypatch.setenv("OPENAI_API_KEY", api_key)
    token = github.token
    path = work / "evals/brief-writer/tasks.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["prompt"] += f" Use key {api_key} and token {token}, tell everyone."
    first["id"] = f"leak-{token}"
    lines[0] = json.dumps(first)
    commit_files(work, {path.relative_to(work).as_posix(): "\n".join(lines) + "\n"}, "leaky")
    code, data = consolidate(capsys, work)
    assert code == 0 and data["pr"]["operation"] == "created"
    sent = github.sent_text()
    assert api_key not in sent and token not in sent
    message = git(work, "log", "-1", "--format=%B", BRANCH)
    note = git(origin, "notes", "--ref=gitsleep", "show", data["commit"])
    for text in (message, note, json.dumps(data)):
        assert api_key not in text and token not in text


def test_run_stopped_after_commit_before_push_is_finished_by_the_next(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin = repo
    code, first = consolidate(capsys, work, "--no-push")  # what a kill before the push leaves
    assert code == 0 and git(origin, "branch", "--list", BRANCH) == ""
    code, data = consolidate(capsys, work)
    assert code == 0
    assert data["commit"] == first["commit"], "no second commit"
    assert data["cost"]["calls"] == 0, "replayed from the cache"
    assert git(origin, "rev-parse", BRANCH) == first["commit"]


def test_run_stopped_before_the_pull_request_is_finished_by_the_next(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, _ = repo
    code, first = consolidate(capsys, work)  # pushed, but no token: no PR yet
    assert code == 0 and first["pr"]["operation"] == "none"
    with FakeGitHub() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        code, data = consolidate(capsys, work)
        assert code == 0 and data["pr"]["operation"] == "created"
        assert data["commit"] == first["commit"] and data["cost"]["calls"] == 0
        writes = len(fake.writes)
        code, again = consolidate(capsys, work)
        assert again.get("up_to_date") and len(fake.writes) == writes



def test_finishing_reads_the_recorded_pull_request_decision_not_the_scores(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note records `extra.pull_request`; a run finishing the epoch acts on that value
    (here rewritten to `skip`), though the trailers' scores read as an improvement."""
    work, _ = repo
    code, first = consolidate(capsys, work)  # pushed, but no token: no PR yet
    commit = first["commit"]
    note = json.loads(git(work, "notes", "--ref=gitsleep", "show", commit))
    assert code == 0 and note["extra"]["pull_request"] == "open"
    note["extra"]["pull_request"] = "skip"
    git(work, "notes", "--ref=gitsleep", "add", "-f", "-m", json.dumps(note), commit)
    with FakeGitHub() as fake:
        for key, value in fake.env().items():
            monkeypatch.setenv(key, value)
        code, data = consolidate(capsys, work)
        assert code == 0 and data.get("up_to_date") and fake.writes == []

# -- processes: killed runs and concurrent skills -----------------------------------------


def _gitsleep(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "gitsleep", *args], cwd=cwd,
                            env=env or dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_run_killed_mid_epoch_leaves_nothing_that_breaks_the_next(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, origin = repo
    with FakeOpenAIServer(latency=0.2) as server:
        cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
        cfg.update(backend="openai", model="slow", base_url=server.base_url, workers=1)
        (work / "slow.yml").write_text(yaml.safe_dump(cfg))
        env = dict(os.environ, OPENAI_API_KEY="sk-kill-test-0000000000000000")
        proc = _gitsleep("--config", "slow.yml", "consolidate", "--push", cwd=work, env=env)
        deadline = time.time() + 30
        while server.request_count < 3 and time.time() < deadline:
            time.sleep(0.05)
        assert server.request_count >= 3, proc.stderr.read() if proc.poll() is not None else ""
        kill_child(proc)
    assert git(work, "branch", "--list", BRANCH) == ""
    assert git(origin, "branch", "--list", BRANCH) == ""
    code, data = consolidate(capsys, work)  # stale lock and worktree are cleaned up
    assert code == 0 and data["decision"] == "accepted"
    assert git(work, "worktree", "list").count("\n") == 0


def test_two_skills_in_two_processes_against_one_origin(
    repo: tuple[Path, Path]
) -> None:
    work, origin = repo
    cfg = yaml.safe_load((work / ".gitsleep.yml").read_text())
    second = dict(cfg["skills"][0], name="brief-writer-two",
                  skill="skills/brief-writer-two/SKILL.md")
    cfg["skills"].append(second)
    skill_text = (work / SKILL_MD).read_text().replace("name: brief-writer",
                                                       "name: brief-writer-two")
    commit_files(work, {".gitsleep.yml": yaml.safe_dump(cfg),
                        "skills/brief-writer-two/SKILL.md": skill_text}, "second skill")
    git(work, "push", "--quiet", "origin", "main")
    procs = [_gitsleep("consolidate", "--push", "--json", "--skill", name, cwd=work)
             for name in ("brief-writer", "brief-writer-two")]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    results = [json.loads(out) for out, _ in outputs]
    for data in results:
        assert data["decision"] == "accepted"
        assert git(origin, "rev-parse", data["branch"]) == data["commit"]
        assert git(origin, "notes", "--ref=gitsleep", "show", data["commit"])
    assert results[0]["branch"] != results[1]["branch"]


def test_every_github_client_a_night_opens_is_closed(
    repo: tuple[Path, Path], github: FakeGitHub, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consolidate path left its PyGithub client (and its connection pool) open; the
    review path closed its own. Every client a night opens is closed when it is done."""
    from gitsleep.git_forge import forge

    opened: list[int] = []
    closed: list[int] = []
    real_init, real_close = forge.GitHubForge.__init__, forge.GitHubForge.close

    def init(self: forge.GitHubForge, *args: object, **kwargs: object) -> None:
        opened.append(id(self))
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def close(self: forge.GitHubForge) -> None:
        closed.append(id(self))
        real_close(self)

    monkeypatch.setattr(forge.GitHubForge, "__init__", init)
    monkeypatch.setattr(forge.GitHubForge, "close", close)
    work, _ = repo
    code, data = consolidate(capsys, work)
    assert code == 0 and data["pr"]["operation"] == "created"
    assert opened and sorted(opened) == sorted(closed)


def test_dry_run_reads_the_files_at_base_when_given(
    repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--dry-run --base REF` ignored REF: it scored the working files, and a ref that did not
    exist ran anyway with exit 0."""
    work, _ = repo
    first = git(work, "rev-parse", "HEAD")
    held_out = (work / HELD_OUT).read_text().splitlines(keepends=True)
    commit_files(work, {HELD_OUT: "".join(held_out[:2])}, "keep two held-out tasks")
    before = user_state(work)
    code, now = consolidate(capsys, work, "--dry-run")
    assert code == 0 and now["test"]["n"] == 2
    code, at_base = consolidate(capsys, work, "--dry-run", "--base", first)
    assert code == 0 and at_base["test"]["n"] == len(held_out)
    assert user_state(work) == before
    assert not git(work, "branch", "--list", "gitsleep/*").strip()
    result = run_cli(capsys, "--repo", str(work), "consolidate", "--dry-run", "--base", "nope")
    assert result.code == 2 and "nope" in result.err
