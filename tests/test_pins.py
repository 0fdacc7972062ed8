"""Pins that resolve without a release tag or a package index.

gitsleep has no tags yet and is on no index, so everything `init` and the docs write names a
commit: `pip install git+https://github.com/<owner>/gitsleep@<sha>`, `uses:
<owner>/gitsleep@<sha>`, `rev: <sha>` for pre-commit and the `$schema` URL at that commit.
The end-to-end test does what the docs say with a local git URL: one install at a SHA into a
fresh venv, `gitsleep init` from it, then the hooks through the real pre-commit at that rev.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import yaml

from gitsleep.flows import init as init_flow
from tests.support.cli import run_cli

pytestmark = pytest.mark.slow  # installs gitsleep with pip

PROJECT = Path(__file__).resolve().parents[1]
SNAPSHOT_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", ".venv-aider", "venv", "__pycache__", "*.pyc", "*.egg-info", ".pytest_cache",
    ".ruff_cache", ".hypothesis", ".gitsleep", "build", "dist", "results", "site",
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "gitsleep tests", "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "gitsleep tests", "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
WORKFLOW = ".github/workflows/gitsleep.yml"
SHA = "0123456789abcdef0123456789abcdef01234567"


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None,
       check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=env or {**os.environ, **GIT_ENV})
    assert not check or done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.mark.parametrize(("recorded", "commit"), [
    ({"url": "https://github.com/acme/gitsleep",
      "vcs_info": {"vcs": "git", "commit_id": SHA, "requested_revision": "main"}}, SHA),
    ({"url": "file:///srv/gitsleep", "dir_info": {"editable": True}}, None),
    ({"url": "https://example.org/gitsleep.tar.gz", "archive_info": {}}, None),
    ({"url": "https://hg.example.org/x", "vcs_info": {"vcs": "hg", "commit_id": SHA}}, None),
    ({"url": "https://github.com/a/b", "vcs_info": {"vcs": "git", "commit_id": "main"}}, None),
])
def test_the_commit_pip_recorded_for_a_git_install(recorded: dict[str, object],
                                                    commit: str | None) -> None:
    assert init_flow.recorded_commit(json.dumps(recorded)) == commit


def test_a_broken_record_is_no_commit() -> None:
    assert init_flow.recorded_commit("{not json") is None
    assert init_flow.recorded_commit(None) is None
    assert init_flow.recorded_commit('["a list"]') is None


def test_init_from_a_plain_directory_marks_the_placeholder_and_warns_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """This checkout is installed from a directory (editable): no commit pip could record."""
    assert init_flow.installed_commit() is None
    sh(tmp_path, "git", "init", "-q")  # init refuses outside a git repository
    result = run_cli(capsys, "--repo", str(tmp_path), "init", "--action-repo", "acme/gitsleep")

    assert result.code == 0, result.err
    warnings = [line for line in result.err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "COMMIT_SHA" in warnings[0], result.err
    text = (tmp_path / WORKFLOW).read_text()
    steps = yaml.safe_load(text)["jobs"]["consolidate"]["steps"]
    assert steps[-1]["uses"] == "acme/gitsleep@COMMIT_SHA"
    assert "git+https://github.com/acme/gitsleep@COMMIT_SHA" in text
    assert "v0.1.0" not in text  # no tag that does not exist
    assert "replace COMMIT_SHA" in result.out
    # every file init pinned is named in the step that says what to replace
    assert (f"in {WORKFLOW} (twice), .github/workflows/gitsleep-review.yml (once) and in the "
            "`$schema` line of .gitsleep.yml") in result.out


def test_action_ref_names_the_commit_or_a_tag_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sh(tmp_path, "git", "init", "-q")  # init refuses outside a git repository
    result = run_cli(capsys, "--repo", str(tmp_path), "init", "--action-repo", "acme/gitsleep",
                     "--action-ref", SHA)

    assert result.code == 0, result.err
    assert "warning:" not in result.err
    text = (tmp_path / WORKFLOW).read_text()
    assert "COMMIT_SHA" not in text and "OWNER" not in text
    assert yaml.safe_load(text)["jobs"]["consolidate"]["steps"][-1]["uses"] == (
        f"acme/gitsleep@{SHA}")
    assert f"gitsleep @ git+https://github.com/acme/gitsleep@{SHA}" in text
    assert (tmp_path / ".gitsleep.yml").read_text().startswith(
        "# yaml-language-server: $schema=https://raw.githubusercontent.com/acme/gitsleep/"
        f"{SHA}/schemas/gitsleep-config.schema.json\n")
    assert f"rev: {SHA}" in result.out and "repo: https://github.com/acme/gitsleep" in result.out

    bad = run_cli(capsys, "--repo", str(tmp_path / "x"), "init", "--action-ref", "a b;c")
    assert bad.code == 2 and "--action-ref" in bad.err


@pytest.fixture(scope="module")
def gitsleep_at_a_commit(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This project committed into a git repository: (path, sha), as a fork on GitHub is."""
    dest = tmp_path_factory.mktemp("origin") / "gitsleep"
    shutil.copytree(PROJECT, dest, ignore=SNAPSHOT_IGNORE, symlinks=True)
    sh(dest, "git", "init", "-q")
    sh(dest, "git", "add", "-A")
    sh(dest, "git", "-c", "commit.gpgsign=false", "commit", "-q", "-m", "snapshot")
    return dest, sh(dest, "git", "rev-parse", "HEAD").stdout.strip()


def test_install_at_a_sha_then_init_and_pre_commit_use_that_sha(
        tmp_path: Path, gitsleep_at_a_commit: tuple[Path, str]) -> None:
    """`pip install git+<url>@<sha>` as the docs say, then `init` and `rev: <sha>`."""
    source, sha = gitsleep_at_a_commit
    venv = tmp_path / "venv"
    sh(tmp_path, sys.executable, "-m", "venv", str(venv))
    # one install, gitsleep alone: its dependencies come from this test run's environment
    site = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"])
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    sh(tmp_path, str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps",
       f"git+file://{source}@{sha}")

    user = tmp_path / "user"
    user.mkdir()
    sh(user, "git", "init", "-q")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    for name in ("GITHUB_TOKEN", "GH_TOKEN", "OPENAI_API_KEY", "PRE_COMMIT_COLOR"):
        env.pop(name, None)
    init = sh(user, str(venv / "bin" / "gitsleep"), "init", "--action-repo", "acme/gitsleep",
              env=env)
    assert "warning:" not in init.stderr, init.stderr
    workflow = (user / WORKFLOW).read_text()
    assert f"uses: acme/gitsleep@{sha}" in workflow
    assert f"git+https://github.com/acme/gitsleep@{sha}" in workflow
    assert f"/acme/gitsleep/{sha}/schemas/" in (user / ".gitsleep.yml").read_text()
    assert f"rev: {sha}" in init.stdout

    # the pre-commit config init prints, with the local clone in place of GitHub
    printed = init.stdout.split("add to .pre-commit-config.yaml:\n", 1)[1]
    config = yaml.safe_load(textwrap.dedent(printed))
    assert config == {"repos": [{"repo": "https://github.com/acme/gitsleep", "rev": sha,
                                 "hooks": [{"id": "gitsleep-validate"},
                                           {"id": "gitsleep-learned-block"}]}]}
    config["repos"][0]["repo"] = str(source)
    (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    pending = {"id": "h-0123456789ab", "prompt": "Write a brief on caching.", "split": "train",
               "judge": {"kind": "rule", "checks": [{"op": "contains", "arg": "Risks"}]},
               "review": "pending"}
    with (user / "evals/example-skill/tasks.jsonl").open("a") as handle:
        handle.write(json.dumps(pending) + "\n")
    sh(user, "git", "add", "-A")
    hooks = sh(user, sys.executable, "-m", "pre_commit", "run", "--all-files", "--color",
               "never", env=env, check=False)

    assert hooks.returncode == 0, hooks.stdout + hooks.stderr
    assert hooks.stdout.count("Passed") == 2
    # a passing hook still shows gitsleep's warnings: a pending task is not silently skipped
    assert "GS119" in hooks.stdout and "h-0123456789ab" in hooks.stdout, hooks.stdout


def test_the_setup_comment_counts_the_pins_it_filled_in() -> None:
    nightly = init_flow.workflow_template()
    review = init_flow.workflow_template("gitsleep-review.yml")
    assert nightly is not None and review is not None
    filled = init_flow.fill_workflow(nightly, "acme/gitsleep", SHA).decode()
    assert f"set the gitsleep action to acme/gitsleep@{SHA} (twice below)." in filled
    assert filled.count(f"acme/gitsleep@{SHA}") == 3  # the comment and the two pins
    once = init_flow.fill_workflow(review, "acme/gitsleep", SHA).decode()
    assert f"set the gitsleep action to acme/gitsleep@{SHA} (once below)." in once
    assert "COMMIT_SHA" not in once and "OWNER" not in once


def test_filled_workflows_say_init_wrote_them_and_drop_the_placeholder_ignore() -> None:
    """The review workflow's header still said "Copy this file to ..."
    after `init` wrote it there, and the zizmor ignore meant for the placeholder pin
    stayed after the SHA was filled in."""
    for name, path in (("gitsleep-nightly.yml", init_flow.WORKFLOW_PATH),
                       ("gitsleep-review.yml", init_flow.REVIEW_WORKFLOW_PATH)):
        source = init_flow.workflow_template(name)
        assert source is not None and b"ignore[unpinned-uses]" in source
        filled = init_flow.fill_workflow(source, "acme/gitsleep", SHA).decode()
        assert f"# `gitsleep init` wrote this file as {path}. Before it runs:" in filled
        assert "Copy this file" not in filled
        assert "ignore[unpinned-uses]" not in filled
        assert f"uses: acme/gitsleep@{SHA}\n" in filled
        placeholder = init_flow.fill_workflow(source, "acme/gitsleep", None).decode()
        assert "ignore[unpinned-uses]" in placeholder  # still a placeholder to ignore


def test_the_review_workflow_runs_for_claude_code_skill_folders() -> None:
    """Claude Code keeps project skills under .claude/skills/ (and
    .agents/skills/); a pull request touching only those started no review."""
    review = init_flow.workflow_template("gitsleep-review.yml")
    assert review is not None
    paths = yaml.safe_load(review)[True]["pull_request"]["paths"]
    assert ".claude/skills/**" in paths and ".agents/skills/**" in paths
