"""The offline simulator answers workspace tasks, deterministically.

Its simulated agent works in a copy of the task's folder and follows the installed
documents literally: `Always create "<path>"` creates the file, `Always add "<text>" to
"<path>"` appends that line; its simulated optimizer proposes those directives for failed
`file_exists` / `file_contains` checks. Real git repositories, real check processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gitsleep.backends.offline import OfflineBackend, directive_for, simulate_answer
from gitsleep.core.ports import ModelCall
from gitsleep.git_forge.task_trees import WorkspaceCache, tree_id
from tests.support.cli import run_cli
from tests.support.gitrepo import isolate_git, make_repo
from tests.support.skills import CHANGELOG_SKILL

PY = sys.executable
SKILL = CHANGELOG_SKILL
HAS_HEADING = "import sys; sys.exit('## Unreleased' not in open('CHANGELOG.md').read())"
CHECKS = [
    ["file_contains", json.dumps({"path": "CHANGELOG.md", "text": "## Unreleased"})],
    ["file_exists", "docs/next.md"],
    ["command", json.dumps([PY, "-c", HAS_HEADING])],
    ["changed_files_max", "2"],
]


def call_for(work: Path, rules: str) -> ModelCall:
    skill = SKILL.format(rules=rules)
    return ModelCall("answer", "offline", (("system", skill), ("user", "Record --watch.")),
                     context={"documents": [skill], "skill": skill, "memory": None,
                              "workspace": {"folder": "evals/fx", "repo": str(work),
                                            "tree": tree_id(work, "HEAD", "evals/fx"),
                                            "checks": CHECKS}})


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    repo, _ = make_repo(tmp_path, {"evals/fx/CHANGELOG.md": "# Changelog\n"})
    return repo


def test_the_simulated_agent_follows_the_file_directives_in_the_workspace(work: Path) -> None:
    backend = OfflineBackend(trees=WorkspaceCache())
    try:
        bare = backend.complete(call_for(work, "- Keep entries short."))
        rules = ('- Always add "## Unreleased" to "CHANGELOG.md"\n'
                 '- Always create "docs/next.md"\n- Always create "../outside.md"')
        done = backend.complete(call_for(work, rules))
        again = backend.complete(call_for(work, rules))
    finally:
        backend.close()
    assert [ok for _, ok, _ in bare.checks or ()] == [False, False, False, True]
    assert bare.diff == ""  # it changed nothing
    assert [ok for _, ok, _ in done.checks or ()] == [True, True, True, True]
    assert done.diff is not None and "+## Unreleased" in done.diff
    assert "--- /dev/null\n+++ b/docs/next.md" in done.diff
    assert not (work / "evals/outside.md").exists()  # a path out of the folder is not run
    assert (again.text, again.checks, again.diff) == (done.text, done.checks, done.diff)
    assert done.text == simulate_answer([SKILL.format(rules=rules)], "Record --watch.")
    assert (work / "evals/fx/CHANGELOG.md").read_text() == "# Changelog\n"  # a copy


def test_a_bound_on_changes_fails_when_the_documents_ask_for_too_much(work: Path) -> None:
    rules = "\n".join(f'- Always create "notes/{n}.md"' for n in range(3))
    backend = OfflineBackend(trees=WorkspaceCache())
    try:
        answer = backend.complete(call_for(work, rules))
    finally:
        backend.close()
    assert answer.checks is not None
    assert answer.checks[3][1] is False and "3 file(s) changed, at most 2" in answer.checks[3][2]


def test_the_simulated_optimizer_proposes_file_directives() -> None:
    contains = json.dumps({"path": "CHANGELOG.md", "text": "## Unreleased"})
    assert directive_for("file_contains", contains) == (
        'Always add "## Unreleased" to "CHANGELOG.md"')
    assert directive_for("file_exists", "docs/next.md") == 'Always create "docs/next.md"'
    regex = json.dumps({"path": "CHANGELOG.md", "regex": r"Version:\s*2"})
    assert directive_for("file_contains", regex) == 'Always add "Version: 2" to "CHANGELOG.md"'
    quoted = json.dumps({"path": "a.md", "text": 'say "hi"'})
    assert directive_for("file_contains", quoted) == """Always add 'say "hi"' to "a.md\""""
    both = json.dumps({"path": "a.md", "text": """it's "x\""""})
    assert directive_for("file_contains", both) is None  # no quoting holds it
    assert directive_for("changed_files_max", "2") is None
    assert directive_for("command", json.dumps(["python", "check.py"])) is None


def test_the_file_directives_leave_the_text_answer_alone() -> None:
    rules = '- Always add "X" to "a.md"\n- Always create "b.md"\n- Always include "Hi"'
    assert simulate_answer([rules], "p") == simulate_answer(['- Always include "Hi"'], "p")


def test_offline_runs_workspace_tasks_end_to_end_and_validate_accepts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    isolate_git(monkeypatch, tmp_path)

    def task(tid: str, split: str) -> str:
        checks = [{"op": op, "arg": json.loads(arg) if op in ("file_contains", "command")
                   else (int(arg) if op == "changed_files_max" else arg)}
                  for op, arg in CHECKS]
        return json.dumps({"id": tid, "split": split, "workspace": "evals/fx",
                           "prompt": f"Record the change {tid}.",
                           "judge": {"kind": "rule", "checks": checks}}) + "\n"

    repo, _ = make_repo(tmp_path, {
        ".gitsleep.yml": ("version: 1\nbackend: offline\nskills:\n  - name: changelog\n"
                          "    skill: SKILL.md\n    tasks: [evals/tasks.jsonl]\n"),
        "SKILL.md": SKILL.format(rules="- Keep entries short."),
        "evals/fx/CHANGELOG.md": "# Changelog\n",
        "evals/tasks.jsonl": "".join(task(f"t{i}", "train") for i in range(3))
        + "".join(task(f"v{i}", "val") for i in range(2)),
    })
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    assert validate.code == 0 and "GS136" not in validate.out
    night = run_cli(capsys, "--repo", str(repo), "consolidate", "--dry-run", "--json")
    assert night.code == 0, night.err
    summary = json.loads(night.out)
    summary = summary[0] if isinstance(summary, list) else summary
    applied = [e["content"] for e in summary["edits"]["applied"]]
    assert applied == ['Always add "## Unreleased" to "CHANGELOG.md"',
                       'Always create "docs/next.md"']
    assert (summary["val"]["baseline"], summary["val"]["candidate"]) == (0.125, 1.0)
