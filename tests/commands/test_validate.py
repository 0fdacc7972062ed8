"""`gitsleep validate`: every check, output formats, exit codes, offline and fast."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.cli import run_cli

START = "<!-- gitsleep:learned:start -->"
END = "<!-- gitsleep:learned:end -->"
TASKS = "evals/writer/tasks.jsonl"
HELD_OUT = "evals/writer/held-out.jsonl"
SKILL = "skills/writer/SKILL.md"
CONFIG = f"""\
version: 1
backend: offline
skills:
  - name: writer
    skill: {SKILL}
    memory: AGENTS.md
    tasks:
      - path: {TASKS}
        split: auto
      - path: {HELD_OUT}
        split: test
"""
SKILL_TEXT = f"""\
---
name: writer
description: Writes short briefs.
---

# Writer

Write plainly.

{START}
## Learned rules
- Always include "Risks"
{END}
"""


def rule(*checks: tuple[str, object]) -> dict:
    return {"kind": "rule", "checks": [{"op": op, "arg": arg} for op, arg in checks]}


GOOD = rule(("contains", "Risks"), ("max_chars", 400))


def record(tid: str, split: str | None = None, judge: dict | None = None,
           prompt: str | None = None) -> str:
    data = {"id": tid, "prompt": prompt or f"Write a brief about {tid}.", "judge": judge or GOOD}
    if split:
        data["split"] = split
    return json.dumps(data) + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose gitsleep setup is clean."""
    files = {
        ".gitsleep.yml": CONFIG,
        SKILL: SKILL_TEXT,
        "AGENTS.md": "# Agents\n\nBe kind.\n",
        TASKS: record("t1", "train") + record("v1", "val") + record("t2", "train"),
        HELD_OUT: record("h1") + record("h2"),
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    """The real CLI in-process: (exit code, stdout, stderr)."""
    result = run_cli(capsys, "--repo", str(repo), *args)
    return result.code, result.out, result.err


def test_clean_repo_passes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, repo, "validate")
    assert (code, out) == (0, "")
    # the small-split warning it prints is counted (it said "no problems")
    assert "  warning: val (1 task) and held-out (2 tasks): fewer than 5 tasks" in err
    assert "gitsleep validate: 0 error(s), 1 warning(s) (1 skill(s), 5 task(s), 4 file(s))" in err
    (repo / HELD_OUT).write_text("".join(record(f"h{i}") for i in range(5)))
    (repo / TASKS).write_text("".join(record(f"v{i}", "val") for i in range(5))
                              + record("t1", "train"))
    code, out, err = run(capsys, repo, "validate")
    assert (code, out) == (0, "")
    assert "gitsleep validate: no problems (1 skill(s), 11 task(s), 4 file(s))" in err


def test_problem_lines_and_exit_1(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / TASKS).write_text(record("t1", "train")
                              + record("v1", "val", rule(("regex", "[Cc]onfidence(")))
                              + record("t2", "val"))
    code, out, err = run(capsys, repo, "validate")
    assert code == 1
    assert out.splitlines() == [
        f"{TASKS}:2: GS123 task 'v1': check 1: invalid regex '[Cc]onfidence(': "
        "missing ), unterminated subpattern at position 13"
    ]
    assert "1 error(s), 1 warning(s)" in err  # the small-split warning on stderr


def test_json_format(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / TASKS).write_text(record("t1", "train") + record("v1", "val")
                              + record("t1", "train", prompt="again"))
    code, out, _ = run(capsys, repo, "validate", "--format", "json")
    assert code == 1
    assert json.loads(out) == [{
        "path": TASKS, "line": 3, "code": "GS112", "severity": "error",
        "message": f"duplicate task id 't1' (first at {TASKS}:1): ids must be unique within a "
                   "skill; rename one",
    }, {
        "path": ".gitsleep.yml", "line": 4, "code": "GS151", "severity": "warning",
        "message": "skill writer: val (1 task) and held-out (2 tasks): fewer than 5 tasks, so "
                   "one task moves the score a lot and a decision on it is a hint; add tasks "
                   "(or move some from train); val (1 task) and held-out (2 tasks) too small "
                   "for any gain to be told from noise: with n tasks the sign test's best p is "
                   "2^-n, above 0.1 below 4 tasks (a noisy agent's gain there is never kept; a "
                   "deterministic agent's is)",
    }]


def test_json_has_the_split_size_warnings_the_text_prints(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".gitsleep.yml").write_text(CONFIG.replace(
        f"      - path: {HELD_OUT}\n        split: test\n", ""))
    code, out, err = run(capsys, repo, "validate", "--json")
    assert code == 0, err
    assert [(p["code"], p["severity"]) for p in json.loads(out)] == [
        ("GS150", "warning"), ("GS151", "warning")]
    assert "no held-out (test) tasks" in err and "2 warning(s)" in err


def test_json_prints_a_config_error_as_its_one_problem(
        repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".gitsleep.yml").write_text(CONFIG.replace("backend: offline", "backend: nope"))
    code, out, err = run(capsys, repo, "validate", "--json")
    assert code == 2
    (problem,) = json.loads(out)
    assert problem["path"] == ".gitsleep.yml" and problem["line"] == 2
    assert problem["code"] == "GS000" and problem["severity"] == "error"
    assert problem["message"].startswith("backend: ")
    assert err.count("gitsleep: error: ") == 1
    code, out, err = run(capsys, repo, "validate")  # text: the one line, as before
    assert (code, out) == (2, "")
    assert err.startswith(f"gitsleep: error: {repo / '.gitsleep.yml'}:2: backend: ")


def test_a_path_that_does_not_exist_is_exit_2(
        repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, repo, "validate", "nope.jsonl")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "gitsleep: error: nope.jsonl: no such file: `gitsleep validate PATH` checks files "
        "that exist (check the spelling, or leave PATH out to check everything)"]
    code, _, _ = run(capsys, repo, "validate", TASKS)
    assert code == 0


def test_a_repo_folder_that_does_not_exist_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = tmp_path / "nonexistent"
    for command in ("validate", "status", "log", "plan"):
        result = run_cli(capsys, "--repo", str(gone), command)
        assert result.code == 2
        assert result.err.splitlines() == [
            f"gitsleep: error: --repo {gone}: no such folder: pass the folder of your git "
            "repository"], command


def test_warnings_alone_are_clean(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / TASKS).write_text(record("t1", "train", rule(("max_chars", 10)))
                              + record("v1", "val"))
    code, out, err = run(capsys, repo, "validate")
    assert code == 0
    assert f"{TASKS}:1: GS128 warning: task 't1': judge only checks the answer's shape" in out
    assert "0 error(s), 2 warning(s)" in err  # GS128 and the small-split warning


def test_no_config_or_bad_config_cannot_run(
    tmp_path: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = run(capsys, tmp_path / "empty", "validate")
    assert code == 2 and "gitsleep: error:" in err and "not found" in err
    (repo / ".gitsleep.yml").write_text(CONFIG + "gate:\n  metrc: hard\n")
    code, _, err = run(capsys, repo, "validate")
    assert code == 2
    assert ".gitsleep.yml:13: gate.metrc: unknown key: did you mean 'metric'?" in err


def test_paths_limit_the_report(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / TASKS).write_text(record("t1", "train") + record("v1", "val", {"kind": "x"}))
    (repo / HELD_OUT).write_text(record("h1", judge={"kind": "y"}))
    code, out, _ = run(capsys, repo, "validate", str(repo / HELD_OUT))
    assert code == 1 and out.startswith(f"{HELD_OUT}:1: GS121") and TASKS not in out
    code, out, _ = run(capsys, repo, "validate", str(repo / SKILL))
    assert (code, out) == (0, "")


# --- documents -------------------------------------------------------------------------------


def test_missing_documents(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / SKILL).unlink()
    (repo / "AGENTS.md").unlink()
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1
    assert out.splitlines() == [
        f"{SKILL}: GS200 document not found: create it or fix the path",
        "AGENTS.md: GS200 document not found: create it or fix the path",
    ]


def test_non_utf8_document(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "AGENTS.md").write_bytes(b"# Agents\n\ncaf\xe9\n")
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1 and out.startswith("AGENTS.md:3: GS201 document is not valid UTF-8")


@pytest.mark.parametrize(
    ("frontmatter", "code", "expected"),
    [
        ("---\nname: writer\n", 1, ":1: GS202 frontmatter opens with '---' but never closes"),
        ("---\nname: [writer\n---\n", 1, ":2: GS202 frontmatter: YAML does not parse"),
        ("---\n- a\n---\n", 1, ":2: GS202 frontmatter must be a mapping"),
        ("\ufeff---\nname: writer\n", 1, ":1: GS202 frontmatter opens with '---'"),
        # a name or description outside the Agent Skills limits is text
        # gitsleep never edits: a warning, never a reason to refuse the skill
        ("---\ndescription: d\n---\n", 0, ":1: GS203 warning: frontmatter has no 'name'"),
        ("---\nname: Writer_Bot\ndescription: d\n---\n", 0,
         ":2: GS203 warning: frontmatter name 'Writer_Bot' must be 1-64 lowercase letters"),
        ("---\nname: " + "a" * 65 + "\ndescription: d\n---\n", 0, ":2: GS203 warning"),
        ("---\nname: writer\n---\n", 0, ":1: GS204 warning: frontmatter has no 'description'"),
        ("---\nname: writer\ndescription: ''\n---\n", 0,
         ":3: GS204 warning: frontmatter description is 0 characters, the Agent Skills limit "
         "is 1-1024: say what the skill does in 1-1024 characters"),
        ("---\nname: writer\ndescription: " + "d" * 1068 + "\n---\n", 0,
         ":3: GS204 warning: frontmatter description is 1068 characters, the Agent Skills "
         "limit is 1-1024: shorten it to 1024 or fewer characters (a warning: agents that "
         "load skills by it may skip this one; gitsleep still improves the skill and never "
         "edits the description)"),
        ("\ufeff---\nname: Writer_Bot\ndescription: d\n---\n", 0, ":2: GS203 warning"),
    ],
)
def test_frontmatter_problems(
    repo: Path, capsys: pytest.CaptureFixture[str], frontmatter: str, code: int, expected: str
) -> None:
    (repo / SKILL).write_text(frontmatter + "\n# Writer\n")
    result, out, _ = run(capsys, repo, "validate")
    assert result == code and out.startswith(SKILL + expected), out


def test_an_import_the_agent_view_cannot_follow_is_a_warning_with_the_fix(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An import of a file in the repository is followed (the agent is shown its text), so
    it is no problem; one of a home file is left as written and named. Imports in code and
    `@mentions` of no file are neither."""
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("# Rules\n\n- Be brief.\n")
    (repo / "AGENTS.md").write_text(
        "# Agents\n\n@docs/rules.md\n\n```\n@docs/rules.md\n```\n"
        "Ask @alice, see `@docs/rules.md`; mail me@example.com.\nAlso @~/.claude/mine.md\n")
    code, out, _ = run(capsys, repo, "validate")
    assert code == 0, out
    lines = out.splitlines()
    assert len(lines) == 1, out
    assert lines[0].startswith("AGENTS.md:9: GS205 warning: imports @~/.claude/mine.md (Claude "
                               "Code's import syntax): a file in your home folder, which no "
                               "night can read; the agent gitsleep scores is not shown it")


def test_imports_that_form_a_cycle_are_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("- Be brief.\n@../AGENTS.md\n")
    (repo / "AGENTS.md").write_text("# Agents\n\n@docs/rules.md\n")
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1, out
    assert out.startswith("AGENTS.md: GS206 imports form a cycle (AGENTS.md -> docs/rules.md "
                          "-> AGENTS.md); remove one of the imports"), out


def test_a_config_given_with_config_is_named_in_its_problems(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """GS137 (a skill's package folder) named `.gitsleep.yml` when the
    config came from `--config`."""
    (repo / "ci").mkdir()
    (repo / "ci" / "gitsleep.yml").write_text(
        CONFIG.replace("    memory: AGENTS.md\n", "    memory: AGENTS.md\n    package: nowhere\n"))
    (repo / ".gitsleep.yml").unlink()
    result = run_cli(capsys, "--repo", str(repo), "--config", str(repo / "ci" / "gitsleep.yml"),
                     "validate")
    assert result.code == 1, result.err
    assert result.out.startswith("ci/gitsleep.yml: GS137 skill 'writer': package 'nowhere'"), \
        result.out
    assert ".gitsleep.yml" not in result.out.replace("ci/gitsleep.yml", "")


def test_documents_without_frontmatter_are_fine(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / SKILL).write_text("# Writer\n\nNo frontmatter here.\n")
    assert run(capsys, repo, "validate")[0] == 0


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (f"{START}\n- a\n{START}\n- b\n{END}\n", ":3: GS210 nested learned-block markers"),
        (f"{START}\n- a\n{END}\n{START}\n{END}\n", ":4: GS210 duplicated learned-block markers"),
        (f"{END}\n- a\n{START}\n", ":1: GS210 learned-block end marker comes before the start"),
        (f"{START}\n- a\n", ":1: GS210 learned block has a start marker but no"),
        (f"- a\n{END}\n", ":2: GS210 learned block has an end marker but no"),
        (f"{START} - a\n{END}\n", ":1: GS210 learned-block marker must stand alone"),
    ],
)
def test_corrupt_learned_block(
    repo: Path, capsys: pytest.CaptureFixture[str], body: str, expected: str
) -> None:
    (repo / "AGENTS.md").write_text(body)
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1 and out.startswith("AGENTS.md" + expected)


def test_block_over_its_configured_size(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / ".gitsleep.yml").write_text(CONFIG + "learned_block: {max_lines: 2, max_chars: 60}\n")
    (repo / "AGENTS.md").write_text(f"# A\n{START}\n- one\n- two\n- three\n{END}\n")
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1
    assert "AGENTS.md:2: GS210 learned block has 3 rules, over the limit of 2" in out


def test_hand_edits_inside_a_sound_block_are_fine(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = SKILL_TEXT.replace('- Always include "Risks"',
                                "- My own rule, typed by hand\n\nSome prose too.")
    (repo / SKILL).write_text(edited)
    assert run(capsys, repo, "validate")[0] == 0


# --- secrets ---------------------------------------------------------------------------------

TOKENS = {
    "an OpenAI API key": "sk-" + "proj-" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9",
    "a GitHub token": "gh" + "p_" + "A1b2C3d4" * 5,
    "a GitHub fine-grained token": "github" + "_pat_" + "11ABCDEFG0" * 4,
    "an AWS access key id": "AKIA" + "IOSFODNN7EXAMPLE",
    "a Slack token": "xox" + "b-" + "123456789012-abcdefABCDEF",
    "a private key": "-----BEGIN RSA " + "PRIVATE KEY-----",
    "a JSON Web Token": "eyJ" + "hbGciOiJIUzI1NiJ9.eyJ" + "zdWIiOiIxMjM0In0.abcDEF123_-xyz",
}


@pytest.mark.parametrize("kind", sorted(TOKENS))
def test_token_shapes_in_task_files_are_errors(
    repo: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    token = TOKENS[kind]
    (repo / HELD_OUT).write_text(record("h1") + record("h2", prompt=f"Use {token} to log in."))
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1
    assert out.startswith(f"{HELD_OUT}:2: GS300 contains what looks like")
    assert "remove it from the task file" in out
    assert token not in out and token[:12] not in out, "the secret is never printed"


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "GITHUB_TOKEN", "GH_TOKEN"])
def test_values_of_credential_variables_are_errors(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    secret = "plainpassword42"
    monkeypatch.setenv(name, secret)
    (repo / TASKS).write_text(record("t1", "train") + record("v1", "val", prompt=secret))
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1 and out == f"{TASKS}:2: GS300 contains the value of ${name}: remove it " \
                                "from the task file (and rotate the credential)\n"


def test_custom_api_key_env_and_short_values(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo / ".gitsleep.yml").write_text(CONFIG + "api_key_env: MY_LLM_KEY\n")
    monkeypatch.setenv("MY_LLM_KEY", "hunter2-hunter2")
    monkeypatch.setenv("GH_TOKEN", "short")  # under 8 characters: too common to look for
    (repo / TASKS).write_text(record("t1", "train", prompt="short and hunter2-hunter2")
                              + record("v1", "val"))
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1 and out.count("GS300") == 1 and "$MY_LLM_KEY" in out


def test_ordinary_text_is_not_a_secret(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prompt = ("Compare sk-learn-pipeline-configuration with task-runner settings; the "
              "AKIA prefix and eyJ strings are discussed; mention -----BEGIN PUBLIC KEY-----.")
    (repo / TASKS).write_text(record("t1", "train", prompt=prompt) + record("v1", "val"))
    assert run(capsys, repo, "validate")[:2] == (0, "")


# --- the learned-block hook mode ---------------------------------------------------------------


def test_learned_block_only_checks_configured_documents(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "README.md").write_text(f"Markers look like `{START}` and `{END}` reversed:\n{END}\n")
    code, out, err = run(capsys, repo, "validate", "--learned-block-only", "README.md", SKILL)
    assert (code, out) == (0, ""), "a README that quotes the markers is not a skill document"
    assert "1 document(s)" in err
    (repo / SKILL).write_text(SKILL_TEXT.replace(END, "<!-- gitsleep:learned:ned -->"))
    code, out, _ = run(capsys, repo, "validate", "--learned-block-only", "README.md", SKILL)
    assert code == 1 and out.startswith(f"{SKILL}:13: GS210 malformed learned-block marker")


def test_learned_block_only_without_paths_checks_all_documents(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "AGENTS.md").write_text(f"{START}\n{START}\n{END}\n")
    code, out, _ = run(capsys, repo, "validate", "--learned-block-only")
    assert code == 1 and out.startswith("AGENTS.md:2: GS210")
    (repo / TASKS).write_text("not even json")  # task files are not this mode's business
    (repo / "AGENTS.md").write_text("# fine\n")
    assert run(capsys, repo, "validate", "--learned-block-only")[0] == 0


def test_learned_block_only_without_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "doc.md").write_text(f"{END}\n{START}\n")
    (tmp_path / "ok.md").write_text(f"{START}\n- rule\n{END}\n")
    code, out, _ = run(capsys, tmp_path, "validate", "--learned-block-only",
                       str(tmp_path / "doc.md"), str(tmp_path / "ok.md"))
    assert code == 1 and out.startswith("doc.md:1: GS210") and "ok.md" not in out
    code, _, err = run(capsys, tmp_path, "validate", "--learned-block-only")
    assert code == 2 and "pass the Markdown files to check" in err


# --- offline and fast ------------------------------------------------------------------------


def test_validate_opens_no_socket(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    class NoSocket(socket.socket):
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("validate opened a socket")

    monkeypatch.setattr(socket, "socket", NoSocket)
    monkeypatch.setattr(socket, "create_connection", NoSocket)
    (repo / TASKS).write_text(record("t1", "train") + record("v1", "val", {"kind": "x"}))
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1 and "GS121" in out


def test_500_tasks_validate_without_heavy_imports(tmp_path: Path, repo: Path) -> None:
    lines = [record(f"t{i}", judge=rule(("contains", "Risks"), ("regex", r"[Cc]onfidence\s*:"),
                                        ("max_chars", 300), ("no_refusal", None)))
             for i in range(400)]
    (repo / TASKS).write_text("".join(lines).replace(', "arg": null', ""))
    (repo / HELD_OUT).write_text("".join(record(f"h{i}") for i in range(100)))
    probe = textwrap.dedent(f"""
        import sys, time
        start = time.perf_counter()
        from gitsleep.cli import main
        try:
            main(["--repo", {str(repo)!r}, "validate"])
        except SystemExit as exc:
            code = exc.code
        elapsed = time.perf_counter() - start
        heavy = sorted({{m.split(".")[0] for m in sys.modules}}
                       & {{"openai", "github", "git", "httpx", "httpx2", "requests"}})
        print(code, round(elapsed, 3), heavy)
    """)
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, check=True)
    code, elapsed, heavy = result.stdout.split(" ", 2)
    assert "500 task(s)" in result.stderr
    assert code == "0", result.stderr
    # the time is measured by benchmarks/bench_validate.py, never asserted: a loaded CI
    # machine would make a timing assertion flaky
    assert heavy.strip() == "[]", "validate must not import model, git or forge clients"


def test_many_skills_naming_one_document_parse_the_config_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each GS002 line looked up its config line by parsing the whole
    config again, so n skills sharing one document cost n parses of an O(n) file. The
    config is composed a bounded number of times, whatever the number of skills."""
    from gitsleep.inputs import config as config_module
    from gitsleep.inputs import validation

    parses: list[int] = []
    compose = config_module.compose_yaml

    def counted(text: str):  # noqa: ANN202 - the wrapped function's own type
        parses.append(len(text))
        return compose(text)

    task_parses: list[str] = []
    check_tasks = validation.check_skill_tasks

    def counted_tasks(root: Path, skill):  # noqa: ANN001, ANN202
        task_parses.append(skill.name)
        return check_tasks(root, skill)

    monkeypatch.setattr(config_module, "compose_yaml", counted)
    monkeypatch.setattr(validation, "check_skill_tasks", counted_tasks)
    for n in (20, 80):
        task_parses.clear()
        skills = "".join(f"  - name: s{i}\n    skill: {SKILL}\n    tasks: [{TASKS}]\n"
                         for i in range(n))
        (repo / ".gitsleep.yml").write_text(f"version: 1\nbackend: offline\nskills:\n{skills}")
        parses.clear()
        config = config_module.load_config(repo / ".gitsleep.yml")
        report = validation.validate_repo(repo, config, {}, repo / ".gitsleep.yml")
        shared = [p for p in report.problems if p.code == "GS002"]
        assert len(shared) == n - 1 and all(p.line for p in shared)
        assert shared[-1].line == 5 + 3 * (n - 1)  # skills[n-1].skill, still exact
        assert len(parses) <= 2, f"{len(parses)} config parses for {n} skills"
        assert task_parses == ["s0"]  # one task list shared by n skills is parsed once
        assert report.tasks == 3 * n and report.splits[f"s{n - 1}"]["train"] == 2


@pytest.mark.parametrize(
    ("head", "line", "expected"),
    [
        ("backend: openai\n", 2, "GS005 no model set for backend 'openai': set `model:`"),
        ("backend: command\nagent: {command: [sh]}\n", 2,
         "GS005 no optimizer model: with `backend: command` the openai optimizer needs "
         "`optimizer_model:`"),
    ],
)
def test_configs_that_cannot_run_fail_validate(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    head: str, line: int, expected: str,
) -> None:
    """`backend: openai` with no model passed validate (and so the
    pre-commit hook), and the nightly job then stopped with exit 2."""
    monkeypatch.delenv("GITSLEEP_MODEL", raising=False)
    monkeypatch.delenv("GITSLEEP_BACKEND", raising=False)
    (repo / ".gitsleep.yml").write_text(CONFIG.replace("backend: offline\n", head))
    code, out, err = run(capsys, repo, "validate")
    assert code == 1, err
    assert out.startswith(f".gitsleep.yml:{line}: {expected}"), out
    assert len(out.splitlines()) == 1 and "1 error(s)" in err
    monkeypatch.setenv("GITSLEEP_MODEL", "gpt-4o-mini")  # where the job sets it, it runs
    code, out, _ = run(capsys, repo, "validate")
    assert (code, out) == (0, "")


@pytest.mark.parametrize(
    ("program", "code", "expected"),
    [
        ("./tools/agent.py", 1, "GS006 agent.command: program './tools/agent.py' is a relative "
                                "path, but the agent runs in a fresh temporary folder"),
        ("no-such-agent-41", 0,
         "GS006 warning: agent.command: program 'no-such-agent-41' is not on PATH"),
        ("/no/such/agent-41", 0,
         "GS006 warning: agent.command: program '/no/such/agent-41' does not exist here"),
        ("sh", 0, ""),
    ],
)
def test_validate_checks_that_the_agent_program_can_be_started(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    program: str, code: int, expected: str,
) -> None:
    """A repository path in agent.command passed validate and every call
    then failed "not found" (the agent runs in a temporary folder). A relative path is an
    error; a program missing on this machine is a warning (the nights may run elsewhere)."""
    monkeypatch.delenv("GITSLEEP_BACKEND", raising=False)
    (repo / "tools").mkdir()
    (repo / "tools" / "agent.py").write_text("print('hi')\n")
    head = (f"backend: command\noptimizer_backend: offline\njudge_backend: offline\n"
            f"agent:\n  command: [{program}]\n")
    (repo / ".gitsleep.yml").write_text(CONFIG.replace("backend: offline\n", head))
    result, out, err = run(capsys, repo, "validate")
    assert result == code, err
    if expected:
        assert out.startswith(f".gitsleep.yml:6: {expected}"), out
        count = "1 error(s), 1 warning(s)" if code else "0 error(s), 2 warning(s)"
        assert count in err and len(out.splitlines()) == 1  # and the small-split warning
    else:
        assert out == ""


def test_no_held_out_tasks_is_a_warning_that_says_val_decides(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no `test` task, val decides the pull request. That is the
    documented contract (shared/spec/interface.md: "when no task is in `test`, val decides
    and the PR body says so"), so it stays a warning, but validate now says it."""
    (repo / ".gitsleep.yml").write_text(CONFIG.split("      - path: evals/writer/held-out")[0])
    code, out, err = run(capsys, repo, "validate")
    assert (code, out) == (0, "")
    assert ("writer: warning: no held-out (test) tasks, so val decides whether a pull request "
            "opens") in err


def test_skills_sharing_task_files_each_get_their_own_skill_problems(repo: Path) -> None:
    """The shared parse must not hand one skill's own problems to
    another: each skill is named in its split-size line, and each package is checked."""
    from gitsleep.inputs import validation
    from gitsleep.inputs.config import load_config

    (repo / TASKS).write_text(record("t1", "train") + record("t2", "train"))  # no val task
    skills = "".join(f"  - name: {name}\n    skill: {SKILL}\n    tasks: [{TASKS}]\n{extra}"
                     for name, extra in (("first", ""), ("second", "    package: missing\n")))
    (repo / ".gitsleep.yml").write_text(f"version: 1\nbackend: offline\nskills:\n{skills}")
    config = load_config(repo / ".gitsleep.yml")
    report = validation.validate_repo(repo, config, {}, repo / ".gitsleep.yml")
    messages = [p.message for p in report.problems]
    assert any("skill 'first' has no val tasks" in m for m in messages), messages
    assert any("skill 'second' has no val tasks" in m for m in messages), messages
    assert any("skill 'second': package 'missing'" in m for m in messages), messages


def test_a_cost_cap_without_a_price_is_found_by_validate(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate said "no problems" and every run then stopped with exit 2."""
    (repo / ".gitsleep.yml").write_text(CONFIG + "budget:\n  max_cost: 0.5\n")
    code, out, _ = run(capsys, repo, "validate")
    assert code == 1
    line = next(x for x in out.splitlines() if "max_cost" in x)
    assert line.startswith(".gitsleep.yml:13: GS005 budget.max_cost: no price for model 'offline'")
    assert "}}" not in line


def test_validate_checks_each_command_agents_program(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `agents:`, each command agent's program is checked as the single
    agent's is, and the problem names that agent's key and line."""
    monkeypatch.delenv("GITSLEEP_BACKEND", raising=False)
    head = ("backend: offline\nagents:\n  - {name: sim}\n"
            "  - {name: cli, backend: command, agent: {command: [./tools/agent.py]}}\n")
    (repo / ".gitsleep.yml").write_text(CONFIG.replace("backend: offline\n", head))
    result, out, err = run(capsys, repo, "validate")
    assert result == 1, err
    assert out.startswith(".gitsleep.yml:5: GS006 agents[1].agent.command: program "
                          "'./tools/agent.py' is a relative path"), out
