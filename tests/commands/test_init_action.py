"""`gitsleep init` fills in the gitsleep action's repository, and says what is left to do."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gitsleep.flows import init as init_flow
from tests.support.cli import run_cli
from tests.support.gitrepo import git, isolate_git

TAG = "COMMIT_SHA"  # an editable install records no commit: the placeholder stays
WORKFLOW = ".github/workflows/gitsleep.yml"


@pytest.fixture(autouse=True)
def in_git(tmp_path: Path) -> None:
    """init works in a git repository (it refuses elsewhere): tmp_path is one."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)


def check_workflow_schema(path: Path) -> None:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool, "check-jsonschema is a test dependency"
    done = subprocess.run([tool, "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_init_fills_the_action_repository_and_the_comment_matches(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(tmp_path), "init", "--action-repo", "acme/gitsleep")

    assert result.code == 0, result.err
    text = (tmp_path / WORKFLOW).read_text()
    assert "OWNER" not in text and "v0.1.0" not in text
    steps = yaml.safe_load(text)["jobs"]["consolidate"]["steps"]
    assert steps[-1]["uses"] == f"acme/gitsleep@{TAG}"
    assert f"git+https://github.com/acme/gitsleep@{TAG}" in text
    assert f"# `gitsleep init` wrote this file as {WORKFLOW}. Before it runs:" in text
    assert f"#   1. `gitsleep init` set the gitsleep action to acme/gitsleep@{TAG}" in text
    assert "replace COMMIT_SHA there" in text
    assert "Copy this file" not in text
    check_workflow_schema(tmp_path / WORKFLOW)
    assert (tmp_path / ".gitsleep.yml").read_text().startswith(
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/acme/gitsleep/"
        f"{TAG}/schemas/gitsleep-config.schema.json\n")
    assert (f"  4. in {WORKFLOW} (twice), .github/workflows/gitsleep-review.yml (once) and in "
            "the `$schema` line of .gitsleep.yml, replace COMMIT_SHA with the full SHA of the "
            "gitsleep commit to run") in result.out
    assert "  5. add the repository secret OPENAI_API_KEY" in result.out
    assert "  6. commit the files" in result.out


def test_without_a_known_repository_next_steps_say_to_replace_owner(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(tmp_path), "init")

    assert result.code == 0, result.err
    text = (tmp_path / WORKFLOW).read_text()
    found = init_flow.installed_from()  # a GitHub checkout of gitsleep names itself
    if found:
        assert f"uses: {found}@{TAG}" in text and "OWNER" not in text
    else:
        assert f"uses: OWNER/gitsleep@{TAG}" in text
        assert "Replace OWNER and COMMIT_SHA below (twice each)" in text
        assert "replace OWNER with the account that publishes gitsleep" in result.out
        assert "/OWNER/gitsleep/" in (tmp_path / ".gitsleep.yml").read_text()
    assert "Copy this file" not in text


def test_a_kept_workflow_is_said_to_be_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / WORKFLOW).parent.mkdir(parents=True)
    (tmp_path / WORKFLOW).write_text("name: mine\n")
    result = run_cli(capsys, "--repo", str(tmp_path), "init", "--action-repo", "acme/gitsleep")
    assert f"commit the files; {WORKFLOW} was kept as it was" in result.out
    assert (tmp_path / WORKFLOW).read_text() == "name: mine\n"


def test_a_bad_action_repo_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "--repo", str(tmp_path), "init", "--action-repo", "not a repo")
    assert result.code == 2 and "--action-repo" in result.err
    assert not (tmp_path / ".gitsleep.yml").exists()


def test_the_origin_of_a_gitsleep_checkout_names_the_action(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_git(monkeypatch, tmp_path)
    checkout = tmp_path / "gitsleep"
    git(tmp_path, "init", "--quiet", str(checkout))
    git(checkout, "remote", "add", "origin", "git@github.com:acme/gitsleep.git")
    (checkout / "pkg").mkdir()
    assert init_flow.origin_repo(checkout / "pkg") == "acme/gitsleep"
    git(checkout, "remote", "set-url", "origin", "/srv/git/gitsleep.git")
    assert init_flow.origin_repo(checkout / "pkg") is None


@pytest.mark.parametrize(("url", "repo"), [
    ("https://github.com/acme/gitsleep", "acme/gitsleep"),
    ("https://github.com/acme/gitsleep.git\n", "acme/gitsleep"),
    ("ssh://git@github.com/acme/git.sleep.git", "acme/git.sleep"),
    ("https://gitlab.com/acme/gitsleep", None),
    ("https://github.com/acme", None),
])
def test_github_repo_from_url(url: str, repo: str | None) -> None:
    assert init_flow.github_repo(url) == repo
