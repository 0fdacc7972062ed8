"""What a check runs with: the agent cannot grade itself, a check sees a minimal
environment, a workspace never holds the task file, validate and the run agree on linked
workspaces, and check time is budgeted and parallel. Real git repositories, real agent
processes (tests/support/fake_agents), real check programs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from gitsleep.git_forge import task_trees
from gitsleep.git_forge.task_trees import WorkspaceCache
from gitsleep.sandbox import check_program as command_check
from gitsleep.sandbox import workspace as workspaces
from tests.support.cli import run_cli
from tests.support.fake_agents import install
from tests.support.gitrepo import git, isolate_git, make_repo
from tests.support.skills import CHANGELOG_SKILL

PY = sys.executable
SECRETS = {"OPENAI_API_KEY": "sk-" + "o" * 40, "MY_MODEL_KEY": "model-key-" + "m" * 30,
           "AWS_ACCESS_KEY_ID": "AKIA" + "A" * 16, "AWS_SECRET_ACCESS_KEY": "s" * 40,
           "AWS_SESSION_TOKEN": "t" * 40, "GITHUB_TOKEN": "ghp_" + "g" * 36,
           "GH_TOKEN": "ghp_" + "h" * 36, "ANTHROPIC_API_KEY": "sk-ant-" + "a" * 30,
           "AZURE_OPENAI_API_KEY": "z" * 32, "GOOGLE_API_KEY": "AIza" + "q" * 30}
# writes the names of its environment to the file its first argument names; passes
SHOW_ENV = ("import os, sys, json; json.dump(sorted(os.environ), open(sys.argv[1], 'w'))")


def config(agent: Path | None, *, backend: str = "offline", extra: str = "") -> str:
    agent_line = f"agent: {{command: [{json.dumps(str(agent))}]}}\n" if agent else ""
    return (f"version: 1\nbackend: {backend}\noptimizer_backend: offline\n{agent_line}"
            "api_key_env: MY_MODEL_KEY\n" + extra +
            "skills:\n  - name: changelog\n    skill: SKILL.md\n"
            "    tasks: [evals/tasks.jsonl]\n")


def task(tid: str, split: str, *checks: dict, workspace: str | None = "evals/fx") -> str:
    data: dict = {"id": tid, "split": split,
                  "prompt": f"Add a changelog entry for the new --watch flag ({tid}).",
                  "judge": {"kind": "rule", "checks": list(checks)}}
    if workspace is not None:
        data["workspace"] = workspace
    return json.dumps(data) + "\n"


def committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str],
              executable: tuple[str, ...] = ()) -> Path:
    isolate_git(monkeypatch, tmp_path)
    work, _ = make_repo(tmp_path, {"SKILL.md": CHANGELOG_SKILL.format(rules="- Be brief."),
                                   "evals/fx/CHANGELOG.md": "# Changelog\n", **files})
    for name in executable:
        (work / name).chmod(0o755)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "modes", check=False)
    return work


def scores(out: str) -> dict[str, dict]:
    return {t["id"]: t for row in json.loads(out) for t in row["tasks"]}


# --- agents cannot grade themselves ---------------------------------------------------------

WANTS_WATCH = "import sys; sys.exit(0 if '--watch' in open('CHANGELOG.md').read() else 1)\n"


def test_an_agent_that_rewrites_the_checks_to_pass_does_not_score(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    cheater = install("cheater", tmp_path)
    checks = ({"op": "command", "arg": ["./check.sh"]},
              {"op": "command", "arg": ["sh", "check.sh"]},
              {"op": "command", "arg": [PY, "checks/verify.py"]})
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(cheater, backend="command"),
        "evals/fx/check.sh": "#!/bin/sh\ngrep -q -- --watch CHANGELOG.md\n",
        "evals/fx/checks/verify.py": WANTS_WATCH,
        "evals/tasks.jsonl": (task("v1", "val", checks[0]) + task("v2", "val", checks[1])
                              + task("v3", "val", checks[2]) + task("t1", "train", *checks)),
    }, executable=("evals/fx/check.sh",))
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    found = scores(result.out)
    for tid in ("v1", "v2", "v3"):  # the committed checks ran, and the agent did no work
        assert found[tid]["hard"] == 0.0, (tid, found[tid])
        assert "exited 1" in found[tid]["reason"]


def test_put_back_never_writes_through_a_link_the_agent_left(tmp_path: Path) -> None:
    pristine, folder, outside = tmp_path / "pristine", tmp_path / "agent", tmp_path / "out"
    (pristine / "checks").mkdir(parents=True)
    (pristine / "checks/verify.py").write_text(WANTS_WATCH)
    folder.mkdir()
    outside.mkdir()
    os.symlink(outside, folder / "checks")  # the agent swapped the folder for a link
    assert workspaces.named_fixture_files(pristine, [PY, "./checks/verify.py", "-q"]) == [
        "checks/verify.py"]
    workspaces.put_back(folder, pristine, "checks/verify.py")
    assert not (folder / "checks").is_symlink()
    assert (folder / "checks/verify.py").read_text() == WANTS_WATCH
    assert list(outside.iterdir()) == []


# --- the minimal environment and checks.pass_env ----------------------------------------------


def hide_and_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NEEDED_BY_CHECK", "yes")
    monkeypatch.setenv("UNLISTED_PLAIN", "plain")


def assert_minimal(seen: list[str]) -> None:
    leaked = sorted(set(seen) & set(SECRETS))
    assert leaked == [], leaked
    assert "NEEDED_BY_CHECK" in seen and "PATH" in seen
    assert "UNLISTED_PLAIN" not in seen  # minimal: not every variable but the secrets


def test_run_check_passes_only_the_minimum_and_the_listed_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_and_set(monkeypatch)
    report = tmp_path / "env.json"
    ok, why = command_check.run_check([PY, "-c", SHOW_ENV, str(report)], tmp_path,
                                      pass_env=["NEEDED_BY_CHECK"])
    assert ok, why
    assert_minimal(json.loads(report.read_text()))


@pytest.mark.parametrize("backend", ["offline", "command"])
def test_checks_of_a_night_see_the_minimum_and_checks_pass_env(
        backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A text task's check (judged by gitsleep) and a workspace task's (judged by the
    backend, offline or an agent CLI) get the same environment."""
    text_report, ws_report = tmp_path / "text.json", tmp_path / "ws.json"
    editor = install("editor", tmp_path)
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(editor if backend == "command" else None, backend=backend,
                                extra="checks: {pass_env: [NEEDED_BY_CHECK]}\n"),
        "evals/tasks.jsonl": (
            task("v1", "val", {"op": "command", "arg": [PY, "-c", SHOW_ENV, str(text_report)]},
                 workspace=None)
            + task("v2", "val", {"op": "command", "arg": [PY, "-c", SHOW_ENV, str(ws_report)]})
            + task("t1", "train", {"op": "contains", "arg": "watch"})),
    })
    hide_and_set(monkeypatch)
    result = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val", "--json")
    assert result.code == 0, result.err
    assert {t["hard"] for t in scores(result.out).values()} == {1.0}
    assert_minimal(json.loads(text_report.read_text()))
    assert_minimal(json.loads(ws_report.read_text()))


def test_checks_pass_env_holds_names_only() -> None:
    from pydantic import ValidationError

    from gitsleep.inputs.config import Config

    base = {"backend": "offline",
            "skills": [{"name": "a", "skill": "S.md", "tasks": ["evals/a.jsonl"]}]}
    assert Config.model_validate({**base, "checks": {"pass_env": ["DATABASE_URL"]}}
                                 ).epoch_settings().check_pass_env == ("DATABASE_URL",)
    # the configured run is what runs a text task's check, through command_check
    settings = Config.model_validate(base).epoch_settings()
    assert settings.check_program is command_check.check_answer
    with pytest.raises(ValidationError, match="not an environment variable name"):
        Config.model_validate({**base, "checks": {"pass_env": ["sk-abc def"]}})


# --- what a workspace may be: validate and the run agree ------------------------------------


def test_a_workspace_that_holds_the_task_file_is_refused_by_validate_and_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    line = task("v1", "val", {"op": "contains", "arg": "watch"}, workspace="evals")
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(None),
        "evals/tasks.jsonl": line + task("t1", "train", {"op": "contains", "arg": "watch"},
                                         workspace="evals")})
    message = ("evals/tasks.jsonl:1: GS138 task 'v1': workspace 'evals' holds the task file "
               "evals/tasks.jsonl: the agent would read every split's checks; keep task files "
               "outside the workspace folder")
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    assert validate.code == 1 and message in validate.out, validate.out
    assert validate.out.count("GS138") == 1  # one line for the folder, not one per task
    run = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    assert run.code == 2 and "Traceback" not in run.err
    assert message.replace("GS138 ", "") in run.err
    assert len([ln for ln in run.err.splitlines() if "GS138" in ln or "holds" in ln]) == 1


def test_a_workspace_through_a_symlink_inside_the_repository_gets_one_answer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """git keeps the link, not the folder: the run cannot read the workspace there, so
    validate says so too, with the same line."""
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(None),
        "evals/tasks.jsonl": (task("v1", "val", {"op": "contains", "arg": "watch"},
                                   workspace="evals/linked")
                              + task("t1", "train", {"op": "contains", "arg": "watch"}))})
    os.symlink("fx", repo / "evals/linked")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a linked fixture")
    validate = run_cli(capsys, "--repo", str(repo), "validate")
    run = run_cli(capsys, "--repo", str(repo), "eval", "--split", "val")
    why = ("task 'v1': workspace 'evals/linked' goes through the symlink 'evals/linked': "
           "git keeps the link, not the folder")
    assert validate.code == 1 and f"GS131 {why}" in validate.out, validate.out
    assert run.code == 2 and why in run.err, run.err


# --- check time: budgeted, and parallel --------------------------------------------------------


def text_tasks(checks: dict[str, list[str]]) -> list:
    from gitsleep.core.models import Check, Judge, Task

    return [Task(id=tid, prompt=f"Write about {tid}.", split="val",
                 judge=Judge("rule", (Check("command", json.dumps(argv)),)))
            for tid, argv in checks.items()]


def test_text_task_checks_run_in_parallel_with_workers(tmp_path: Path) -> None:
    """Each check writes its marker, then waits (bounded) for the other's: both pass only
    when they run at the same time."""
    from gitsleep.backends.offline import OfflineBackend
    from gitsleep.core.calls import CallRunner
    from gitsleep.core.models import EpochSettings
    from gitsleep.core.replay import score_split

    meet = ("import pathlib, sys, time; d = pathlib.Path(sys.argv[1]); "
            "(d / sys.argv[2]).write_text('here'); end = time.monotonic() + 10\n"
            "while not (d / sys.argv[3]).exists():\n"
            "    if time.monotonic() > end: sys.exit(1)\n"
            "    time.sleep(0.01)\n")
    tasks = text_tasks({"a": [PY, "-c", meet, str(tmp_path), "a", "b"],
                        "b": [PY, "-c", meet, str(tmp_path), "b", "a"]})
    settings = EpochSettings("offline", "offline", "offline", workers=2,
                             check_program=command_check.check_answer)
    runner = CallRunner.for_settings(OfflineBackend(trees=WorkspaceCache()), settings)
    result = score_split(runner, tasks, {"skill": "# S\n"}, settings, label="current",
                         split="val")
    assert [t.hard for t in result.tasks] == [1.0, 1.0], [
        s.score.reason for t in result.tasks for s in t.samples if s.score]


def test_text_task_check_time_counts_against_max_agent_minutes(tmp_path: Path) -> None:
    from gitsleep.backends.offline import OfflineBackend
    from gitsleep.base.errors import BudgetExhausted
    from gitsleep.core.calls import CallRunner
    from gitsleep.core.models import EpochSettings
    from gitsleep.core.replay import score_split

    slow = [PY, "-c", "import time; time.sleep(0.5)"]
    settings = EpochSettings("offline", "offline", "offline", workers=1,
                             max_agent_minutes=0.005,
                             check_program=command_check.check_answer)  # 0.3 s
    runner = CallRunner.for_settings(OfflineBackend(trees=WorkspaceCache()), settings)
    score_split(runner, text_tasks({"a": slow}), {"skill": "# S\n"}, settings,
                label="current", split="val")
    assert runner.agent_seconds() >= 0.5  # the check's sleep, not only the (instant) call
    with pytest.raises(BudgetExhausted, match="max_agent_minutes"):
        score_split(runner, text_tasks({"b": slow}), {"skill": "# S\n"}, settings,
                    label="current", split="val")


def test_workspace_check_time_is_part_of_the_agent_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gitsleep.backends.agent_cli import AgentCliBackend, AgentSpec
    from gitsleep.core.models import Check, Judge, Task
    from gitsleep.core.replay import answer_call

    editor = install("editor", tmp_path)
    repo = committed(tmp_path, monkeypatch, {"evals/tasks.jsonl": ""})
    slow = Check("command", json.dumps([PY, "-c", "import time; time.sleep(0.5)"]))
    (ready,) = task_trees.resolve(repo, [Task(id="w", prompt="Add --watch.", split="val",
                                              judge=Judge("rule", (slow,)),
                                              workspace="evals/fx")])
    backend = AgentCliBackend(AgentSpec(command=(str(editor),)), env=dict(os.environ),
                             trees=WorkspaceCache())
    try:
        answer = backend.complete(answer_call({"skill": "# S\n"}, ready, "agent", 0))
    finally:
        backend.close()
    assert answer.ok and answer.checks == ((0, True, ""),)
    assert answer.seconds is not None and answer.seconds >= 0.5


def test_an_argument_no_file_could_have_is_not_a_named_file(tmp_path: Path) -> None:
    """A `python -c` script longer than a file name can be is an argument, not a crash."""
    (tmp_path / "check.sh").write_text("exit 1\n")
    argv = [PY, "-c", "x = 1; " * 60, "check.sh", "-"]
    assert workspaces.named_fixture_files(tmp_path, argv) == ["check.sh"]


def test_rollout_check_time_counts_against_max_agent_minutes(tmp_path: Path) -> None:
    """Contrastive rollouts judge their answers through the same door as a scoring pass."""
    from gitsleep.backends.offline import OfflineBackend
    from gitsleep.core import rollouts
    from gitsleep.core.calls import CallRunner
    from gitsleep.core.models import EpochSettings

    slow = [PY, "-c", "import time; time.sleep(0.5)"]
    settings = EpochSettings("offline", "offline", "offline", workers=1, rollouts=2,
                             check_program=command_check.check_answer)
    runner = CallRunner.for_settings(OfflineBackend(trees=WorkspaceCache()), settings)
    sampled = rollouts.sample(runner, text_tasks({"a": slow}), {"skill": "# S\n"}, settings)
    assert [s.score.hard for s in sampled["a"] if s.score] == [1.0]
    assert runner.agent_seconds() >= 0.5


def test_a_path_through_a_link_of_the_fixture_is_not_put_back(tmp_path: Path) -> None:
    """Putting it back would replace the fixture's own link with a folder."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src/check.sh").write_text("exit 1\n")
    os.symlink("src", tmp_path / "lib")
    assert workspaces.named_fixture_files(tmp_path, ["sh", "lib/check.sh"]) == []
    assert workspaces.named_fixture_files(tmp_path, ["sh", "src/check.sh"]) == ["src/check.sh"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_file_that_cannot_be_put_back_fails_its_check_without_running_it(
        tmp_path: Path) -> None:
    from gitsleep.core.models import Check

    pristine, folder = tmp_path / "pristine", tmp_path / "agent"
    for root, text in ((pristine, WANTS_WATCH), (folder, "import sys\nsys.exit(0)\n")):
        (root / "checks").mkdir(parents=True)
        (root / "checks/verify.py").write_text(text)
    (folder / "CHANGELOG.md").write_text("# Changelog\n")
    (folder / "checks").chmod(0o555)  # the agent locked its rewrite in
    try:
        outcomes = workspaces.judge_checks(
            folder, [Check("command", json.dumps([PY, "checks/verify.py"]))], [],
            pristine=pristine)
    finally:
        (folder / "checks").chmod(0o755)
    ok, why = outcomes[0]
    assert not ok and "checks/verify.py could not be put back" in why


def test_doctor_shows_the_checks_time_beside_the_agents(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    editor = install("editor", tmp_path)
    slow = {"op": "command", "arg": [PY, "-c", "import time; time.sleep(0.3)"]}
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(editor, backend="command"),
        "evals/tasks.jsonl": task("v1", "val", slow) + task("t1", "train", slow)})
    result = run_cli(capsys, "--repo", str(repo), "doctor", "--skill", "changelog",
                     "--task", "v1")
    assert result.code == 0, result.err
    line = next(ln for ln in result.out.splitlines() if "time" in ln and "of checks" in ln)
    checks = float(line.split("(+")[1].split("s of checks")[0])
    assert checks >= 0.3, line


def test_a_relative_path_entry_never_finds_a_program_the_agent_planted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty or relative PATH entry means the check's folder: the agent's."""
    planted = tmp_path / "gitsleep-probe-check"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join(["", ".", "bin", os.environ["PATH"]]))
    seen = command_check.check_environment()["PATH"].split(os.pathsep)
    assert seen and all(entry.startswith("/") for entry in seen)
    with pytest.raises(command_check.CheckCannotRun):
        command_check.run_check(["gitsleep-probe-check"], tmp_path)


# --- '..' and links on a check's paths ----------------------------------------------------------


def test_dot_dot_through_a_folder_the_agent_linked_out_never_grades_it(tmp_path: Path) -> None:
    """Before: argv ["sh", "lib/../check.sh"]; the agent replaced `lib` with a link out of
    the workspace, only the normalised `check.sh` was put back, and the agent's own script
    graded the work (1.0)."""
    from gitsleep.core.models import Check

    pristine, folder, outside = tmp_path / "pristine", tmp_path / "agent", tmp_path / "out"
    for root in (pristine, folder):
        (root / "lib").mkdir(parents=True)
        (root / "lib/helpers.sh").write_text("true\n")
        (root / "check.sh").write_text("exit 1\n")  # the fixture's check: the work fails
    (outside / "inner").mkdir(parents=True)
    (outside / "check.sh").write_text("exit 0\n")  # the agent's: it passes itself
    (folder / "lib/helpers.sh").unlink()
    (folder / "lib").rmdir()
    os.symlink(outside / "inner", folder / "lib")
    outcomes = workspaces.judge_checks(folder, [Check("command", json.dumps(
        ["sh", "lib/../check.sh"]))], [], pristine=pristine)
    ok, why = outcomes[0]
    assert not ok and "lib/../check.sh" in why and "'..'" in why


def test_a_check_path_through_a_link_the_agent_left_is_not_run(tmp_path: Path) -> None:
    from gitsleep.core.models import Check

    pristine, folder, outside = tmp_path / "pristine", tmp_path / "agent", tmp_path / "out"
    (pristine / "tests").mkdir(parents=True)
    (pristine / "tests/test_ok.py").write_text("def test_ok():\n    assert False\n")
    folder.mkdir()
    outside.mkdir()
    os.symlink(outside, folder / "tests")  # the folder the check names, swapped for a link
    outcomes = workspaces.judge_checks(folder, [Check("command", json.dumps(
        ["sh", "-c", "exit 0", "tests"]))], [], pristine=pristine)
    ok, why = outcomes[0]
    assert not ok and "the symlink 'tests'" in why


def test_validate_refuses_dot_dot_and_links_on_a_workspace_checks_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = committed(tmp_path, monkeypatch, {
        ".gitsleep.yml": config(None),
        "evals/fx/check.sh": "exit 0\n",
        "evals/fx/real/check.sh": "exit 0\n",
        "evals/tasks.jsonl": (
            task("v1", "val", {"op": "command", "arg": ["sh", "lib/../check.sh"]})
            + task("v2", "val", {"op": "command", "arg": ["sh", "linked/check.sh"]})
            + task("v3", "val", {"op": "command", "arg": ["sh", "real/check.sh"]})
            + task("t1", "train", {"op": "command", "arg": ["sh", "check.sh"]})),
    })
    os.symlink("real", repo / "evals/fx/linked")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a link")
    result = run_cli(capsys, "--repo", str(repo), "validate")
    assert result.code == 1, result.out
    lines = [ln for ln in result.out.splitlines() if " GS132 " in ln]
    assert len(lines) == 2, result.out
    assert "task 'v1'" in lines[0] and "'..'" in lines[0]
    assert "task 'v2'" in lines[1] and "the symlink 'linked'" in lines[1]
