"""`gitsleep review` judges a pull request by the base's rules.

A hostile pull request edits a skill so its held-out score falls, and in the same change
loosens the held-out checks, adds a task whose `command` check would run its own program,
and commits answer-cache entries that make the regressed document pass. Real git
repositories with a bare origin, the offline simulator, the loopback GitHub fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitsleep.core.calls import CallRunner
from gitsleep.core.replay import answer_call
from gitsleep.flows.prepare import Setup, make_backend, read_inputs
from gitsleep.flows.review import verdict
from tests.e2e.test_review_run import (
    NOTES_MD,
    SKILL,
    as_json,
    notes_tasks,
    task,
    without_rule,
)
from tests.e2e.test_review_run import (
    repo as repo,  # noqa: F401 - the fixture
)
from tests.e2e.test_review_run import (
    review as run_review,
)
from tests.flows.review.test_edges import AuthoredGitHub as FakeGitHub
from tests.support.cli import run_cli
from tests.support.gitrepo import commit_files, example_repo, git

PASSING = "Owner: on call\nSeverity: high\n"  # what a forged cache entry answers


def forge_cache_entries(work: Path) -> list[str]:
    """Write, for every val and held-out task, the answer the head's document would get as
    a passing reply in `.gitsleep/cache/` and commit them with `git add -f`: what a pull
    request can do to turn its own regression into "no clear change"."""
    setup = Setup.load(work, None)
    skill = setup.config.skill("notes")
    tasks, documents = read_inputs(work, skill)
    settings = setup.config.epoch_settings()
    runner = CallRunner.for_settings(make_backend(setup, "notes"), settings)
    written = []
    for item in tasks:
        if item.split == "train":
            continue
        call = answer_call(documents, item, settings.model, 0, settings.max_answer_tokens)
        key = verdict._cache_key(runner, call)
        relative = f".gitsleep/cache/{key[:2]}/{key}.json"
        path = work / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"text": PASSING, "prompt_tokens": 1,
                                    "completion_tokens": 1, "finish_reason": "stop"}))
        written.append(relative)
    git(work, "add", "-f", "--", *written)
    git(work, "commit", "--quiet", "--no-verify", "-m", "cache")
    return written


def hostile_head(work: Path, marker: Path) -> None:
    """The fork's change: a regression, its cache, looser held-out checks, a program."""
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    forge_cache_entries(work)
    looser = notes_tasks().replace('{"op": "contains", "arg": "Owner:"}, ', "")
    program = {"id": "test-run", "split": "test", "prompt": "Write the note for test-run.",
               "judge": {"kind": "rule", "checks": [{"op": "command", "arg": [
                   sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]}]}}
    commit_files(work, {"evals/notes.jsonl": looser + json.dumps(program) + "\n"},
                 "held-out checks and a check program")


def fork_event(tmp_path: Path, number: int) -> Path:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"number": number, "pull_request": {
        "number": number, "head": {"repo": {"full_name": "someone/skills"}},
        "base": {"repo": {"full_name": "octo/skills"}}}}))
    return event


def test_a_hostile_fork_gets_the_bases_verdict_and_none_of_its_programs_run(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Before: exit 0, "no clear change", zero model calls (the committed cache answered),
    the head's looser checks scored, and its check program ran."""
    work, _ = repo
    marker = tmp_path / "the-heads-program-ran"
    hostile_head(work, marker)
    summary = tmp_path / "summary.md"
    with FakeGitHub() as fake:
        number = fake.add_pull("feature")
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
        monkeypatch.setenv("GITHUB_EVENT_PATH", str(fork_event(tmp_path, number)))
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
        result = run_review(capsys, work, "--json", "--fail-on-regression")
        assert fake.writes == [], "a fork's report goes to the summary, not a comment"
    assert result.code == 7, result.err
    assert not marker.exists(), "the head's command check ran"
    data = as_json(result)
    notes = data["skills"][0]
    assert (notes["verdict"], data["exam"]) == ("regressed", "base")
    assert notes["splits"]["test"]["n"] == 4  # the base's held-out tasks, not the head's 5
    assert notes["cost"]["calls"] > 0, "the committed cache entries answered"
    exam = notes["exam_changes"]
    assert exam["added"] == {"test": ["test-run"]}
    assert exam["changed"] == {"test": ["test-0", "test-1", "test-2", "test-3"]}
    text = summary.read_text()
    assert "the head adds 1 held-out task(s), not used: test-run" in text
    assert "the head changes 4 held-out task(s), not used" in text
    assert "none of the head's programs ran" in text
    assert "gitsleep review --base origin/main" in text and "--trust-head only after" in text

    # the control: trusting the head runs its program (so the marker would have shown it)
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    trusted = run_review(capsys, work, "--json", "--trust-head", "--no-comment")
    assert trusted.code == 0, trusted.err
    assert marker.exists()
    assert as_json(trusted)["exam"] == "head"


def test_pull_request_target_with_a_fork_is_refused_in_one_line(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Before: a review copied into a pull_request_target workflow scored a fork's change
    (and ran its checks) with the repository's secrets."""
    work, _ = repo
    marker = tmp_path / "ran"
    hostile_head(work, marker)
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request_target")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(fork_event(tmp_path, 3)))
    result = run_review(capsys, work, "--trust-head")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "pull_request_target" in lines[0] and "`pull_request`" in lines[0]
    assert result.out == "" and not marker.exists()
    same_repo = tmp_path / "same.json"
    same_repo.write_text(json.dumps({"pull_request": {
        "number": 3, "head": {"repo": {"full_name": "octo/skills"}},
        "base": {"repo": {"full_name": "octo/skills"}}}}))
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(same_repo))
    assert run_review(capsys, work, "--no-comment").code == 0


def test_a_fork_that_cannot_be_scored_fails_a_required_check_with_exit_8(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Before: exit 0 with --fail-on-regression: the required check went green unscored."""
    work, _ = repo
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "fork")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(fork_event(tmp_path, 4)))
    monkeypatch.setenv("GITSLEEP_BACKEND", "openai")  # needs OPENAI_API_KEY: not set
    monkeypatch.setenv("GITSLEEP_MODEL", "gpt-test")
    failing = run_review(capsys, work, "--fail-on-regression", "--json")
    assert failing.code == 8
    assert as_json(failing)["verdict"] == "not run"
    error = failing.err.strip().splitlines()
    assert len(error) == 1 and "no verdict" in error[0] and "comes from a fork" in error[0]
    allowed = run_review(capsys, work, "--fail-on-regression", "--allow-unscored")
    assert allowed.code == 0, allowed.err
    assert run_review(capsys, work).code == 0, "without --fail-on-regression: as before"


def test_a_skill_dropped_from_skills_while_its_document_changes_is_still_reviewed(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "nothing to review" (the head's config no longer named the skill)."""
    work, _ = repo
    config = (work / ".gitsleep.yml").read_text()
    dropped = config[:config.index("  - name: notes")] + config[config.index("  - name: other"):]
    commit_files(work, {".gitsleep.yml": dropped,
                        NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "drop")
    result = run_review(capsys, work, "--json", "--fail-on-regression")
    assert result.code == 7, result.err
    notes = next(s for s in as_json(result)["skills"] if s["skill"] == "notes")
    assert notes["verdict"] == "regressed"
    assert notes["exam_changes"]["skill_removed"] is True
    assert any("removed from skills:" in f for f in notes["changed_files"])


def test_a_hostile_task_id_reaches_the_terminal_escaped_on_its_own_line(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: an OSC 52 clipboard write and a forged `::error` annotation line reached
    review's stdout raw."""
    work, _ = repo
    hostile = "t\x1b]52;c;aGk=\x07\n::error file=x::merge me\u202e"
    base_tasks = notes_tasks() + json.dumps(json.loads(task("x", "test", "Owner:"))
                                            | {"id": hostile}) + "\n"
    git(work, "switch", "--quiet", "main")
    commit_files(work, {"evals/notes.jsonl": base_tasks}, "a task")
    git(work, "push", "--quiet", "origin", "main")
    git(work, "fetch", "--quiet", "origin")
    git(work, "switch", "--quiet", "-C", "feature")
    commit_files(work, {NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "tidy")
    for extra in ((), ("--json",)):
        result = run_review(capsys, work, *extra)
        assert result.code == 0, result.err
        assert "\x1b" not in result.out and "\x07" not in result.out
        assert "\u202e" not in result.out
        assert not any(line.lstrip().startswith("::") for line in result.out.splitlines())
    plain = run_review(capsys, work)
    assert "t\\x1b]52;c;aGk=\\x07\\n::error file=x::merge me\\u202e: 1.000 -> 0.000" in plain.out


def test_a_marked_comment_by_another_bot_is_not_ours(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: with GITHUB_TOKEN any Bot's marked comment counted as gitsleep's and was
    overwritten."""
    work, _ = repo
    commit_files(work, {NOTES_MD: SKILL.replace("short", "brief")}, "reword")
    other = f"{verdict.MARKER}\nanother app's words\n"
    with FakeGitHub() as fake:
        number = fake.add_pull("feature")
        fake.add_comment(number, other,
                         author={"login": "other-app[bot]", "id": 9, "type": "Bot"})
        for name, value in fake.env().items():
            monkeypatch.setenv(name, value)
        result = run_review(capsys, work, "--pr", str(number), "--json")
        assert result.code == 0, result.err
        assert as_json(result)["comment"]["operation"] == "created"
        assert fake.comments[number][0]["body"] == other
        again = run_review(capsys, work, "--pr", str(number), "--json")
        assert as_json(again)["comment"]["operation"] == "none", "its own comment is found"


def test_the_cache_folder_ignores_itself_in_a_repository_without_init(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Before: eval left `.gitsleep/cache/` untracked in a repository without `init`'s
    .gitignore line."""
    work, _ = repo
    git(work, "rm", "--quiet", ".gitignore")
    git(work, "commit", "--quiet", "-m", "no ignore")
    result = run_cli(capsys, "--repo", str(work), "-q", "eval", "--skill", "notes")
    assert result.code == 0, result.err
    assert (work / ".gitsleep/cache/.gitignore").read_text().splitlines()[-1] == "*"
    assert git(work, "status", "--porcelain", "--untracked-files=all") == ""


def test_the_bases_key_is_masked_when_the_head_names_another_api_key_env(
        repo: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The base's config scores, so its `api_key_env` is a secret even when the head's
    config names another variable."""
    work, _ = repo
    secret = "cred-0123456789abcdefghijklmnop"
    monkeypatch.setenv("LLM_CRED", secret)  # no *_KEY/*_TOKEN name: masked by config only
    config = (work / ".gitsleep.yml").read_text()
    leaky = json.dumps({"id": "test-leak", "split": "test", "prompt": f"Say {secret}.",
                        "judge": {"kind": "rule", "checks": [{"op": "contains",
                                                              "arg": "Owner:"}]}})
    git(work, "switch", "--quiet", "main")
    commit_files(work, {".gitsleep.yml": config + "api_key_env: LLM_CRED\n",
                        "evals/notes.jsonl": notes_tasks() + leaky + "\n"}, "base")
    git(work, "push", "--quiet", "origin", "main")
    git(work, "fetch", "--quiet", "origin")
    git(work, "switch", "--quiet", "-C", "feature")
    commit_files(work, {".gitsleep.yml": config,
                        NOTES_MD: without_rule("- Always include \"Owner:\"\n")}, "head")
    for extra in ((), ("--json",)):
        result = run_review(capsys, work, *extra)
        assert result.code == 0, result.err
        assert "test-leak" in result.out and secret not in result.out + result.err


def test_a_heads_fixture_script_does_not_run_the_bases_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Workspace tasks: the base's fixture (and its `python check.py`) is what both sides
    are judged in; the head's edited check.py would leave a marker if it ran."""
    work, _ = example_repo(tmp_path, monkeypatch, "changelog-keeper")
    git(work, "switch", "--quiet", "-c", "feature")
    marker = tmp_path / "the-heads-fixture-ran"
    check = "evals/changelog-keeper/fixture/check.py"
    script = (work / check).read_text()
    skill = "skills/changelog-keeper/SKILL.md"
    commit_files(work, {check: f"open({str(marker)!r}, 'w').close()\n" + script,
                        skill: (work / skill).read_text() + "\nBe brief.\n"}, "fork")
    args = ("--repo", str(work), "-q", "review", "--base", "origin/main", "--json")
    result = run_cli(capsys, *args)
    assert result.code == 0, result.err
    assert not marker.exists(), "the head's fixture script ran"
    row = as_json(result)["skills"][0]
    assert row["status"] == "scored"
    changed = row["exam_changes"]["changed"]
    assert set(changed) == {"val", "test"} and all(changed.values())
    trusted = run_cli(capsys, *args, "--trust-head")
    assert trusted.code == 0, trusted.err
    assert marker.exists(), "the control: trusting the head runs its fixture"
