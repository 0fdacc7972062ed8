"""`gitsleep harvest` end to end: history in HOME -> task file -> review -> validate ->
consolidate, through a real git repository with a bare origin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import run_cli
from tests.support.fake_github import FakeGitHub
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo, snapshot
from tests.support.transcripts import claude_file, codex_file, write_jsonl

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
HARVESTED = "evals/brief-writer/harvested.jsonl"
SECRET = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789AB"
SESSIONS = [
    [("Write a decision brief on moving the search index to OpenSearch 2.", "Draft."),
     ("No, add a Key Risks section.", "Done.")],
    [("Write a decision brief on dropping Python 3.9 support in the SDK.", "Draft."),
     ('You forgot to include "Confidence:" and keep it under 300 characters.', "Done.")],
    [("Write a decision brief on rotating the deploy token " + SECRET + " every month, "
      "owner ops@acme.io.", "Draft."),
     ("please include a section called Key Risks", "Done.")],
    [("Write a decision brief on moving CI from Jenkins to GitHub Actions.", "Draft."),
     ("Perfect, thanks.", "Glad to help.")],
    [("Fix the flaky login test in the web app please.", "Done."),
     ("no, add a retry", "ok")],
]


def example_files() -> dict[str, bytes]:
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
             for p in EXAMPLE.rglob("*") if p.is_file()}
    config = files[".gitsleep.yml"].decode()
    files[".gitsleep.yml"] = config.replace(
        "      - path: evals/brief-writer/held-out.jsonl",
        f"      - path: {HARVESTED}\n      - path: evals/brief-writer/held-out.jsonl").encode()
    files[".gitignore"] = b".gitsleep/\n"
    return files


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    home = isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    work, origin = make_repo(tmp_path, example_files())
    return work, origin, home


def write_history(home: Path, work: Path, source: str) -> list[Path]:
    if source == "jsonl":
        lines = [{"prompt": turns[0][0], "answer": turns[0][1], "feedback": turns[1][0],
                  "cwd": str(work)} for turns in SESSIONS]
        return [write_jsonl(home / "exports" / "history.jsonl", lines)]
    write = claude_file if source == "claude" else codex_file
    for turns in SESSIONS:
        write(home, work, turns)
    write(home, home / "other-project", SESSIONS[0])  # not this repository
    return []


def harvest(capsys: pytest.CaptureFixture[str], work: Path, *args: str):
    return run_cli(capsys, "--repo", str(work), "harvest", "--skill", "brief-writer", *args)


def accept_all(path: Path) -> None:
    """What a reviewer does: delete the review mark from every task they keep."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace('"review": "pending", ', ""), encoding="utf-8")


@pytest.mark.parametrize("source", ["claude", "codex", "jsonl"])
def test_history_to_reviewed_tasks_in_two_commands(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], source: str
) -> None:
    work, _, home = repo
    paths = [str(p) for p in write_history(home, work, source)]

    result = harvest(capsys, work, "--from", source, *paths)

    assert result.code == 0, result.err
    records = [json.loads(line) for line in (work / HARVESTED).read_text().splitlines()]
    assert len(records) == 3
    assert all(r["review"] == "pending" and r["source"]["tool"] == source for r in records)
    assert all(re.fullmatch(r"h-[0-9a-f]{12}", r["id"]) for r in records)
    text = (work / HARVESTED).read_text()
    assert SECRET not in text and "acme.io" not in text
    assert "masked before writing: 1 secret(s), 0 home path(s), 1 e-mail address(es)" in result.out
    assert "3 task(s) marked review: pending appended to " + HARVESTED in result.out
    if source != "jsonl":
        assert "1 outside the repository" in result.out

    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert checked.code == 0, checked.out
    assert f"{HARVESTED}:1: GS119 warning: 3 task(s) marked review: pending" in checked.out

    accept_all(work / HARVESTED)
    checked = run_cli(capsys, "--repo", str(work), "validate")
    assert checked.code == 0 and "GS119" not in checked.out
    again = harvest(capsys, work, "--from", source, *paths)  # nothing new the second time
    assert again.code == 0 and "nothing written" in again.out
    assert "3 duplicate of a task the skill already has" in again.out


def test_consolidate_leaves_pending_tasks_out_until_reviewed(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin, home = repo
    write_history(home, work, "claude")
    assert harvest(capsys, work, "--from", "claude").code == 0
    commit_files(work, {HARVESTED: (work / HARVESTED).read_text()}, "harvested tasks")
    git(work, "push", "--quiet", "origin", "main")

    pending = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--push")
    assert pending.code == 0, pending.err
    assert "brief-writer: 3 task(s) marked review: pending are left out" in pending.err
    assert "brief-writer: 27 tasks;" in pending.err  # the example's 27, none harvested
    evaluated = run_cli(capsys, "--repo", str(work), "eval", "--split", "train")
    assert "3 task(s) marked review: pending are left out" in evaluated.err

    accept_all(work / HARVESTED)
    commit_files(work, {HARVESTED: (work / HARVESTED).read_text()}, "review harvested tasks")
    git(work, "push", "--quiet", "origin", "main")
    reviewed = run_cli(capsys, "--repo", str(work), "consolidate", "--json", "--push")
    assert reviewed.code == 0, reviewed.err
    assert "left out" not in reviewed.err
    assert "brief-writer: 30 tasks;" in reviewed.err
    data = json.loads(reviewed.out)
    assert data["decision"] == "accepted"
    assert git(origin, "rev-parse", "gitsleep/brief-writer") == data["commit"]


def test_branch_commits_the_file_without_touching_the_checkout_and_opens_a_pr(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    work, origin, home = repo
    write_history(home, work, "claude")
    before = snapshot(work)
    with FakeGitHub() as github:
        for key, value in github.env().items():
            monkeypatch.setenv(key, value)
        result = harvest(capsys, work, "--from", "claude", "--branch")
        assert result.code == 0, result.err
        assert snapshot(work) == before
        branch = "gitsleep-harvest/brief-writer"
        assert git(origin, "rev-parse", branch) == git(work, "rev-parse", branch)
        assert git(work, "diff", "--name-only", "main", branch) == HARVESTED
        committed = git(work, "show", f"{branch}:{HARVESTED}")
        assert committed.count('"review": "pending"') == 3 and SECRET not in committed
        (pull,) = github.pulls.values()
        assert pull["head"]["ref"] == branch and pull["base"]["ref"] == "main"
        assert f"pull request: {pull['html_url']}" in result.out

        # a reviewer accepts one task on the branch; a second harvest keeps that review
        git(work, "worktree", "add", "--quiet", str(work.parent / "review"), branch)
        review = work.parent / "review"
        accept_all(review / HARVESTED)
        git(review, "commit", "--quiet", "-am", "accept harvested tasks")
        git(review, "push", "--quiet", "origin", branch)
        git(work, "worktree", "remove", str(review))
        claude_file(home, work, [("Write a decision brief on archiving old S3 buckets.", "x"),
                                 ("no, add a Cost section", "ok")])
        again = harvest(capsys, work, "--from", "claude", "--branch")
        assert again.code == 0, again.err
        committed = git(work, "show", f"{branch}:{HARVESTED}")
        assert committed.count('"review": "pending"') == 1  # only the new task
        assert len(committed.splitlines()) == 4
        assert len(github.pulls) == 1


def test_llm_miner_sends_masked_text_and_keeps_only_valid_judges(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    work, _, home = repo
    write_history(home, work, "claude")
    tasks = {"tasks": [
        {"prompt": "Write a decision brief on a new incident paging policy.",
         "judge": {"kind": "rule", "checks": [{"op": "section_present", "arg": "Key Risks"}]}},
        {"prompt": "Write a decision brief on a shared staging database.",
         "judge": {"kind": "rubric", "rubric": "Names the risks and a confidence level."}},
        {"prompt": "Write a decision brief on anything.",
         "judge": {"kind": "rule", "checks": [{"op": "mentions", "arg": "x"}]}},
        {"prompt": "A fourth task is one too many.", "judge": {"kind": "rubric", "rubric": "x"}},
    ]}

    def responder(request: dict) -> str:
        return "Here you go:\n```json\n" + json.dumps(tasks) + "\n```"

    config = (work / ".gitsleep.yml").read_text()
    with FakeOpenAIServer(responder) as server:
        (work / ".gitsleep.yml").write_text(
            config.replace("backend: offline", f"backend: openai\nbase_url: {server.base_url}")
            .replace("model: null", "model: small-model"))
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456789")
        result = harvest(capsys, work, "--from", "claude", "--llm", "--json")
        sent = json.dumps([r.body for r in server.requests])
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["llm_sessions"] == 4  # the sessions about the skill, one call each
    assert SECRET not in sent and "ops@acme.io" not in sent and "[REDACTED" in sent
    dropped = summary["dropped_tasks"]
    assert dropped["llm: over 3 tasks per session"] == 4
    assert dropped["duplicate within the harvest"] == 6  # the same two good tasks, 4 times
    assert any(k.startswith("llm: no valid judge (") and "unknown op 'mentions'" in k
               for k in dropped)
    records = [json.loads(line) for line in (work / HARVESTED).read_text().splitlines()]
    by_miner = sorted(r["source"]["miner"] for r in records)
    assert by_miner == ["llm", "llm", "rules", "rules", "rules"]
    assert run_cli(capsys, "--repo", str(work), "validate").code == 0


def test_usage_errors_are_one_line(repo: tuple[Path, Path, Path],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    work, _, home = repo
    (home / ".claude" / "projects").mkdir(parents=True)
    cases = [
        (["--from", "jsonl"], "--from jsonl needs the JSONL files"),
        (["--from", "codex"], ".codex/sessions: no such file or folder; give the codex history"),
        (["--from", "claude", "--since", "yesterday"], "--since 'yesterday': use a duration"),
        (["--from", "claude", "--llm"], "--llm needs a real model"),
        (["--from", "claude", "--output", "/tmp/elsewhere.jsonl"], "must be inside the repo"),
    ]
    for args, message in cases:
        result = harvest(capsys, work, *args)
        assert result.code == 2, (args, result.err)
        assert message in result.err and "Traceback" not in result.err


def test_llm_miner_keeps_the_budget_in_money(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """`budget.max_cost` holds for `harvest --llm` as for every command that spends calls:
    the second call, estimated from the first, would pass it and is never sent."""
    work, _, home = repo
    write_history(home, work, "claude")
    config = (work / ".gitsleep.yml").read_text()
    with FakeOpenAIServer(lambda request: '{"tasks": []}') as server:
        (work / ".gitsleep.yml").write_text(
            config.replace("backend: offline", f"backend: openai\nbase_url: {server.base_url}")
            .replace("model: null", "model: small-model")
            + "budget: {max_cost: 0.000001}\n"
            + "prices: {small-model: {prompt: 1000.0, completion: 1000.0}}\n")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key-123456789")
        result = harvest(capsys, work, "--from", "claude", "--llm", "--json")
        sent = len(server.requests)
    assert sent == 1, (sent, result.err)
    assert "budget.max_cost" in result.out + result.err
