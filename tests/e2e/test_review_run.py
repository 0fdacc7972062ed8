"""Whole `gitsleep review` runs: a real git repository with a bare origin, the offline
simulator answering, and the loopback GitHub fake holding the pull request's comment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.flows.review.test_edges import (
    AuthoredGitHub as FakeGitHub,  # comments carry their author
)
from tests.support.cli import CliResult, run_cli
from tests.support.fake_github import not_permitted
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.gitrepo import clone, commit_files, git, isolate_git, make_repo, snapshot

NOTES_MD = "skills/notes/SKILL.md"
LEARNED = ("- Always include \"Owner:\"\n"
           "- Always include \"Severity:\"\n")
SKILL = ("# Incident notes\n\nWrite short incident notes.\n\n"
         "<!-- gitsleep:learned:start -->\n## Learned rules\n\n" + LEARNED
         + "<!-- gitsleep:learned:end -->\n")
CONFIG = """version: 1
backend: offline
skills:
  - name: notes
    skill: skills/notes/SKILL.md
    tasks:
      - path: evals/notes.jsonl
  - name: other
    skill: skills/other/SKILL.md
    tasks:
      - path: evals/other.jsonl
gate:
  metric: hard
  min_delta: 0.0
"""


def task(task_id: str, split: str, *needles: str) -> str:
    checks = [{"op": "contains", "arg": n} for n in needles]
    return json.dumps({"id": task_id, "split": split, "prompt": f"Write the note for {task_id}.",
                       "judge": {"kind": "rule", "checks": checks}})


def notes_tasks() -> str:
    lines = [task(f"tr-{i}", "train", "Owner:") for i in range(3)]
    lines += [task(f"val-{i}", "val", "Severity:") for i in range(3)]
    lines += [task(f"test-{i}", "test", "Owner:", "Severity:") for i in range(4)]
    return "\n".join(lines) + "\n"


FILES = {
    ".gitsleep.yml": CONFIG,
    ".gitignore": ".gitsleep/\n",
    NOTES_MD: SKILL,
    "evals/notes.jsonl": notes_tasks(),
    "skills/other/SKILL.md": "# Other\n\nAlways include \"Done.\"\n",
    "evals/other.jsonl": "\n".join([task("o-val", "val", "Done."),
                                    task("o-test", "test", "Done.")]) + "\n",
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "GITHUB_EVENT_PATH", "GITHUB_REF", "GITHUB_STEP_SUMMARY", "GITSLEEP_MODEL",
                 "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL", "GITSLEEP_FAIL_ON_REGRESSION",
                 "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    work, origin = make_repo(tmp_path, dict(FILES))
    git(work, "switch", "--quiet", "-c", "feature")
    return work, origin


def review(capsys: pytest.CaptureFixture[str], work: Path, *extra: str) -> CliResult:
    return run_cli(capsys, "--repo", str(work), "-q", "review", "--base", "origin/main", *extra)


def as_json(result: CliResult) -> dict:
    assert result.out.strip(), result.err
    return json.loads(result.out)


def user_files(work: Path) -> dict[str, object]:
    """The user's checkout minus `.gitsleep/` (the ignored answer cache, written by design)."""
    state = snapshot(work)
    files = state["files"]
    assert isinstance(files, dict)
    state["files"] = {k: v for k, v in files.items() if not k.startswith(".gitsleep/")}
    return state


def without_rule(rule: str) -> str:
    return SKILL.replace(rule, "")


def test_comment_created_once_updated_after_a_push_and_left_alone_when_unchanged(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: SKILL.replace("short incident notes", "brief notes")},
                 "reword the skill")
    with FakeGitHub() as fake:
        number = fake.add_pull("feature", title="a person's change")
        fake.add_comment(number, "LGTM, a person")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GITHUB_REF", f"refs/pull/{number}/merge")
        before = user_files(work)

        first = review(capsys, work, "--json")
        assert first.code == 0, first.err
        data = as_json(first)
        assert data["comment"]["operation"] == "created"
        writes = [(w.method, w.path) for w in fake.writes]
        assert writes == [("POST", f"/repos/octo/skills/issues/{number}/comments")]
        ours = fake.comments[number][1]
        assert ours["body"].startswith("<!-- gitsleep:review -->\n")
        assert "| notes | held-out | 4 | 1.000 | 1.000 | +0.000 |" in ours["body"]
        assert "other: skipped: nothing changed" in ours["body"]
        assert "gitsleep review --base origin/main" in ours["body"]
        first_cost = data["skills"][0]["cost"]
        assert first_cost["calls"] > 0

        second = review(capsys, work, "--json")
        assert second.code == 0, second.err
        assert as_json(second)["comment"]["operation"] == "none"
        assert len(fake.writes) == 1, "no API write when the comment already says this"
        assert as_json(second)["skills"][0]["cost"]["calls"] == 0, "answers come from the cache"
        assert user_files(work) == before, "the user's tree, index and HEAD are untouched"

        commit_files(work, {NOTES_MD: without_rule("- Always include \"Severity:\"\n")},
                     "drop the severity rule")
        third = review(capsys, work, "--json")
        assert third.code == 0, third.err  # without --fail-on-regression a drop is a verdict
        assert as_json(third)["comment"]["operation"] == "updated"
        assert [w.method for w in fake.writes] == ["POST", "PATCH"]
        assert len(fake.comments[number]) == 2, "one comment per pull request, edited in place"
        body = fake.comments[number][1]["body"]
        assert "## gitsleep review: regression" in body
        assert "| notes | held-out | 4 | 1.000 | 0.000 | -1.000 |" in body
        assert fake.comments[number][0]["body"] == "LGTM, a person"
    assert git(work, "worktree", "list").count("\n") == 0, "no worktree was made"


def test_a_hand_edit_that_removes_a_learned_rule_exits_7_with_fail_on_regression(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")},
                 "tidy the rules")

    plain = review(capsys, work)
    assert plain.code == 0, plain.err
    # a person's change: val and held-out judged together
    assert "notes: regressed (decided by val + held-out)" in plain.out
    assert "held-out n=4    hard 1.000 -> 0.000  change -1.000" in plain.out
    assert "test-0: 1.000 -> 0.000" in plain.out

    failing = review(capsys, work, "--fail-on-regression", "--json")
    assert failing.code == 7
    data = as_json(failing)
    notes = data["skills"][0]
    assert (notes["verdict"], notes["decided_by"]) == ("regressed", "both")
    held_out = notes["splits"]["test"]
    assert (held_out["before"], held_out["after"], held_out["n"]) == (1.0, 0.0, 4)
    assert held_out["ci_high"] < 0
    assert {t["id"] for t in held_out["changed_tasks"]} == {f"test-{i}" for i in range(4)}
    assert notes["splits"]["val"]["change"] == 0.0  # val checks only Severity:
    assert data["regression"] is True and data["exit_code"] == 7

    monkeypatch.setenv("GITSLEEP_FAIL_ON_REGRESSION", "true")  # how the Action's step sets it
    assert review(capsys, work).code == 7


def test_exit_7_only_while_the_held_out_interval_is_below_zero(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    commit_files(work, {"skills/other/SKILL.md": "# Other\n\nBe brief.\n"}, "other changes")
    # `other` falls from 1.0 to 0.0 on one held-out task: the interval is one point, below 0
    result = review(capsys, work, "--fail-on-regression", "--skill", "other", "--json")
    assert result.code == 7
    commit_files(work, {"skills/other/SKILL.md": "# Other\n\nAlways include \"Done.\"\n\n"},
                 "restore")
    result = review(capsys, work, "--fail-on-regression", "--json")
    assert result.code == 0, result.err
    assert as_json(result)["skills"][1]["verdict"] == "no clear change"


def test_an_untouched_skill_is_skipped_with_one_line_and_all_scores_it(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    commit_files(work, {"evals/notes.jsonl": notes_tasks() + task("test-9", "test", "Owner:")
                        + "\n"}, "add a task")
    result = review(capsys, work)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert "other: skipped: nothing changed: its documents and task files are the same at " \
           "origin/main and the head" in lines
    assert any(line.startswith("notes: no clear change") and "evals/notes.jsonl" in line
               for line in lines)
    everything = as_json(review(capsys, work, "--skill", "all", "--json"))
    assert [s["status"] for s in everything["skills"]] == ["scored", "scored"]


@pytest.mark.parametrize("ref", ["no-such-branch", "0123456789abcdef0123456789abcdef01234567",
                                 "--upload-pack=touch pwned"])
def test_a_bad_ref_is_exit_2_in_one_line(repo: tuple[Path, Path],
                                         capsys: pytest.CaptureFixture[str], ref: str) -> None:
    work, _ = repo
    result = run_cli(capsys, "--repo", str(work), "review", "--base", ref)
    assert result.code == 2
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert "--base" in result.err and ("fetch" in result.err or "revision" in result.err)
    assert not (work / "pwned").exists()


def test_a_shallow_clone_missing_the_base_says_to_fetch_it(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    work, origin = repo
    base = git(work, "rev-parse", "main")
    commit_files(work, {NOTES_MD: SKILL + "\nMore.\n"}, "one")
    git(work, "push", "--quiet", "origin", "feature")
    git(origin, "symbolic-ref", "HEAD", "refs/heads/feature")
    shallow = clone(origin, tmp_path / "shallow", depth=1)
    result = run_cli(capsys, "--repo", str(shallow), "review", "--base", base)
    assert result.code == 2
    assert "shallow clone" in result.err and "fetch-depth: 0" in result.err
    assert len(result.err.strip().splitlines()) == 1


def on_base(work: Path, files: dict[str, str], message: str) -> None:
    """Commit `files` to the base (origin/main) and come back to a fresh feature branch."""
    git(work, "switch", "--quiet", "main")
    commit_files(work, files, message)
    git(work, "push", "--quiet", "origin", "main")
    git(work, "fetch", "--quiet", "origin")
    git(work, "switch", "--quiet", "-C", "feature")


def test_a_heads_scoring_setting_is_listed_and_the_bases_decides(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a config that differed in a scoring setting was exit 2 (and one that moved
    the judge through `optimizer_model` passed as "not scoring"); now the base's settings
    score both sides, and the head's are listed, never used."""
    work, _ = repo
    changed = CONFIG.replace("metric: hard", "metric: soft") + "optimizer_model: grader\n"
    commit_files(work, {".gitsleep.yml": changed,
                        NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "metric")
    result = review(capsys, work, "--json", "--fail-on-regression")
    assert result.code == 7, result.err  # the base's hard metric: 1.0 -> 0.0
    notes = as_json(result)["skills"][0]
    assert notes["exam_changes"]["settings"] == ["gate.metric"]
    plain = review(capsys, work)
    assert "  exam: the head changes scoring settings, not used: gate.metric" in plain.out
    assert "notes: regressed" in plain.out


def test_a_config_change_that_only_adds_a_task_file_is_reviewed_on_the_bases_tasks(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    config = CONFIG.replace("      - path: evals/notes.jsonl\n",
                            "      - path: evals/notes.jsonl\n      - path: evals/extra.jsonl\n")
    commit_files(work, {".gitsleep.yml": config + "workers: 2\n",
                        "evals/extra.jsonl": task("x-test", "test", "Owner:") + "\n"},
                 "a task file")
    data = as_json(review(capsys, work, "--json"))
    assert data["skills"][0]["status"] == "scored"
    assert "evals/extra.jsonl" in data["skills"][0]["changed_files"]
    assert data["skills"][0]["splits"]["test"]["n"] == 4, "the head's new task is not used"
    assert data["skills"][0]["exam_changes"]["added"] == {"test": ["x-test"]}
    assert data["exam"] == "base"
    trusted = as_json(review(capsys, work, "--json", "--trust-head"))
    assert trusted["skills"][0]["splits"]["test"]["n"] == 5 and trusted["exam"] == "head"
    assert "--trust-head" in trusted["rerun"]


def test_a_base_config_that_no_longer_parses_is_no_verdict_unless_the_head_is_trusted(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the head's config scored both sides; with the exam from the base, a base
    without a usable config gives no verdict, and exit 8 under --fail-on-regression."""
    work, _ = repo
    git(work, "switch", "--quiet", "main")
    commit_files(work, {".gitsleep.yml": CONFIG + "retired_key: 1\n"}, "an old key")
    git(work, "switch", "--quiet", "-c", "fix")
    commit_files(work, {".gitsleep.yml": CONFIG,
                        NOTES_MD: SKILL.replace("short", "brief")}, "fix the config")
    base = ("--repo", str(work), "review", "--base", "main")
    result = run_cli(capsys, *base, "--json")
    assert result.code == 0, result.err
    data = as_json(result)
    notes = data["skills"][0]
    assert notes["status"] == "unscored" and data["verdict"] == "not scored"
    assert "no longer parses" in notes["reason"] and "retired_key" in notes["reason"]
    assert "--trust-head" in notes["reason"]
    failing = run_cli(capsys, *base, "--fail-on-regression")
    assert failing.code == 8
    assert "no verdict" in failing.err and "--allow-unscored" in failing.err
    assert len(failing.err.strip().splitlines()) == 1, failing.err
    assert run_cli(capsys, *base, "--fail-on-regression", "--allow-unscored").code == 0
    trusted = run_cli(capsys, *base, "--json", "--trust-head", "--fail-on-regression")
    assert trusted.code == 0, trusted.err
    assert as_json(trusted)["skills"][0]["status"] == "scored"


def test_a_fork_pull_request_without_secrets_says_so_in_the_summary(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: SKILL.replace("short", "brief")}, "from a fork")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": 4, "pull_request": {
        "number": 4, "head": {"repo": {"full_name": "someone/skills"}},
        "base": {"repo": {"full_name": "octo/skills"}}}}))
    summary = tmp_path / "summary.md"
    with FakeGitHub() as fake:
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        monkeypatch.setenv("GITSLEEP_BACKEND", "openai")  # needs OPENAI_API_KEY: not set
        monkeypatch.setenv("GITSLEEP_MODEL", "gpt-test")
        result = review(capsys, work, "--comment")
        assert fake.writes == []
    assert result.code == 0, result.err
    text = summary.read_text()
    assert "comes from a fork" in text and "no secrets" in text
    assert "gitsleep review --base origin/main" in text
    assert "review: not run" in result.out


def test_answers_in_the_comment_are_redacted_clipped_and_escaped(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    secret = "sk-live-0123456789abcdefghijklmnop"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    hostile = json.dumps({"id": "test-h", "split": "test",
                          "prompt": f"{secret} <img src=x> | @octo #12 " + "x" * 300,
                          "judge": {"kind": "rule", "checks": [{"op": "contains",
                                                                "arg": "Owner:"}]}})
    on_base(work, {"evals/notes.jsonl": notes_tasks() + hostile + "\n"}, "hostile")
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    with FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        result = review(capsys, work, "--pr", str(number), "--json")
        assert result.code == 0, result.err
        sent = fake.sent_text()
        body = fake.comments[number][0]["body"]
    assert secret not in sent and secret not in result.out
    row = next(line for line in body.splitlines() if line.startswith("| test-h |"))
    assert "[REDACTED" in row
    assert "<img" not in row and "&lt;img" in row and "\\|" in row
    assert "@octo" not in row and "#12" not in row
    assert "x" * 200 not in row and "…" in row  # clipped


def test_a_refused_comment_is_exit_4_after_the_verdict(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    with FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        fake.fail_next(not_permitted(method="POST", path_contains="/comments"))
        result = review(capsys, work, "--pr", str(number), "--fail-on-regression")
    assert result.code == 7  # the highest code wins: 7 (regression) over 4 (forge)
    assert "notes: regressed" in result.out
    assert "gitsleep: error: comment: GitHub refused" in result.err
    assert fake.token not in result.err
    commit_files(work, {NOTES_MD: SKILL.replace("short", "brief")}, "no regression now")
    with FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        fake.fail_next(not_permitted(method="POST", path_contains="/comments"))
        result = review(capsys, work, "--pr", str(number))
    assert result.code == 4, result.err


def test_the_openai_backend_reviews_and_its_failures_are_exit_3_never_a_regression(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    with FakeOpenAIServer(api_key="sk-right-0123456789abcdef") as server, FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GITSLEEP_BACKEND", "openai")
        monkeypatch.setenv("GITSLEEP_BASE_URL", server.base_url)
        monkeypatch.setenv("GITSLEEP_MODEL", "echo-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-right-0123456789abcdef")
        working = review(capsys, work, "--pr", str(number), "--json",
                         "--fail-on-regression")
        assert working.code == 0, working.err  # the echo model follows no rule: no change
        assert server.request_count > 0
        assert as_json(working)["skills"][0]["verdict"] == "no clear change"

        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0123456789abcdef")
        monkeypatch.setenv("GITSLEEP_MODEL", "another-model")  # not cached
        failing = review(capsys, work, "--pr", str(number), "--fail-on-regression")
        assert failing.code == 3, failing.err
        assert len(failing.err.strip().splitlines()) == 1
        assert "sk-wrong" not in failing.err
        assert [w.method for w in fake.writes] == ["POST"], "no comment from a failed run"


def test_a_fork_pull_request_whose_agent_needs_a_secret_says_so_too(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work, _ = repo
    agent = ("backend: command\noptimizer_backend: offline\njudge_backend: offline\n"
             "agent:\n  command: [\"cat\"]\n  env:\n    AGENT_TOKEN: $AGENT_TOKEN\n")
    commit_files(work, {".gitsleep.yml": CONFIG.replace("backend: offline\n", agent)},
                 "an agent CLI")
    git(work, "push", "--quiet", "origin", "feature:main")
    git(work, "fetch", "--quiet", "origin")
    commit_files(work, {NOTES_MD: SKILL.replace("short", "brief")}, "from a fork")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {
        "number": 4, "head": {"repo": {"full_name": "someone/skills"}},
        "base": {"repo": {"full_name": "octo/skills"}}}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = review(capsys, work)
    assert result.code == 0, result.err
    text = (tmp_path / "summary.md").read_text()
    assert "comes from a fork" in text and "AGENT_TOKEN" in text
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    assert review(capsys, work).code == 2, "outside a fork PR a missing secret is bad input"


def test_each_side_scores_val_and_held_out_with_gate_repeats_samples(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    commit_files(work, {".gitsleep.yml": CONFIG.replace("  min_delta: 0.0\n",
                                                        "  min_delta: 0.0\n  repeats: 3\n")},
                 "repeats")
    git(work, "push", "--quiet", "origin", "feature:main")
    git(work, "fetch", "--quiet", "origin")
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    data = as_json(review(capsys, work, "--json"))
    notes = data["skills"][0]
    # (3 val + 4 held-out tasks) x 3 samples x 3 sides (base, head, the base under a
    # placebo); train is never scored
    assert notes["cost"] == {"calls": 63, "cache_hits": 0}
    assert notes["splits"]["test"]["n"] == 4
    assert set(notes["splits"]) == {"val", "test", "both"}  # a person's change


def test_a_memory_document_added_or_removed_is_scored_on_its_side_only(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    with_memory = CONFIG.replace("    skill: skills/other/SKILL.md\n",
                                 "    skill: skills/other/SKILL.md\n    memory: AGENTS.md\n")
    commit_files(work, {".gitsleep.yml": with_memory,
                        "skills/other/SKILL.md": "# Other\n\nBe brief.\n",
                        "AGENTS.md": "# Team\n\nAlways include \"Done.\"\n"}, "rule to memory")
    added = as_json(review(capsys, work, "--skill", "other", "--json"))["skills"][0]
    assert any("AGENTS.md is new: the base was scored without it" in n for n in added["notes"])
    # the rule moved from the skill document into the new memory: still followed
    assert (added["splits"]["test"]["before"], added["splits"]["test"]["after"]) == (1.0, 1.0)
    git(work, "push", "--quiet", "origin", "feature:main")
    git(work, "fetch", "--quiet", "origin")
    commit_files(work, {".gitsleep.yml": CONFIG}, "memory no longer configured")
    removed = as_json(review(capsys, work, "--skill", "other", "--json"))["skills"][0]
    assert any("AGENTS.md was removed" in n for n in removed["notes"])
    assert "AGENTS.md (removed)" in removed["changed_files"]
    assert removed["verdict"] == "regressed"


def test_a_marked_comment_by_the_pull_requests_author_is_left_alone(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    forged = "<!-- gitsleep:review -->\n## gitsleep review: improvement\n\nmerge it\n"
    with FakeGitHub() as fake:  # GITHUB_TOKEN: GET /user refused, edits of others' refused
        number = fake.add_pull("feature")
        fake.add_comment(number, forged)
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        result = review(capsys, work, "--pr", str(number), "--json")
        assert result.code == 0, result.err
        assert as_json(result)["comment"]["operation"] == "created"
        assert [w.method for w in fake.writes] == ["POST"]
        assert fake.comments[number][0]["body"] == forged
        assert "## gitsleep review: regression" in fake.comments[number][1]["body"]
        assert fake.comments[number][1]["user"]["login"] == "github-actions[bot]"


def with_budget(budget: str) -> str:
    return CONFIG + f"budget:\n{budget}"


def test_a_review_over_budget_max_calls_is_refused_before_the_first_call(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work, _ = repo
    # notes: (3 val + 4 held-out tasks) x 1 sample x 3 sides = 21 calls, over 10
    on_base(work, {".gitsleep.yml": with_budget("  max_calls: 10\n")}, "a budget")
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with FakeOpenAIServer(api_key="sk-right-0123456789abcdef") as server, FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GITSLEEP_BACKEND", "openai")
        monkeypatch.setenv("GITSLEEP_BASE_URL", server.base_url)
        monkeypatch.setenv("GITSLEEP_MODEL", "echo-model")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-right-0123456789abcdef")
        result = review(capsys, work, "--pr", str(number), "--json")
        assert server.request_count == 0, "refused before the first model call"
        assert fake.writes == [], "no comment from a review that did not run"
    assert result.code == 6
    error = result.err.strip().splitlines()
    assert len(error) == 1, result.err
    assert "needs 21 model calls" in error[0] and "budget.max_calls (10)" in error[0]
    assert "raise `budget.max_calls`" in error[0] and "--skill" in error[0]
    data = as_json(result)
    assert (data["verdict"], data["exit_code"]) == ("not run", 6)
    assert "needs 21 model calls" in data["error"]
    assert "needs 21 model calls" in summary.read_text()


def test_answers_already_cached_do_not_count_against_budget_max_calls(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    first = as_json(review(capsys, work, "--json"))
    assert first["skills"][0]["cost"]["calls"] == 21
    commit_files(work, {".gitsleep.yml": with_budget("  max_calls: 1\n")}, "a tight budget")
    again = review(capsys, work, "--json")
    assert again.code == 0, again.err
    assert as_json(again)["skills"][0]["cost"] == {"calls": 0, "cache_hits": 21}


def test_a_budget_stop_mid_review_is_exit_6_with_one_clear_line(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    work, _ = repo
    on_base(work, {".gitsleep.yml": with_budget("  max_tokens: 1\n")}, "a budget")
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = review(capsys, work, "--json")
    assert result.code == 6
    error = result.err.strip().splitlines()
    assert len(error) == 1, result.err
    assert error[0].startswith("gitsleep: error: notes: the review stopped before a verdict")
    assert "budget.max_tokens (1) reached" in error[0]
    assert "raise `budget.max_tokens` in .gitsleep.yml" in error[0]
    data = as_json(result)
    assert (data["verdict"], data["exit_code"], data["regression"]) == ("not run", 6, False)
    assert "budget.max_tokens (1) reached" in (tmp_path / "summary.md").read_text()


AGENTS_CONFIG = CONFIG.replace("""    tasks:
      - path: evals/notes.jsonl
""", """    tasks:
      - path: evals/notes.jsonl
    agents:
      - {name: full, backend: offline, model: offline}
      - {name: short, backend: offline, model: offline-recent-2}
""")


def test_a_skills_own_agents_are_each_reviewed_and_one_agents_fall_exits_7(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A rule added at the end of the block keeps `full` at 1.000 but pushes `Owner:` out
    of what `short` (the last two directives) reads: the skill's own `agents:` decide."""
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {**FILES, ".gitsleep.yml": AGENTS_CONFIG})
    git(work, "switch", "--quiet", "-c", "feature")
    commit_files(work, {NOTES_MD: SKILL.replace(LEARNED, LEARNED + '- Always include "Done."\n')},
                 "one more rule")
    result = review(capsys, work, "--fail-on-regression", "--json", "--skill", "notes")
    assert result.code == 7, result.err
    notes = as_json(result)["skills"][0]
    by_name = {a["name"]: a for a in notes["agents"]}
    assert (by_name["full"]["verdict"], by_name["short"]["verdict"]) == ("no clear change",
                                                                       "regressed")
    assert by_name["short"]["splits"]["test"]["before"] == 1.0
    assert by_name["short"]["splits"]["test"]["after"] == 0.0


def test_a_pull_request_adding_a_command_agent_lists_it_and_never_runs_it(
        repo: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = repo
    marker = tmp_path / "ran"
    hostile = CONFIG + (f"agents:\n  - {{name: evil, backend: command, agent: {{command: "
                        f"[\"sh\", \"-c\", \"touch {marker}; echo hi\"]}}}}\n")
    commit_files(work, {".gitsleep.yml": hostile,
                        NOTES_MD: SKILL + "\nA hand edit.\n"}, "add an agent")
    result = review(capsys, work, "--json", "--skill", "notes")
    assert result.code == 0, result.err
    changes = as_json(result)["skills"][0]["exam_changes"]
    assert "agents" in changes["settings"]
    assert not marker.exists()
