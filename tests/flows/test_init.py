"""`gitsleep init`: a setup that validates at once, and never clobbers a user's files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitsleep.base import bundled
from gitsleep.flows import init as init_flow
from gitsleep.inputs.config import load_config
from gitsleep.inputs.tasks import load_skill_tasks
from tests.support.cli import run_cli

WORKFLOW = b"name: gitsleep nightly\non: {workflow_dispatch: {}}\n"
CREATED = (".gitsleep.yml", "skills/example-skill/SKILL.md", "evals/example-skill/tasks.jsonl",
           ".github/workflows/gitsleep.yml")


@pytest.fixture(autouse=True)
def in_git(tmp_path: Path) -> None:
    """init works in a git repository (it refuses elsewhere): tmp_path is one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A bundled-examples folder holding the nightly workflow (a test-only stand-in)."""
    folder = tmp_path / "bundled-examples"
    (folder / "workflows").mkdir(parents=True)
    (folder / "workflows" / "gitsleep-nightly.yml").write_bytes(WORKFLOW)
    monkeypatch.setattr(bundled, "examples_dir", lambda: folder)
    return folder


def run(capsys: pytest.CaptureFixture[str], repo: Path, *args: str) -> tuple[int, str, str]:
    """The real CLI in-process: (exit code, stdout, stderr)."""
    result = run_cli(capsys, "--repo", str(repo), *args)
    return result.code, result.out, result.err


def test_fresh_init_writes_everything_and_validates(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    code, out, _ = run(capsys, repo, "init")
    assert code == 0
    for rel in CREATED:
        assert (repo / rel).is_file() and f"{rel}: created" in out
    assert (repo / ".github/workflows/gitsleep.yml").read_bytes() == WORKFLOW
    assert (repo / ".gitignore").read_text() == (
        "# gitsleep run diagnostics and response cache\n.gitsleep/runs/\n.gitsleep/cache/\n")
    assert "Next steps" in out and "gitsleep validate" in out

    code, out, err = run(capsys, repo, "validate")
    # the example's 2 val and 2 held-out tasks get the small-split warning, counted
    assert (code, out) == (0, "") and "0 error(s), 1 warning(s)" in err


def test_init_names_the_skills_already_in_the_repository(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In a repository that already has skills, init added the example
    beside them without a word. It still writes the example (gitsleep cannot write tasks
    for a skill it does not know, and steps 1-2 must run offline), and now names the
    team's skills and says how to switch to them."""
    repo = tmp_path / "repo"
    for rel in (".claude/skills/review/SKILL.md", ".agents/skills/triage/SKILL.md",
                "skills/notes/SKILL.md"):
        (repo / rel).parent.mkdir(parents=True)
        (repo / rel).write_text("---\nname: x\ndescription: d\n---\n")
    code, out, _ = run(capsys, repo, "init")
    assert code == 0
    assert ("Your skills are already here (skills/notes/SKILL.md, .claude/skills/review/SKILL.md,"
            " .agents/skills/triage/SKILL.md)") in out
    assert "point `skill:` at one of yours, write its tasks, and delete skills/example-skill/" \
        in out
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert "Your skills" not in run(capsys, fresh, "init")[1]


def test_init_files_are_what_the_rest_of_gitsleep_expects(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, tmp_path, "init")
    config = load_config(tmp_path / ".gitsleep.yml")
    assert config.backend == "offline" and config.models() == ("offline",) * 3
    assert "backend: openai" in (tmp_path / ".gitsleep.yml").read_text(), "shows how to switch"
    skill = config.skill("example-skill")
    tasks = load_skill_tasks(tmp_path, skill)
    assert {t.split for t in tasks} == {"train", "val", "test"}
    assert all(t.judge.kind == "rule" and not t.judge.format_only for t in tasks)
    text = (tmp_path / skill.skill).read_text()
    assert text.startswith("---\nname: example-skill\ndescription: ")
    assert "<!-- gitsleep:learned:start -->\n<!-- gitsleep:learned:end -->\n" in text


def test_existing_files_are_kept_unless_forced(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".gitsleep.yml").write_text("# mine\n")
    skill = tmp_path / "skills/example-skill/SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("my skill\n")
    code, out, _ = run(capsys, tmp_path, "init")
    assert code == 0
    assert ".gitsleep.yml: exists, kept" in out
    assert "skills/example-skill/SKILL.md: exists, kept" in out
    assert "evals/example-skill/tasks.jsonl: created" in out
    assert (tmp_path / ".gitsleep.yml").read_text() == "# mine\n"
    assert skill.read_text() == "my skill\n"

    code, out, _ = run(capsys, tmp_path, "init", "--force")
    assert code == 0 and ".gitsleep.yml: replaced" in out
    assert "backend: offline" in (tmp_path / ".gitsleep.yml").read_text()
    assert skill.read_text() != "my skill\n"


def test_force_replaces_a_symlink_instead_of_writing_through_it(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = tmp_path / "outside.yml"
    outside.write_text("precious\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".gitsleep.yml").symlink_to(outside)
    run(capsys, repo, "init", "--force")
    assert outside.read_text() == "precious\n"
    assert not (repo / ".gitsleep.yml").is_symlink()


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b"node_modules", b"node_modules\n# gitsleep run diagnostics and response cache\n"
                          b".gitsleep/runs/\n.gitsleep/cache/\n"),
        (b"a\r\nb\r\n", b"a\r\nb\r\n# gitsleep run diagnostics and response cache\r\n"
                        b".gitsleep/runs/\r\n.gitsleep/cache/\r\n"),
        (b"x\n.gitsleep/runs/\n", b"x\n.gitsleep/runs/\n"
                                  b"# gitsleep run diagnostics and response cache\n"
                                  b".gitsleep/cache/\n"),
        (b".gitsleep/\n", b".gitsleep/\n"),
        (b"/.gitsleep/runs\n.gitsleep/cache/\n", b"/.gitsleep/runs\n.gitsleep/cache/\n"),
    ],
)
def test_gitignore_is_appended_once_and_kept_byte_for_byte(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str], before: bytes,
    after: bytes
) -> None:
    (tmp_path / ".gitignore").write_bytes(before)
    run(capsys, tmp_path, "init")
    assert (tmp_path / ".gitignore").read_bytes() == after
    code, out, _ = run(capsys, tmp_path, "init")
    assert code == 0 and (tmp_path / ".gitignore").read_bytes() == after
    assert ".gitignore: already ignores" in out


def test_missing_workflow_template_is_skipped_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bundled, "examples_dir", lambda: tmp_path / "nowhere")
    code, out, err = run(capsys, tmp_path, "init")
    assert code == 0 and "skipped .github/workflows/gitsleep.yml" in err
    assert not (tmp_path / ".github").exists()
    assert run(capsys, tmp_path, "validate")[0] == 0


def test_init_honours_config_option(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "conf" / "gitsleep.yml"
    cfg.parent.mkdir()
    code, out, _ = run(capsys, tmp_path, "--config", str(cfg), "init")
    assert code == 0 and cfg.is_file() and not (tmp_path / ".gitsleep.yml").exists()
    assert f"--config {cfg} validate" in out
    assert run(capsys, tmp_path, "--config", str(cfg), "validate")[0] == 0


def test_real_bundled_workflow_is_copied_when_present(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        source = bundled.examples_dir() / "workflows" / "gitsleep-nightly.yml"
    except FileNotFoundError:
        source = None
    if source is None or not source.is_file():
        pytest.skip("the bundled nightly workflow is not in this checkout yet")
    run(capsys, tmp_path, "init")
    written = (tmp_path / ".github/workflows/gitsleep.yml").read_bytes()
    # the bundled workflow, with its setup comment and (when known) the action repo filled in
    assert written == init_flow.fill_workflow(source.read_bytes(), init_flow.installed_from())
    assert len(written.splitlines()) == len(source.read_bytes().splitlines())


def test_init_outside_a_git_repository_refuses_and_writes_nothing(
    tmp_path_factory: pytest.TempPathFactory, examples: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path_factory.mktemp("plain")  # not under the git repository tmp_path is
    code, out, err = run(capsys, plain, "init")
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        f"gitsleep: error: {plain.resolve()}: not inside a git repository: run `git init` "
        "there first (gitsleep works on branches of a git repository), then `gitsleep init`"]
    assert list(plain.iterdir()) == []
