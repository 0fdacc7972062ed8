"""Paths that alias, writes through symlinks, symlink loops: real links in `tmp_path`.

Found by trying gitsleep as an attacker and a careless user would:
- documents that alias (memory a symlink to the skill, a skill document that is a link
  to a task file, two skills sharing a document): the epoch ran, then `git add` of the
  link staged nothing and the accepted rules were lost ("nothing to commit");
- a committed `.gitsleep` symlink moved the cache and the run diagnostics out of the
  repository, and `init` appended through a linked `.gitignore` and wrote through a
  linked `skills/`;
- symlink loops in any configured path (and in a path given to `validate`) ended in a
  RuntimeError traceback.
Each now ends in one line and a documented exit code, before any model call.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gitsleep.base import bundled
from gitsleep.core.cache import ResponseCache
from gitsleep.core.models import Answer
from tests.support.cli import CliResult, run_cli
from tests.support.gitrepo import git, isolate_git, make_repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "brief-writer"
SKILL_MD = "skills/brief-writer/SKILL.md"
TASKS = "evals/brief-writer/tasks.jsonl"
HELD_OUT = "evals/brief-writer/held-out.jsonl"
CONFIG = ".gitsleep.yml"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled example as working files (validate, --dry-run and eval need no git)."""
    for name in ("GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "repo"
    shutil.copytree(EXAMPLE, root)
    return root


def validate(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "validate", *extra)


def dry_run(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "consolidate", "--dry-run", *extra)


def evaluate(capsys: pytest.CaptureFixture[str], root: Path) -> CliResult:
    return run_cli(capsys, "--repo", str(root), "eval", "--split", "val")


def error_lines(result: CliResult) -> list[str]:
    return [line for line in result.err.splitlines() if line.startswith("gitsleep: error:")]


def assert_one_line(result: CliResult, code: int, *fragments: str) -> str:
    """Exit `code`, one `gitsleep: error:` line holding every fragment, no traceback."""
    assert "Traceback" not in result.err, result.err
    assert result.code == code, (result.code, result.out, result.err[-2000:])
    lines = error_lines(result)
    assert len(lines) == 1, result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert len(lines[0]) < 600
    return lines[0]


def assert_no_model_call(result: CliResult) -> None:
    assert "scoring" not in result.err and "model calls" not in result.err, result.err


def assert_problem(result: CliResult, code: str, *fragments: str) -> str:
    """validate: exit 1 and a `path:line: CODE message` line holding every fragment."""
    assert "Traceback" not in result.err, result.err
    assert result.code == 1, (result.code, result.out, result.err)
    hits = [line for line in result.out.splitlines()
            if f" {code} " in line and all(f in line for f in fragments)]
    assert hits, result.out
    return hits[0]


def edit_config(root: Path, change: Callable[[dict], None]) -> None:
    cfg = yaml.safe_load((root / CONFIG).read_text())
    change(cfg)
    (root / CONFIG).write_text(yaml.safe_dump(cfg, sort_keys=False))


def link(path: Path, target: str) -> None:
    """Make `path` a (relative) symlink to `target`, replacing any file there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.symlink_to(target)


def second_skill(root: Path, **fields: object) -> dict:
    """A second skill with its own document and task files (copies of the first's)."""
    (root / "skills/other").mkdir(parents=True, exist_ok=True)
    (root / "skills/other/SKILL.md").write_text(
        (root / SKILL_MD).read_text().replace("brief-writer", "other"))
    skill = {"name": "other", "skill": "skills/other/SKILL.md",
             "tasks": [{"path": TASKS}, {"path": HELD_OUT, "split": "test"}]}
    skill.update(fields)
    return skill


# -- documents that alias ---------------------------------------------------------------
# Each case: how to build it, the field that is refused, and words the line must hold.


def _memory_links_to_skill(root: Path) -> None:
    link(root / "AGENTS.md", SKILL_MD)
    edit_config(root, lambda c: c["skills"][0].update(memory="AGENTS.md"))


def _skill_links_to_task_file(root: Path) -> None:
    link(root / SKILL_MD, f"../../{HELD_OUT}")


def _task_file_links_to_skill(root: Path) -> None:
    link(root / "evals/extra.jsonl", f"../{SKILL_MD}")
    edit_config(root, lambda c: c["skills"][0]["tasks"].append({"path": "evals/extra.jsonl"}))


def _two_skills_one_document(root: Path) -> None:
    edit_config(root, lambda c: c["skills"].append(second_skill(root, skill=SKILL_MD)))


def _two_skills_linked_documents(root: Path) -> None:
    other = second_skill(root)
    link(root / "skills/other/SKILL.md", "../brief-writer/SKILL.md")
    edit_config(root, lambda c: c["skills"].append(other))


def _two_skills_one_memory(root: Path) -> None:
    (root / "AGENTS.md").write_text("# Agents\n")

    def change(cfg: dict) -> None:
        cfg["skills"][0]["memory"] = "AGENTS.md"
        cfg["skills"].append(second_skill(root, memory="AGENTS.md"))

    edit_config(root, change)


def _other_skills_task_file_is_a_document(root: Path) -> None:
    other = second_skill(root)
    other["tasks"].append({"path": SKILL_MD})
    edit_config(root, lambda c: c["skills"].append(other))


def _memory_links_to_other_skills_document(root: Path) -> None:
    other = second_skill(root, memory="AGENTS.md")
    link(root / "AGENTS.md", SKILL_MD)
    edit_config(root, lambda c: c["skills"].append(other))


ALIAS_CASES = [
    ("memory-links-to-skill", _memory_links_to_skill, "skills[0].memory", "skills[0].skill"),
    ("skill-links-to-task-file", _skill_links_to_task_file, "skills[0].skill",
     "skills[0].tasks[1].path"),
    ("task-file-links-to-skill", _task_file_links_to_skill, "skills[0].tasks[2].path",
     "skills[0].skill"),
    ("two-skills-one-document", _two_skills_one_document, "skills[1].skill", "skills[0].skill"),
    ("two-skills-linked-documents", _two_skills_linked_documents, "skills[1].skill",
     "skills[0].skill"),
    ("task-file-of-one-is-document-of-another", _other_skills_task_file_is_a_document,
     "skills[1].tasks[2].path", "skills[0].skill"),
    ("memory-links-to-other-skills-skill", _memory_links_to_other_skills_document,
     "skills[1].memory", "skills[0].skill"),
]


@pytest.mark.parametrize(("build", "field", "other"), [c[1:] for c in ALIAS_CASES],
                         ids=[c[0] for c in ALIAS_CASES])
def test_aliased_documents_are_a_validate_problem_and_stop_before_any_model_call(
    repo: Path, capsys: pytest.CaptureFixture[str], build: Callable[[Path], None], field: str,
    other: str
) -> None:
    build(repo)
    line = assert_problem(validate(capsys, repo), "GS002", field, other)
    assert line.startswith(f"{CONFIG}:"), "the fix is in the config: the line points there"
    # every skill the alias touches is refused, with the config file, the field and the fix
    for args in ([], ["--skill", "brief-writer"]):
        result = dry_run(capsys, repo, *args)
        assert_one_line(result, 2, CONFIG, field, other)
        assert_no_model_call(result)
    assert_one_line(evaluate(capsys, repo), 2, CONFIG, field, other)


def test_a_document_reached_through_a_symlink_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CLAUDE.md -> AGENTS.md as the memory: gitsleep wrote AGENTS.md through the link and
    `git add CLAUDE.md` staged nothing; the config must name the real file."""
    (repo / "AGENTS.md").write_text("# Agents\n")
    link(repo / "CLAUDE.md", "AGENTS.md")
    edit_config(repo, lambda c: c["skills"][0].update(memory="CLAUDE.md"))
    assert_problem(validate(capsys, repo), "GS003", "skills[0].memory", "AGENTS.md")
    result = dry_run(capsys, repo)
    assert_one_line(result, 2, CONFIG, "skills[0].memory", "point it at AGENTS.md")
    assert_no_model_call(result)


def test_a_document_under_a_linked_directory_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.move(repo / "skills", repo / "real-skills")
    link(repo / "skills", "real-skills")
    assert_problem(validate(capsys, repo), "GS003", "skills[0].skill",
                   "real-skills/brief-writer/SKILL.md")
    assert_one_line(dry_run(capsys, repo), 2, "skills[0].skill")


def test_a_task_file_listed_twice_through_a_link_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link(repo / "evals/again.jsonl", "brief-writer/tasks.jsonl")
    edit_config(repo, lambda c: c["skills"][0]["tasks"].append({"path": "evals/again.jsonl"}))
    assert_problem(validate(capsys, repo), "GS002", "skills[0].tasks[2].path",
                   "skills[0].tasks[0].path")
    assert_one_line(dry_run(capsys, repo), 2, "skills[0].tasks[2].path")


def test_task_files_shared_by_two_skills_and_linked_task_files_stay_allowed(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tasks are only read: sharing a task file, or keeping it behind a link, is fine."""
    shutil.move(repo / HELD_OUT, repo / "evals/real-held-out.jsonl")
    link(repo / HELD_OUT, "../real-held-out.jsonl")
    edit_config(repo, lambda c: c["skills"].append(second_skill(repo)))
    result = validate(capsys, repo)
    assert result.code == 0, result.out


def test_two_skills_may_share_one_memory_document(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A repository-wide AGENTS.md is every skill's memory: each skill's branch edits it on
    its own, and two pull requests touching one file are a normal review, not lost data."""
    _two_skills_one_memory(repo)
    result = validate(capsys, repo)
    assert result.code == 0, result.out
    assert "GS002" not in result.out


@pytest.fixture
def git_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_git(monkeypatch, tmp_path)
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "GITHUB_REPOSITORY", "GITHUB_API_URL",
                 "GITSLEEP_MODEL", "GITSLEEP_BACKEND", "GITSLEEP_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    files = {p.relative_to(EXAMPLE).as_posix(): p.read_bytes()
             for p in EXAMPLE.rglob("*") if p.is_file()}
    files[".gitignore"] = b".gitsleep/\n"
    work, _origin = make_repo(tmp_path, files)
    return work


def test_consolidate_with_memory_linked_to_the_skill_stops_before_the_epoch(
    git_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reproduction: the epoch ran, accepted rules, then `nothing to commit` (exit 4)."""
    link(git_repo / "AGENTS.md", SKILL_MD)
    edit_config(git_repo, lambda c: c["skills"][0].update(memory="AGENTS.md"))
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "memory is the skill")
    result = run_cli(capsys, "--repo", str(git_repo), "consolidate", "--no-push")
    assert_one_line(result, 2, CONFIG, "skills[0].memory", "skills[0].skill")
    assert_no_model_call(result)
    assert git(git_repo, "branch", "--list", "gitsleep/*") == ""


def test_consolidate_refuses_a_document_linked_at_the_base_commit(
    git_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The working tree is fine but the committed tree links the skill to a task file:
    consolidate reads the base commit, so it is checked there too."""
    work_text = (git_repo / SKILL_MD).read_bytes()
    link(git_repo / SKILL_MD, f"../../{HELD_OUT}")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "skill is a link")
    (git_repo / SKILL_MD).unlink()
    (git_repo / SKILL_MD).write_bytes(work_text)  # the checkout differs from the commit
    result = run_cli(capsys, "--repo", str(git_repo), "consolidate", "--no-push")
    assert_one_line(result, 2, SKILL_MD, HELD_OUT)
    assert_no_model_call(result)


# -- no write outside the repository ----------------------------------------------------


def _snapshot(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


@pytest.mark.parametrize("linked", [".gitsleep", ".gitsleep/runs", ".gitsleep/cache"])
def test_a_linked_run_directory_never_receives_a_write(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], linked: str
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    link(repo / linked, str(outside))
    result = dry_run(capsys, repo)
    assert_one_line(result, 2, linked, "outside the repository")
    assert_no_model_call(result)
    assert _snapshot(outside) == []
    assert_problem(validate(capsys, repo), "GS004", linked)
    if linked != ".gitsleep/runs":  # eval writes the cache, never a run directory
        assert_one_line(evaluate(capsys, repo), 2, linked)
        assert _snapshot(outside) == []


def test_a_looping_run_directory_is_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link(repo / ".gitsleep", ".gitsleep")
    assert_one_line(dry_run(capsys, repo), 2, ".gitsleep", "symlink loop")
    assert_problem(validate(capsys, repo), "GS004", ".gitsleep", "symlink loop")


def test_explicit_output_dir_and_a_runs_link_inside_the_repository_are_fine(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "build").mkdir()
    link(repo / ".gitsleep/runs", "../build")
    outside = tmp_path / "chosen"
    result = dry_run(capsys, repo, "--output-dir", str(outside))
    assert result.code == 0, result.err
    assert (outside / "diagnostics.json").is_file()
    assert any((repo / ".gitsleep" / "cache").iterdir())


@pytest.mark.parametrize("linked", [".gitsleep", ".gitsleep/cache"])
def test_a_cache_path_through_a_link_inside_the_repository_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str], linked: str
) -> None:
    """A link that stays in the repository still lets a commit choose the cached answers."""
    (repo / "build" / "cache").mkdir(parents=True)
    link(repo / linked, "build" if linked == ".gitsleep" else "../build/cache")
    assert_one_line(dry_run(capsys, repo), 2, f"the symlink '{linked}'", "cache: false")
    assert_one_line(evaluate(capsys, repo), 2, f"the symlink '{linked}'")
    assert_problem(validate(capsys, repo), "GS007", f"'{linked}'")
    edit_config(repo, lambda cfg: cfg.update(cache=False))
    assert dry_run(capsys, repo).code == 0


def test_a_cache_entry_folder_linked_out_is_neither_written_nor_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    cache_dir = tmp_path / "repo" / ".gitsleep" / "cache"
    cache_dir.mkdir(parents=True)
    key = "ab" + "0" * 62
    (cache_dir / "ab").symlink_to(outside)
    cache = ResponseCache(cache_dir)
    cache.put(key, Answer(text="reply", prompt_tokens=1, completion_tokens=1))
    assert _snapshot(outside) == []
    (outside / f"{key}.json").write_text(json.dumps({"text": "planted"}))
    assert ResponseCache(cache_dir).get(key) is None


@pytest.fixture
def examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bundled-examples"
    (folder / "workflows").mkdir(parents=True)
    (folder / "workflows" / "gitsleep-nightly.yml").write_bytes(b"name: nightly\n")
    monkeypatch.setattr(bundled, "examples_dir", lambda: folder)
    return folder


def _init(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> CliResult:
    if not (root / ".git").exists():  # init refuses outside a git repository
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return run_cli(capsys, "--repo", str(root), "init", *args)


@pytest.mark.parametrize(("name", "is_dir"), [
    (".gitignore", False), ("skills", True), (".github", True), ("evals", True),
    (".github/workflows", True), ("skills/example-skill", True),
])
def test_init_never_writes_through_a_link_out_of_the_repository(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str], name: str,
    is_dir: bool
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    target = outside / "target"
    if is_dir:
        target.mkdir()
    else:
        target.write_bytes(b"precious\n")
    root = tmp_path / "repo"
    root.mkdir()
    link(root / name, str(target))
    before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    result = _init(capsys, root)
    assert_one_line(result, 2, name, "outside the repository")
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == before
    assert not (root / CONFIG).exists(), "nothing is written when one target is refused"


def test_init_writes_through_a_link_that_stays_inside_the_repository(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "dotfiles").mkdir()
    (tmp_path / "dotfiles" / "gitignore").write_text("node_modules\n")
    link(tmp_path / ".gitignore", "dotfiles/gitignore")
    result = _init(capsys, tmp_path)
    assert result.code == 0, result.err
    assert ".gitsleep/cache/" in (tmp_path / "dotfiles" / "gitignore").read_text()


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda r: (r / ".gitignore").mkdir(), ".gitignore"),
    (lambda r: (r / ".github").write_text("not a folder\n"), ".github"),
    (lambda r: (r / "skills").write_text("not a folder\n"), "skills"),
    (lambda r: (r / CONFIG).mkdir(), CONFIG),
    (lambda r: link(r / ".gitignore", ".gitignore"), ".gitignore"),
    (lambda r: link(r / "skills", "skills"), "skills"),
])
@pytest.mark.parametrize("force", [False, True])
def test_init_on_odd_files_is_one_line_and_writes_nothing(
    tmp_path: Path, examples: Path, capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None], fragment: str, force: bool
) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    make(tmp_path)
    before = _snapshot(tmp_path)
    result = _init(capsys, tmp_path, *(["--force"] if force else []))
    assert_one_line(result, 2, fragment)
    assert _snapshot(tmp_path) == before


# -- symlink loops: one line, never a traceback ------------------------------------------


def _loop_skill(root: Path) -> None:
    link(root / SKILL_MD, "SKILL.md")


def _loop_memory(root: Path) -> None:
    link(root / "mem/AGENTS.md", "AGENTS.md")
    edit_config(root, lambda c: c["skills"][0].update(memory="mem/AGENTS.md"))


def _loop_memory_parent(root: Path) -> None:
    link(root / "mem", "mem")
    edit_config(root, lambda c: c["skills"][0].update(memory="mem/AGENTS.md"))


def _loop_task_file(root: Path) -> None:
    link(root / HELD_OUT, "held-out.jsonl")


def _loop_task_parent(root: Path) -> None:
    shutil.rmtree(root / "evals")
    link(root / "evals", "evals")


LOOPS = [("skill", _loop_skill, SKILL_MD), ("memory", _loop_memory, "mem/AGENTS.md"),
         ("memory-parent", _loop_memory_parent, "mem/AGENTS.md"),
         ("task-file", _loop_task_file, HELD_OUT), ("task-parent", _loop_task_parent, TASKS)]


@pytest.mark.parametrize(("build", "where"), [c[1:] for c in LOOPS], ids=[c[0] for c in LOOPS])
def test_symlink_loops_in_configured_paths_are_one_line(
    repo: Path, capsys: pytest.CaptureFixture[str], build: Callable[[Path], None], where: str
) -> None:
    build(repo)
    result = validate(capsys, repo)
    assert "Traceback" not in result.err and result.code == 1, (result.code, result.err)
    assert any(where in line and "symbolic links" in line for line in result.out.splitlines()), \
        result.out
    for result in (dry_run(capsys, repo), evaluate(capsys, repo)):
        assert_one_line(result, 2, where, "symbolic links")
        assert_no_model_call(result)


def test_a_config_that_is_a_symlink_loop_is_one_line_without_the_init_hint(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link(repo / CONFIG, CONFIG)
    for result in (validate(capsys, repo), dry_run(capsys, repo), evaluate(capsys, repo)):
        line = assert_one_line(result, 2, CONFIG, "symbolic links")
        assert "gitsleep init" not in line, "the file exists: init would not help"


@pytest.mark.parametrize("args", [
    ["validate", "loop.md"],
    ["validate", "--learned-block-only", "loop.md"],
    ["validate", "--learned-block-only", "loopdir/x.md"],
])
@pytest.mark.parametrize("with_config", [True, False])
def test_a_looping_path_given_to_validate_or_the_hook_is_not_a_traceback(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    args: list[str], with_config: bool
) -> None:
    monkeypatch.chdir(repo)  # pre-commit runs hooks at the root with relative paths
    link(repo / "loop.md", "loop.md")
    link(repo / "loopdir", "loopdir")
    if not with_config:
        (repo / CONFIG).unlink()
    result = run_cli(capsys, "--repo", str(repo), *args)
    assert "Traceback" not in result.err, result.err
    if args[1] != "--learned-block-only":
        assert result.code == (0 if with_config else 2), (result.code, result.out, result.err)
    elif with_config:
        assert result.code == 0, (result.out, result.err)  # not a configured document
    else:
        assert result.code == 1, (result.out, result.err)
        assert "symbolic links" in result.out


# -- a forge token as the model key -----------------------------------------------------

FORGE_TOKENS = ["GITHUB_TOKEN", "GH_TOKEN", "GITLAB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
                "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "CI_JOB_TOKEN", "GH_ENTERPRISE_TOKEN",
                "github_token"]


@pytest.mark.parametrize("name", FORGE_TOKENS)
def test_a_forge_token_as_api_key_env_is_refused(
    repo: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    edit_config(repo, lambda c: c.update(api_key_env=name, base_url="https://llm.example.com/v1"))
    for result in (validate(capsys, repo), dry_run(capsys, repo)):
        line = assert_one_line(result, 2, CONFIG, "api_key_env", "forge token")
        assert_no_model_call(result)
        assert "OPENAI_API_KEY" in line, "the line says what to use instead"


def test_github_models_may_use_the_github_token_but_not_once_base_url_moves(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub Models takes the workflow's GITHUB_TOKEN: the token goes back to GitHub."""
    edit_config(repo, lambda c: c.update(api_key_env="GITHUB_TOKEN",
                                         base_url="https://models.github.ai/inference"))
    assert validate(capsys, repo).code == 0
    monkeypatch.setenv("GITSLEEP_BASE_URL", "https://llm.example.com/v1")
    assert_one_line(dry_run(capsys, repo), 2, "api_key_env", "forge token")
    monkeypatch.delenv("GITSLEEP_BASE_URL")
    for look_alike in ("https://models.github.ai.example.com/v1", "http://models.github.ai/x",
                       "https://models.github.ai@llm.example.com/v1"):
        edit_config(repo, lambda c, u=look_alike: c.update(base_url=u))
        assert_one_line(validate(capsys, repo), 2, "api_key_env", "forge token")
    edit_config(repo, lambda c: c.update(base_url="https://models.github.ai/inference",
                                         azure={"endpoint": "https://llm.example.com"}))
    assert_one_line(validate(capsys, repo), 2, "api_key_env", "forge token")


def test_other_key_names_stay_accepted(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "MY_LLM_TOKEN", "GITHUB_MODELS_KEY"):
        edit_config(repo, lambda c, n=name: c.update(api_key_env=n))
        assert validate(capsys, repo).code == 0, name

