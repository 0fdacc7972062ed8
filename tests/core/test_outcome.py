"""One typed record of a night: written once, read back the same by every reader.

The `--json` summary, the Action's outputs and `log` read `gitsleep.core.outcome`'s records; a
record read from JSON anyone could have written has wrong fields as unknown, never an
exception; `log` reads a note's structure and the trailers, never the commit's prose.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gitsleep import report
from gitsleep.base.redact import Redactor
from gitsleep.core.outcome import Edits, NoteFacts, PrResult, SkillSummary, opens_pr
from gitsleep.git_forge import history
from tests.report.test_report import SHA, make_result
from tests.support.gitrepo import commit_files, git, isolate_git, make_repo


def test_the_json_summary_reads_back_as_the_same_record() -> None:
    summary = report.json_summary(make_result(), branch="gitsleep/brief-writer", commit=SHA,
                                  pr=PrResult("created", 7, "https://x/pull/7"),
                                  diagnostics_path=Path("d.json"), redactor=Redactor())
    again = SkillSummary.from_json(json.loads(json.dumps(summary.to_json())))
    assert again == summary
    assert again.to_json() == summary.to_json()
    assert (again.pr.number, again.val.n, len(again.edits.applied)) == (7, 3, 1)


def test_an_up_to_date_run_says_so_and_keeps_the_recorded_decision() -> None:
    recorded = report.json_summary(make_result(), branch="b", commit=SHA, pr=PrResult(),
                                   diagnostics_path=None, redactor=Redactor())
    bare = replace(recorded, edits=Edits())  # what the trailers alone give
    summary = bare.as_up_to_date(recorded.edits)
    data = summary.to_json()
    # `decision` keeps the contract's values (accepted | rejected | no_edits | aborted)
    assert (data["decision"], data["recorded_decision"], data["up_to_date"]) == (
        "accepted", "accepted", True)
    assert data["edits"] == recorded.edits.to_json() and recorded.edits.applied
    assert SkillSummary.from_json(data) == summary


@pytest.mark.parametrize("forged", [
    {},
    {"skill": 7, "decision": ["accepted"], "val": "0.5", "test": {"baseline": "x", "n": -1}},
    {"skill": "s", "edits": {"applied": [None, 3, {"op": 5}]}, "pr": {"number": True},
     "cost": {"calls": 10**20, "seconds": float("nan"), "by_model": {"m": {"calls": "x"}}}},
    {"skill": "s", "val": {"baseline": 10**400, "candidate": float("inf"), "n": 2}},
])
def test_a_summary_from_json_anyone_wrote_reads_wrong_fields_as_unknown(
        forged: dict[str, object]) -> None:
    summary = SkillSummary.from_json(forged)
    json.dumps(summary.to_json())  # always serialisable again
    assert summary.val.baseline is None and summary.test.baseline is None
    assert summary.pr.number is None and summary.cost.calls == 0


def test_note_facts_read_only_checked_fields() -> None:
    facts = NoteFacts.from_json({"skill": "s", "decision": 3, "edits": {"applied": [{}, {}]},
                                 "splits": {"val": {"baseline": 0.5, "candidate": True}},
                                 "cost": {"calls": 4}, "extra": {"estimated_usd": -1}})
    assert facts == NoteFacts(skill="s", val=(0.5, None), applied=2, calls=4)


def test_the_pull_request_rule_is_the_epochs_decision() -> None:
    accepted = make_result()
    accepted.pr_eligible = True
    assert opens_pr(accepted)
    accepted.pr_eligible = False  # held-out did not improve: the gate said no
    assert not opens_pr(accepted)
    rejected = make_result(decision="rejected")
    rejected.pr_eligible = True
    assert not opens_pr(rejected)


def test_log_never_reads_the_commit_messages_prose(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A renamed heading in the message cannot change what `log` shows: without a note
    the edit count is unknown, whatever the message says."""
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path)
    commit_files(work, {"x.txt": "x\n"},
                 "gitsleep(example-skill): val 0.1 -> 0.2\n\nApplied edits (3):\n  - one\n\n"
                 "Gitsleep-Skill: example-skill\nGitsleep-Decision: accepted\n"
                 "Gitsleep-Val: 0.100 -> 0.200\nGitsleep-Test: 0.300 -> 0.400")
    epochs = history.read_epochs(work, base="HEAD", branch_refs=[])
    assert [(e.skill, e.decision, e.val, e.test, e.applied) for e in epochs] == [
        ("example-skill", "accepted", (0.1, 0.2), (0.3, 0.4), None)]
    assert git(work, "log", "-1", "--format=%s").startswith("gitsleep(example-skill)")


def test_the_note_is_the_diagnostics_file_plus_the_commit_and_branch(tmp_path: Path) -> None:
    data = report.diagnostics(make_result(), {"base": SHA}, redactor=Redactor())
    path = tmp_path / "diagnostics.json"
    report.write_diagnostics(path, data)
    note = json.loads(report.Diagnostics(path, data).note_text(SHA, "gitsleep/brief-writer"))
    written = json.loads(path.read_text(encoding="utf-8"))
    assert note == {**written, "commit": SHA, "branch": "gitsleep/brief-writer"}
    assert NoteFacts.from_json(note).applied == len(written["edits"]["applied"]) == 1


def test_a_forge_librarys_error_is_one_redacted_line_for_both_publishers() -> None:
    """consolidate's pull request and harvest's share `forge_call`: exit 4, secret masked."""
    from gitsleep.base.errors import EXIT_GIT, GitsleepError, UsageError
    from gitsleep.git_forge.publish_sequence import forge_call

    secret = "ghp_" + "x" * 36

    def fails() -> None:
        raise RuntimeError(f"401 Bad credentials for token {secret}\nsecond line")

    with pytest.raises(GitsleepError) as caught:
        forge_call(Redactor([secret]).redact, fails)
    assert caught.value.exit_code == EXIT_GIT and secret not in str(caught.value)
    assert str(caught.value).startswith("GitHub API error: 401 Bad credentials")

    def refuses() -> None:
        raise UsageError("--pr cannot open a pull request")

    with pytest.raises(UsageError):  # gitsleep's own errors pass as they are
        forge_call(Redactor([]).redact, refuses)
    assert forge_call(Redactor([]).redact, lambda: 7) == 7


# -- no untyped record of a night crosses a module boundary -------------------------------

PACKAGE = Path(__file__).resolve().parents[2] / "gitsleep"
# The modules that write or read a night's outcome: the summary, the note, the commit
# message, the PR body, the Action's outputs and `log`.
OUTCOME_MODULES = ("core/outcome.py", "report/__init__.py", "report/common.py",
                   "report/commit.py", "report/diagnostics_json.py", "report/pull_request.py",
                   "report/summary.py", "report/action_outputs.py", "flows/consolidate.py",
                   "git_forge/history.py", "git_forge/recovery.py", "git_forge/record.py",
                   "git_forge/publish_sequence.py", "commands/consolidate_cmd.py",
                   "commands/log_cmd.py", "flows/log.py", "commands/demo_cmd.py")
# The JSON edge, where a record becomes the on-disk shape or is read from it: `to_json`
# and `from_json` on every record, and diagnostics.json, written as rendered (the file and
# the note are the same text: `report.diagnostics`, its writers, `record.with_proof`).
JSON_METHODS = {"to_json", "from_json"}
JSON_EDGE = ("outcome.section", "diagnostics_json.diagnostics -> ",
             "diagnostics_json.dumps_diagnostics:", "diagnostics_json.write_diagnostics:",
             "diagnostics_json.Diagnostics.data:", "record.with_proof",
             "record.ConfigInputs.model_dump")  # the config as JSON, for the inputs digest


def _untyped_signatures(path: Path) -> list[str]:
    """Public functions, methods and dataclass fields of a module whose annotation is
    `Any`, `dict[str, Any]` or `Mapping[str, Any]`, as `module.name: annotation`."""
    import ast
    import re

    untyped = re.compile(r"\bAny\b")
    module = path.stem
    found: list[str] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                for item in child.body:
                    if (isinstance(item, ast.AnnAssign)
                            and untyped.search(ast.unparse(item.annotation))):
                        found.append(f"{prefix}{child.name}.{ast.unparse(item.target)}: "
                                     f"{ast.unparse(item.annotation)}")
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef) and not child.name.startswith("_"):
                arguments = [*child.args.args, *child.args.kwonlyargs]
                found.extend(f"{prefix}{child.name}: {a.arg}: {ast.unparse(a.annotation)}"
                             for a in arguments if a.annotation is not None
                             and untyped.search(ast.unparse(a.annotation)))
                if child.returns is not None and untyped.search(ast.unparse(child.returns)):
                    found.append(f"{prefix}{child.name} -> {ast.unparse(child.returns)}")

    visit(ast.parse(path.read_text(encoding="utf-8")), f"{module}.")
    return found


def _at_the_json_edge(signature: str) -> bool:
    import re

    name = re.split(r": | -> ", signature, maxsplit=1)[0]
    return name.split(".")[-1] in JSON_METHODS or signature.startswith(JSON_EDGE)


def test_no_untyped_record_of_a_night_crosses_a_module_boundary() -> None:
    """A night's outcome goes between modules as `gitsleep.core.outcome`'s records (or git's
    typed ones): no public signature of these modules takes or gives `Any` or an
    `Any`-valued dict, but at the JSON edge. Read back from JSON, a record is parsed
    where it is read (`load_results`, `diagnostics_note`), not handed on as a dict."""
    found = [s for relative in OUTCOME_MODULES for s in _untyped_signatures(PACKAGE / relative)
             if not _at_the_json_edge(s)]
    assert found == []


def test_the_scan_sees_an_untyped_signature(tmp_path: Path) -> None:
    """The scan itself: a dict handed on is found; a record's `to_json` is the edge."""
    module = tmp_path / "m.py"
    module.write_text("from typing import Any\n\nclass R:\n    data: dict[str, Any]\n\n"
                      "    def to_json(self) -> dict[str, Any]: ...\n\n"
                      "def load(p: str) -> list[dict[str, Any]]: ...\n")
    found = _untyped_signatures(module)
    assert found == ["m.R.data: dict[str, Any]", "m.R.to_json -> dict[str, Any]",
                     "m.load -> list[dict[str, Any]]"]
    assert [s for s in found if not _at_the_json_edge(s)] == [
        "m.R.data: dict[str, Any]", "m.load -> list[dict[str, Any]]"]
