"""The optimizer learns from the work. A failing workspace task shows
it the diff the agent made (redacted first, then clipped) and the failing checks' output
tails, not only the agent's final message. Real folders, a real agent process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
from gitsleep.base.redact import Redactor
from gitsleep.core import reflect
from gitsleep.core.cache import ResponseCache
from gitsleep.core.models import Answer, Check, Judge, SampleResult, Score, Task, TaskResult
from gitsleep.core.ports import ModelCall
from gitsleep.git_forge.task_trees import WorkspaceCache, tree_id
from gitsleep.sandbox.workspace import DIFF_MAX_CHARS, unified_diff
from tests.support.fake_agents import install
from tests.support.gitrepo import isolate_git, make_repo

SECRET = "sk-proj-" + "Zq7" * 12  # an OpenAI-shaped key: known to the redactor by shape


def test_the_diff_shows_added_changed_and_removed_files(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    for root in (before, after):
        (root / "pkg").mkdir(parents=True)
    (before / "CHANGELOG.md").write_text("# Changelog\n")
    (after / "CHANGELOG.md").write_text("# Changelog\n- Add the --watch flag\n")
    (before / "pkg/old.py").write_text("x = 1\n")
    (after / "pkg/new.py").write_text("y = 2\n")
    text = unified_diff(before, after, ["CHANGELOG.md", "pkg/new.py", "pkg/old.py"])
    assert "--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n" in text
    assert "+- Add the --watch flag" in text
    assert "--- /dev/null\n+++ b/pkg/new.py" in text and "+y = 2" in text
    assert "--- a/pkg/old.py\n+++ /dev/null" in text and "-x = 1" in text


def test_the_diff_is_redacted_before_it_is_clipped(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    (before / "big.txt").write_text("")
    filler = "line of work\n" * ((DIFF_MAX_CHARS - 40) // 13)
    (after / "big.txt").write_text(filler + f"token = {SECRET}\n" + "more\n" * 500)
    text = unified_diff(before, after, ["big.txt"], redact=Redactor().redact)
    assert len(text) <= DIFF_MAX_CHARS
    assert "Zq7Zq7" not in text  # no part of the key, even where the clip falls
    assert text.endswith("(diff clipped)")
    binary = tmp_path / "after" / "blob.bin"
    binary.write_bytes(b"\0\1\2")
    assert "Binary file blob.bin" in unified_diff(before, after, ["blob.bin"])


def test_a_failing_workspace_task_shows_the_optimizer_its_diff_and_check_tails() -> None:
    task = Task("cl-1", "Add a changelog entry for --watch.", "train",
                Judge("rule", (Check("command", '["python", "check.py"]'),)),
                workspace="evals/fx")
    diff = "--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n@@ -1 +1,2 @@\n # Changelog\n+- watch\n"
    reason = ('failed: command ["python", "check.py"] [exited 1: AssertionError: '
              'CHANGELOG.md has no "## Unreleased" heading]')
    failing = TaskResult("cl-1", "train", [SampleResult(0, "Done: edited CHANGELOG.md.", None,
                                                        Score(0.0, 0.0, reason), diff=diff)])
    prompt = reflect.build_prompt(
        reflect.Evidence("skill", "# Skill\n", [failing], [], {"cl-1": task}, []), 2)
    assert "<<<AGENT_DIFF\n" + diff.rstrip("\n") + "\nAGENT_DIFF>>>" in prompt
    assert 'has no "## Unreleased" heading' in prompt  # the check's output tail
    assert "Done: edited CHANGELOG.md." in prompt  # and still the final message


def test_the_agent_backend_carries_its_diff_with_the_answer_and_the_cache_keeps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    agent = install("editor", tmp_path)
    work, _ = make_repo(tmp_path, {"evals/fx/CHANGELOG.md": "# Changelog\n"})
    backend = AgentCliBackend(AgentSpec(command=(str(agent),)), env={"PATH": "/usr/bin:/bin"},
                             trees=WorkspaceCache())
    call = ModelCall("answer", "m", (("system", "doc"), ("user", "Add --watch.")), context={
        "documents": ["doc"], "skill": "doc", "memory": None,
        "workspace": {"folder": "evals/fx", "tree": tree_id(work, "HEAD", "evals/fx"),
                      "repo": str(work), "checks": [["changed_files_max", "0"]]}})
    try:
        answer = backend.complete(call)
    finally:
        backend.close()
    assert answer.ok and answer.checks == ((0, False, answer.checks[0][2]),)
    assert answer.diff is not None and "+- Add the --watch flag" in answer.diff
    assert "AGENTS.md" not in answer.diff  # the installed skill is not the agent's work
    cache = ResponseCache(tmp_path / "cache")
    cache.put("k" * 64, answer)
    assert ResponseCache(tmp_path / "cache").get("k" * 64) == Answer(
        text=answer.text, prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens, checks=answer.checks, diff=answer.diff)
    stored = json.loads(next((tmp_path / "cache").rglob("*.json")).read_text())
    assert stored["diff"] == answer.diff
