"""`harvest --branch` under the git safety rules consolidate already keeps, and a reviewed-away
task that stays away: real git repositories with a bare origin, a reviewer's own clone, and
committed symlinks aimed outside the repository and into `.git/hooks`.

Each test here failed before harvest went through `gitsleep.git_forge.publish_sequence`.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_harvest_run import HARVESTED, SESSIONS, example_files, harvest
from tests.support.cli import CliResult
from tests.support.gitrepo import clone, commit_files, git, isolate_git, make_repo
from tests.support.transcripts import claude_file

BRANCH = "gitsleep-harvest/brief-writer"  # harvest's namespace; consolidate's is gitsleep/


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    home = isolate_git(monkeypatch, tmp_path)
    for name in (
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_REPOSITORY",
        "GITHUB_API_URL",
        "GITSLEEP_MODEL",
        "GITSLEEP_BACKEND",
        "GITSLEEP_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    work, origin = make_repo(tmp_path, example_files())
    for turns in SESSIONS:
        claude_file(home, work, turns)
    return work, origin, home


def tasks_on(repo: Path, rev: str) -> list[dict]:
    return [json.loads(line) for line in git(repo, "show", f"{rev}:{HARVESTED}").splitlines()]


def first_harvest(capsys: pytest.CaptureFixture[str], work: Path) -> str:
    """Harvest onto the branch once; return the branch it made (read from --json)."""
    done = harvest(capsys, work, "--from", "claude", "--branch", "--json")
    assert done.code == 0, done.err
    return str(json.loads(done.out)["branch"]["branch"])


def reviewer_clone(origin: Path, tmp_path: Path, branch: str) -> Path:
    """A reviewer's own clone with the harvest branch checked out."""
    review = clone(origin, tmp_path / "reviewer")
    git(review, "checkout", "--quiet", branch)
    return review


def new_session(home: Path, work: Path) -> None:
    claude_file(
        home,
        work,
        [
            ("Write a decision brief on archiving old S3 buckets.", "x"),
            ("no, add a Cost section", "ok"),
        ],
    )


# -- (a) a reviewer's pushed commit survives -------------------------------------------


def test_a_reviewers_pushed_commit_survives_a_second_harvest(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    assert git(origin, "rev-parse", branch) == git(work, "rev-parse", branch)

    review = reviewer_clone(origin, tmp_path, branch)  # the local branch in `work` is stale
    accepted = (review / HARVESTED).read_text().replace('"review": "pending", ', "")
    reviewed = commit_files(review, {HARVESTED: accepted}, "accept the harvested tasks")
    git(review, "push", "--quiet", "origin", branch)

    new_session(home, work)
    again = harvest(capsys, work, "--from", "claude", "--branch")
    assert again.code == 0, again.err
    tip = git(origin, "rev-parse", branch)
    git(origin, "merge-base", "--is-ancestor", reviewed, tip)  # fails unless it survived
    assert git(origin, "rev-list", "--count", f"{reviewed}..{tip}") == "1"  # one commit on top
    on_origin = tasks_on(origin, branch)
    assert [t.get("review") for t in on_origin] == [None, None, None, "pending"]
    assert "1 task(s) marked review: pending committed on " + branch in again.out


# -- (b) a branch gitsleep never made, a person's local-only commit -----------------------


def test_a_branch_gitsleep_never_made_is_not_moved(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin, _ = repo
    git(work, "branch", BRANCH)
    git(work, "worktree", "add", "--quiet", str(work.parent / "mine"), BRANCH)
    mine = commit_files(work.parent / "mine", {"NOTES.md": "my own notes\n"}, "my notes")
    git(work, "worktree", "remove", str(work.parent / "mine"))

    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 2, (result.out, result.err)
    assert f"branch '{BRANCH}'" in result.err and "is not gitsleep's" in result.err
    assert "Traceback" not in result.err
    assert git(work, "rev-parse", BRANCH) == mine
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""


def test_a_persons_local_only_commit_is_not_pushed(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    pushed = git(origin, "rev-parse", branch)
    git(work, "worktree", "add", "--quiet", str(work.parent / "mine"), branch)
    mine = work.parent / "mine"
    private = commit_files(
        mine, {HARVESTED: (mine / HARVESTED).read_text() + "\n"}, "a local tweak I have not shared"
    )
    git(work, "worktree", "remove", str(mine))

    new_session(home, work)
    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 4, (result.out, result.err)
    assert "a local tweak I have not shared" in result.err and "Traceback" not in result.err
    assert git(work, "rev-parse", branch) == private  # not moved
    assert git(origin, "rev-parse", branch) == pushed  # nothing pushed
    assert private not in git(origin, "rev-list", "--all")


# -- (c) harvest's branch names cannot be consolidate's -----------------------------------


SKILLS = ["x", "harvest", "harvest-x", "harvest-harvest-x", "brief-writer", "a1", "0"]
PREFIXES = ["gitsleep/", "gitsleep", "gs-", "team/gitsleep/", "bots/", "a.b/", "g_"]


def _clash(one: str, other: str) -> bool:
    """Equal, or one a folder of the other (git cannot hold both refs)."""
    return one == other or one.startswith(other + "/") or other.startswith(one + "/")


@pytest.mark.parametrize("prefix", PREFIXES)
def test_no_harvest_branch_is_or_shadows_a_consolidate_branch(prefix: str) -> None:
    from gitsleep.git_forge.publish_sequence import harvest_branch, skill_branch

    assert harvest_branch(prefix, "x") != skill_branch(prefix, "harvest-x")
    harvest_names = {harvest_branch(prefix, s) for s in SKILLS}
    consolidate_names = {skill_branch(prefix, s) for s in SKILLS}
    assert len(harvest_names) == len(SKILLS) == len(consolidate_names)
    assert not [(h, c) for h in harvest_names for c in consolidate_names if _clash(h, c)]
    for name in harvest_names:
        git(Path.cwd(), "check-ref-format", f"refs/heads/{name}")  # raises when git refuses


def test_the_default_names_are_documented_ones() -> None:
    from gitsleep.git_forge.publish_sequence import harvest_branch, skill_branch

    assert harvest_branch("gitsleep/", "brief-writer") == BRANCH
    assert (skill_branch("gitsleep/", "harvest-brief-writer")
            == "gitsleep/harvest-brief-writer")


# -- (d), (e) writes through symlinks -------------------------------------------------------


def _hooks(work: Path) -> dict[str, bytes]:
    hooks = work / ".git" / "hooks"
    return {p.name: p.read_bytes() for p in hooks.iterdir()} if hooks.is_dir() else {}


def _link_on_branch(
    work: Path, origin: Path, tmp_path: Path, branch: str, relative: str, target: str
) -> None:
    """A reviewer replaces `relative` on the harvest branch with a symlink and pushes."""
    review = reviewer_clone(origin, tmp_path, branch)
    path = review / relative
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            child.unlink()
        path.rmdir()
    else:
        path.unlink()
    os.symlink(target, path)
    git(review, "add", "-A")
    git(review, "commit", "--quiet", "-m", "link the task file")
    git(review, "push", "--quiet", "origin", branch)
    git(work, "fetch", "--quiet", "origin", f"+{branch}:{branch}")  # the local branch too


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_committed_symlink_to_outside_the_repo_is_refused(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path, what: str
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "harvested.jsonl").write_text("precious\n")
    relative, target = (
        (HARVESTED, str(outside / "harvested.jsonl"))
        if what == "file"
        else (str(Path(HARVESTED).parent), str(outside))
    )
    _link_on_branch(work, origin, tmp_path, branch, relative, target)
    tip = git(origin, "rev-parse", branch)

    new_session(home, work)
    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 2, (result.out, result.err)
    assert "symlink" in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert (outside / "harvested.jsonl").read_text() == "precious\n"
    assert sorted(p.name for p in outside.iterdir()) == ["harvested.jsonl"]
    assert git(origin, "rev-parse", branch) == tip


def test_a_committed_symlink_into_git_hooks_writes_nothing_there(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    before = _hooks(work)
    # from <git dir>/gitsleep/worktrees/<id>/evals/brief-writer, five levels up is the git dir
    _link_on_branch(work, origin, tmp_path, branch, HARVESTED, "../../../../../hooks/pre-commit")

    new_session(home, work)
    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 2, (result.out, result.err)
    assert "symlink" in result.err and "Traceback" not in result.err
    assert _hooks(work) == before
    assert not (work / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize("target", ["../../.git/hooks/pre-commit", "held-out.jsonl"])
def test_a_task_file_linked_in_the_checkout_is_refused(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], target: str
) -> None:
    work, _, _ = repo
    before = _hooks(work)
    link = work / HARVESTED
    os.symlink(target, link)
    linked = (link.parent / target).resolve()
    content = linked.read_bytes() if linked.exists() else None

    result = harvest(capsys, work, "--from", "claude")

    assert result.code == 2, (result.out, result.err)
    assert "symlink" in result.err and HARVESTED in result.err
    assert _hooks(work) == before
    assert (linked.read_bytes() if linked.exists() else None) == content


def test_output_inside_the_git_dir_is_refused(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _, _ = repo
    before = _hooks(work)
    result = harvest(capsys, work, "--from", "claude", "--output", ".git/hooks/pre-commit")
    assert result.code == 2, (result.out, result.err)
    assert ".git" in result.err and "Traceback" not in result.err
    assert _hooks(work) == before


# -- class 11: a task deleted in review stays deleted ----------------------------------------


def test_a_task_deleted_in_review_does_not_come_back(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _, _ = repo
    assert harvest(capsys, work, "--from", "claude").code == 0
    commit_files(work, {HARVESTED: (work / HARVESTED).read_text()}, "harvested tasks")
    kept, *rest = (work / HARVESTED).read_text().splitlines(keepends=True)
    deleted = [json.loads(line)["id"] for line in rest]
    commit_files(work, {HARVESTED: kept}, "review: keep one harvested task")

    again = harvest(capsys, work, "--from", "claude", "--json")

    assert again.code == 0, again.err
    assert (work / HARVESTED).read_text() == kept
    summary = json.loads(again.out)
    assert summary["tasks"] == 0
    assert summary["dropped_tasks"]["deleted in an earlier review (git history)"] == len(deleted)


def test_a_task_deleted_on_the_harvest_branch_does_not_come_back(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    review = reviewer_clone(origin, tmp_path, branch)
    first, *others = (review / HARVESTED).read_text().splitlines(keepends=True)
    commit_files(review, {HARVESTED: "".join(others)}, "review: delete one task")
    git(review, "push", "--quiet", "origin", branch)

    new_session(home, work)
    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    ids = [t["id"] for t in tasks_on(origin, branch)]
    assert json.loads(first)["id"] not in ids
    assert len(ids) == len(others) + 1  # the reviewed tasks and the one new task


def test_a_commit_whose_push_failed_is_pushed_by_the_next_harvest(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin, _ = repo
    git(origin, "config", "receive.maxInputSize", "1")  # the remote refuses every pack
    failed = harvest(capsys, work, "--from", "claude", "--branch")
    assert failed.code == 4, (failed.out, failed.err)
    made = git(work, "rev-parse", BRANCH)
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""

    git(origin, "config", "--unset", "receive.maxInputSize")
    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    assert git(origin, "rev-parse", BRANCH) == made == git(work, "rev-parse", BRANCH)
    assert "the commit an earlier run could not push" in again.out


def test_an_unpushed_harvest_commit_that_a_review_overtook_is_redone_on_the_review(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    review = reviewer_clone(origin, tmp_path, branch)
    new_session(home, work)
    git(origin, "config", "receive.maxInputSize", "1")
    assert harvest(capsys, work, "--from", "claude", "--branch").code == 4  # commit kept here
    git(origin, "config", "--unset", "receive.maxInputSize")
    accepted = (review / HARVESTED).read_text().replace('"review": "pending", ', "")
    reviewed = commit_files(review, {HARVESTED: accepted}, "accept the harvested tasks")
    git(review, "push", "--quiet", "origin", branch)  # the branch has now diverged

    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    tip = git(origin, "rev-parse", branch)
    git(origin, "merge-base", "--is-ancestor", reviewed, tip)
    assert git(work, "rev-parse", branch) == tip
    assert [t.get("review") for t in tasks_on(origin, branch)] == [None, None, None, "pending"]


@pytest.mark.parametrize("style", ["merge", "squash"])
def test_after_the_pull_request_is_merged_harvest_starts_from_the_base(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], style: str
) -> None:
    """Merged with a merge commit, or squashed and then a task dropped in review on main."""
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    if style == "merge":
        git(work, "merge", "--quiet", "--no-ff", "-m", "merge harvested tasks", branch)
    else:
        _merge_as_github_does(work, branch, style)
    first, *others = (work / HARVESTED).read_text().splitlines(keepends=True)
    commit_files(work, {HARVESTED: "".join(others)}, "drop one harvested task")
    git(work, "push", "--quiet", "origin", "main")

    new_session(home, work)
    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    assert git(work, "rev-parse", f"{branch}~1") == git(work, "rev-parse", "main")
    assert git(origin, "rev-parse", f"{branch}~1") == git(origin, "rev-parse", "main")
    ids = [t["id"] for t in tasks_on(origin, branch)]
    assert json.loads(first)["id"] not in ids and len(ids) == len(others) + 1
    assert _merges_cleanly(origin, branch)


# -- --output must be a JSON Lines file, in the checkout and on the branch -------------------


YAML_TASKS = (
    "# reviewed by hand\n"
    "- id: extra-1\n"
    "  prompt: Write a decision brief on a new CDN.\n"
    "  judge: {kind: rule, checks: [{op: section_present, arg: Key Risks}]}\n"
)
JSON_TASKS = json.dumps(
    [{"id": "extra-1", "prompt": "Write a decision brief on a new CDN.",
      "judge": {"kind": "rule", "checks": [{"op": "section_present", "arg": "Key Risks"}]}}],
    indent=2,
) + "\n"
NOT_JSON_LINES = [
    ("evals/brief-writer/extra.yaml", YAML_TASKS),
    ("evals/brief-writer/extra.json", JSON_TASKS),
    ("evals/brief-writer/extra.jsonl", JSON_TASKS),  # a JSON document, named .jsonl
    ("evals/brief-writer/extra.jsonl", YAML_TASKS),
]


def _refused(result: CliResult, *words: str) -> None:
    """Exit 2 with one line that holds `words`, and no traceback."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1, result.err
    for word in words:
        assert word in result.err, result.err


@pytest.mark.parametrize("on_branch", [False, True])
@pytest.mark.parametrize(("relative", "content"), NOT_JSON_LINES)
def test_output_that_is_not_a_json_lines_file_is_refused(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], relative: str,
    content: str, on_branch: bool
) -> None:
    work, origin, _ = repo
    commit_files(work, {relative: content}, "a task file written by hand")
    git(work, "push", "--quiet", "origin", "main")

    result = harvest(capsys, work, "--from", "claude", "--output", relative,
                     *(["--branch"] if on_branch else []))

    _refused(result, relative, "JSON Lines", ".jsonl")
    assert (work / relative).read_text() == content
    assert git(work, "status", "--porcelain") == ""
    assert git(work, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""


@pytest.mark.parametrize("on_branch", [False, True])
def test_output_named_like_another_format_is_refused_before_it_exists(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], on_branch: bool
) -> None:
    work, origin, _ = repo
    result = harvest(capsys, work, "--from", "claude", "--output", "evals/new.yaml",
                     *(["--branch"] if on_branch else []))
    _refused(result, "evals/new.yaml", ".jsonl")
    assert not (work / "evals" / "new.yaml").exists()
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""


def test_a_json_lines_output_with_another_name_case_is_appended_to(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _, _ = repo
    result = harvest(capsys, work, "--from", "claude", "--output", "evals/brief-writer/H.JSONL")
    assert result.code == 0, result.err
    assert len((work / "evals/brief-writer/H.JSONL").read_text().splitlines()) == 3


def test_a_harvest_branch_whose_task_file_became_a_json_document_is_not_appended_to(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    review = reviewer_clone(origin, tmp_path, branch)
    records = [json.loads(line) for line in (review / HARVESTED).read_text().splitlines()]
    pretty = json.dumps(records, indent=2) + "\n"
    commit_files(review, {HARVESTED: pretty}, "review: one JSON array")
    git(review, "push", "--quiet", "origin", branch)
    tip = git(origin, "rev-parse", branch)

    new_session(home, work)
    result = harvest(capsys, work, "--from", "claude", "--branch")

    _refused(result, HARVESTED, "JSON Lines", branch)
    assert git(origin, "rev-parse", branch) == tip
    assert git(origin, "show", f"{branch}:{HARVESTED}") + "\n" == pretty


# -- --output that is a folder, or under a file -------------------------------------------------


@pytest.mark.parametrize("on_branch", [False, True])
@pytest.mark.parametrize(
    ("output", "files", "words"),
    [
        ("evals/brief-writer", {}, ["evals/brief-writer", "is a folder", "harvested.jsonl"]),
        ("evals/brief-writer/more.jsonl", {"evals/brief-writer/more.jsonl/README.md": "kept\n"},
         ["evals/brief-writer/more.jsonl", "is a folder"]),
        ("NOTES/tasks.jsonl", {"NOTES": "my notes\n"}, ["NOTES/tasks.jsonl", "NOTES is a file"]),
        ("NOTES/deeper/tasks.jsonl", {"NOTES": "my notes\n"}, ["NOTES is a file"]),
    ],
)
def test_output_that_is_a_folder_or_under_a_file_is_one_clear_line(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], output: str,
    files: dict[str, str], words: list[str], on_branch: bool
) -> None:
    work, origin, _ = repo
    if files:
        commit_files(work, dict(files), "files of my own")
        git(work, "push", "--quiet", "origin", "main")
    before = {p: (work / p).read_text() for p in files}

    result = harvest(capsys, work, "--from", "claude", "--output", output,
                     *(["--branch"] if on_branch else []))

    _refused(result, *words)
    assert "deleted there in an earlier review" not in result.out
    assert {p: (work / p).read_text() for p in files} == before
    assert git(work, "status", "--porcelain") == ""
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""


# -- a pull request merged by "Squash and merge" or "Rebase and merge" -------------------------


def _merge_as_github_does(work: Path, branch: str, style: str) -> None:
    """Merge the harvest branch into main the way GitHub's other buttons do, and push main:
    the branch tip is then not an ancestor of main, though all its changes are in it."""
    commit_files(work, {"NOTES.md": "unrelated work on main\n"}, "meanwhile on main")
    if style == "squash":
        git(work, "merge", "--quiet", "--squash", branch)
        git(work, "commit", "--quiet", "--no-verify", "-m", "Harvested tasks (#12)")
    else:
        git(work, "cherry-pick", "--allow-empty", f"main..{branch}")
    assert git(work, "merge-base", "--is-ancestor", branch, "main", check=False) == ""
    git(work, "push", "--quiet", "origin", "main")


def _merges_cleanly(origin: Path, branch: str) -> bool:
    done = subprocess.run(["git", "merge-tree", "--write-tree", "main", branch], cwd=origin,
                          capture_output=True, text=True, check=False)
    return done.returncode == 0


@pytest.mark.parametrize("style", ["squash", "rebase"])
def test_after_a_squash_or_rebase_merge_harvest_starts_from_the_base(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], style: str
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    merged = tasks_on(origin, branch)
    _merge_as_github_does(work, branch, style)

    new_session(home, work)
    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    assert git(origin, "rev-parse", f"{branch}~1") == git(origin, "rev-parse", "main")
    assert git(work, "rev-parse", branch) == git(origin, "rev-parse", branch)
    assert git(origin, "diff", "--name-only", "main", branch) == HARVESTED
    on_branch = tasks_on(origin, branch)
    assert on_branch[: len(merged)] == merged and len(on_branch) == len(merged) + 1
    assert _merges_cleanly(origin, branch)
    assert "1 task(s) marked review: pending committed on " + branch in again.out


def test_a_review_pushed_after_a_squash_merge_is_still_built_on(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, origin, home = repo
    branch = first_harvest(capsys, work)
    _merge_as_github_does(work, branch, "squash")
    review = reviewer_clone(origin, tmp_path, branch)
    accepted = (review / HARVESTED).read_text().replace('"review": "pending", ', "")
    reviewed = commit_files(review, {HARVESTED: accepted}, "accept the harvested tasks")
    git(review, "push", "--quiet", "origin", branch)

    new_session(home, work)
    again = harvest(capsys, work, "--from", "claude", "--branch")

    assert again.code == 0, again.err
    tip = git(origin, "rev-parse", branch)
    git(origin, "merge-base", "--is-ancestor", reviewed, tip)  # fails unless it survived
    assert git(origin, "rev-list", "--count", f"{reviewed}..{tip}") == "1"


# -- error lines that say what to do --------------------------------------------------------


def test_an_unreachable_remote_is_named_with_its_url_and_the_fix(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    work, _, _ = repo
    missing = tmp_path / "moved-away.git"
    git(work, "remote", "set-url", "origin", str(missing))

    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 4, (result.out, result.err)
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert f"remote origin ({missing})" in result.err
    assert "does not appear to be a git repository" in result.err
    assert "and the repository exists" not in result.err
    assert "git remote" in result.err  # how to check or fix the URL
    assert git(work, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""


def test_an_unreachable_remote_url_is_shown_without_its_credentials(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, _, _ = repo
    git(work, "remote", "set-url", "origin", "https://someone:hunter2-token@127.0.0.1:9/x.git")

    result = harvest(capsys, work, "--from", "claude", "--branch")

    assert result.code == 4, (result.out, result.err)
    assert "remote origin (https://127.0.0.1:9/x.git)" in result.err
    assert "hunter2" not in result.err and "someone" not in result.err


def test_harvest_from_the_harvest_branch_itself_says_to_check_out_another(
    repo: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    work, origin, _ = repo
    git(work, "checkout", "--quiet", "-b", BRANCH)

    result = harvest(capsys, work, "--from", "claude", "--branch")

    _refused(result, BRANCH, "checked out here", "check out another branch (e.g. main)",
             "re-run")
    assert "branch_prefix" not in result.err
    assert git(work, "rev-parse", BRANCH) == git(work, "rev-parse", "main")
    assert git(origin, "rev-parse", "--verify", "--quiet", BRANCH, check=False) == ""
