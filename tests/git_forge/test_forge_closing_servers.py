"""The GitHub client against servers that end each connection.

Proxies and GitHub Enterprise front ends answer with `Connection: close` or speak HTTP/1.0.
http.client then closes its socket as soon as it has the headers and reads the body from
the file it made; the total-deadline reader must keep reading that body, not the closed
socket. Real PyGithub, through gitsleep's forge, against the loopback fake, many times,
since the failure depended on timing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gitsleep.base.errors import GitError
from gitsleep.git_forge.forge import ForgeSettings, GitHubForge, Pacing, sync_pull_request
from tests.support.cli import init_repo, run_cli
from tests.support.fake_github import FakeGitHub
from tests.support.gitrepo import commit_files, git

pytestmark = pytest.mark.slow  # servers that hang up mid-reply

HEAD = "gitsleep/brief-writer"
GETS = 150  # per server shape; 69 of 300 failed before the fix

SHAPES = {
    "connection-close": {"close_connections": True},
    "http-1.0": {"protocol": "HTTP/1.0"},
    "http-1.0-and-close": {"protocol": "HTTP/1.0", "close_connections": True},
}


@pytest.fixture(params=sorted(SHAPES))
def closing(request: pytest.FixtureRequest) -> Iterator[FakeGitHub]:
    with FakeGitHub(**SHAPES[request.param]) as server:
        yield server


def client(fake: FakeGitHub, timeout: int = 15) -> GitHubForge:
    return GitHubForge(
        ForgeSettings(fake.api_url, fake.repository, fake.token),
        pacing=Pacing.none(),
        timeout=timeout,
    )


def test_every_get_succeeds_when_the_server_closes_each_connection(closing: FakeGitHub):
    closing.add_pull(HEAD, title="an open pull request", body="a body " * 200)
    forge = client(closing)
    failures: list[str] = []
    found = 0
    for _ in range(GETS):
        try:
            found += forge.find_open_pr(HEAD) is not None
            found += forge.find_closed_pr(HEAD) is not None
        except GitError as exc:
            failures.append(str(exc))
    forge.close()
    assert failures == [], f"{len(failures)} of {2 * GETS} GETs failed: {failures[0]}"
    assert found == GETS  # the open one every time, never a closed one
    gets = [r for r in closing.requests if r.method == "GET" and r.path.endswith("/pulls")]
    assert len(gets) == 2 * GETS


def test_a_whole_pull_request_sync_works_when_the_server_closes_each_connection(
    closing: FakeGitHub,
):
    forge = client(closing)
    arguments = {
        "head": HEAD,
        "base": "main",
        "body": "## Scores\n",
        "labels": ["gitsleep"],
        "draft": False,
        "improved": True,
        "branch_changed": True,
        "close_reason": "no longer improves",
    }
    assert sync_pull_request(forge, title="first", **arguments).operation == "created"
    assert sync_pull_request(forge, title="second", **arguments).operation == "updated"
    forge.close()
    assert [p["title"] for p in closing.pulls.values()] == ["second"]


def test_the_total_deadline_still_holds_when_the_server_closes_each_connection(closing: FakeGitHub):
    """Headers at once, then a byte every 0.2 s on a closing connection: cut at 1 s."""
    closing.trickle_interval, closing.trickle_seconds = 0.2, 8.0
    forge = client(closing, timeout=1)
    closing.trickle_next(10)
    started = time.monotonic()
    with pytest.raises(GitError) as raised:
        forge.find_open_pr(HEAD)
    elapsed = time.monotonic() - started
    forge.close()
    assert raised.value.exit_code == 4
    assert str(raised.value).startswith("GitHub did not answer within 1s"), raised.value
    assert elapsed < 4, f"bounded by the 1 s deadline, took {elapsed:.1f}s"


def test_a_night_opens_its_pull_request_through_a_server_that_closes_each_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole consolidate: it pushed its branch and stopped with exit 4 before the PR."""
    work, _ = init_repo(tmp_path, monkeypatch, capsys)
    with FakeGitHub(protocol="HTTP/1.0", close_connections=True) as github:
        for key, value in github.env().items():
            monkeypatch.setenv(key, value)
        for night in range(3):  # a new base each night: a new epoch, the PR updated
            if night:
                skill = work / "skills/example-skill/SKILL.md"
                commit_files(
                    work,
                    {
                        "skills/example-skill/SKILL.md": skill.read_text()
                        + f"\n<!-- night {night} -->\n"
                    },
                    f"night {night}",
                )
                git(work, "push", "--quiet", "origin", "main")
            done = run_cli(capsys, "--repo", str(work), "consolidate", "--push", "--json")
            assert done.code == 0, done.err
            assert json.loads(done.out)["pr"]["operation"] in ("created", "updated")
        assert len(github.pulls) == 1
