"""The forge layer: real PyGithub against the loopback fake of the GitHub REST API."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from gitsleep.base.errors import GitError
from gitsleep.git_forge.forge import (
    MAX_BODY_CHARS,
    ForgeSettings,
    GitHubForge,
    Pacing,
    PrOutcome,
    fit_body,
    forge_from_env,
    parse_remote_url,
    settings_from_env,
    sync_pull_request,
)
from tests.support.fake_github import (
    FakeGitHub,
    Fault,
    not_permitted,
    secondary_rate_limit,
    server_error,
)

HEAD = "gitsleep/brief-writer"


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def forge(fake: FakeGitHub) -> Iterator[GitHubForge]:
    client = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                         pacing=Pacing.none())
    yield client
    client.close()


def sync(forge: GitHubForge, **overrides: Any) -> PrOutcome:
    arguments: dict[str, Any] = {
        "head": HEAD, "base": "main", "title": "gitsleep(brief-writer): held-out 0.0 -> 1.0",
        "body": "## Scores\n\n| split | before | after |\n", "labels": ["gitsleep"],
        "draft": False, "improved": True, "branch_changed": True,
        "close_reason": "The latest epoch no longer improves the held-out score.",
    }
    arguments.update(overrides)
    return sync_pull_request(forge, **arguments)


def pull_creations(fake: FakeGitHub) -> int:
    return sum(1 for r in fake.requests if r.method == "POST" and r.path.endswith("/pulls"))


# --- the pull-request rules ---------------------------------------------------------------


def test_improvement_creates_exactly_one_labelled_pr(fake: FakeGitHub, forge: GitHubForge):
    outcome = sync(forge, labels=["gitsleep", "skills"])

    assert outcome.operation == "created"
    assert [pull["number"] for pull in fake.open_pulls()] == [outcome.number]
    pull = fake.pulls[outcome.number]
    assert (pull["head"]["ref"], pull["base"]["ref"]) == (HEAD, "main")
    assert pull["title"] == "gitsleep(brief-writer): held-out 0.0 -> 1.0"
    assert [label["name"] for label in pull["labels"]] == ["gitsleep", "skills"]
    assert outcome.url == pull["html_url"]
    assert pull_creations(fake) == 1
    assert outcome.to_json() == {"operation": "created", "number": outcome.number,
                                 "url": pull["html_url"]}


def test_second_improvement_updates_the_same_pr(fake: FakeGitHub, forge: GitHubForge):
    first = sync(forge)
    second = sync(forge, title="gitsleep(brief-writer): held-out 0.0 -> 0.8",
                  body="## Scores\n\nnew table\n")

    assert second.operation == "updated"
    assert second.number == first.number
    assert len(fake.pulls) == 1 and pull_creations(fake) == 1
    assert fake.pulls[first.number]["body"] == "## Scores\n\nnew table\n"
    assert fake.pulls[first.number]["title"].endswith("0.0 -> 0.8")


def test_identical_title_and_body_make_no_write(fake: FakeGitHub, forge: GitHubForge):
    first = sync(forge)
    writes_before = len(fake.writes)

    unchanged = sync(forge, branch_changed=False)
    pushed = sync(forge, branch_changed=True)

    assert len(fake.writes) == writes_before
    assert unchanged == PrOutcome("none", first.number, first.url, unchanged.detail)
    # New commits on the branch change the PR even when its description stays the same.
    assert (pushed.operation, pushed.number) == ("updated", first.number)


def test_no_improvement_comments_then_closes_the_open_pr(fake: FakeGitHub, forge: GitHubForge):
    number = fake.add_pull(HEAD, title="old", body="old body")

    outcome = sync(forge, improved=False, close_reason="Held-out fell from 0.8 to 0.5.")

    assert (outcome.operation, outcome.number) == ("closed", number)
    assert fake.pulls[number]["state"] == "closed"
    assert [comment["body"] for comment in fake.comments[number]] == [
        "Held-out fell from 0.8 to 0.5."]
    methods = [(r.method, r.path.rsplit("/", 1)[-1]) for r in fake.writes]
    assert methods == [("POST", "comments"), ("PATCH", str(number))]


def test_no_improvement_and_no_pr_does_nothing(fake: FakeGitHub, forge: GitHubForge):
    outcome = sync(forge, improved=False)

    assert outcome == PrOutcome("none", None, None, outcome.detail)
    assert fake.writes == []
    assert fake.pulls == {}


def test_unchanged_result_whose_pr_was_closed_is_not_reopened(fake: FakeGitHub,
                                                              forge: GitHubForge):
    number = fake.add_pull(HEAD, state="closed")

    outcome = sync(forge, branch_changed=False)

    assert (outcome.operation, outcome.number) == ("none", number)
    assert fake.writes == []
    # A new result on the branch deserves a new PR, even after a closed one.
    assert sync(forge, branch_changed=True).operation == "created"


def test_other_branches_prs_are_left_alone(fake: FakeGitHub, forge: GitHubForge):
    other = fake.add_pull("gitsleep/other-skill", title="other", body="other")

    outcome = sync(forge)

    assert outcome.operation == "created" and outcome.number != other
    assert fake.pulls[other]["title"] == "other"


def test_draft_pr(fake: FakeGitHub, forge: GitHubForge):
    outcome = sync(forge, draft=True)
    assert fake.pulls[outcome.number]["draft"] is True


# --- GitHub's answers: 422, 5xx, rate limits, auth ----------------------------------------


def test_already_exists_on_create_updates_the_existing_pr(fake: FakeGitHub,
                                                          forge: GitHubForge):
    number = fake.add_pull(HEAD, title="old title", body="old body")

    info = forge.create_pr(HEAD, "main", "new title", "new body", ["gitsleep"], False)

    assert (info.number, info.adopted) == (number, True)
    assert len(fake.pulls) == 1
    assert (fake.pulls[number]["title"], fake.pulls[number]["body"]) == ("new title",
                                                                         "new body")


def test_sync_adopts_a_pr_the_listing_did_not_show_yet(fake: FakeGitHub, forge: GitHubForge):
    number = fake.add_pull(HEAD, title="old", body="old")
    # GitHub's listing lags behind: the first search finds nothing, creation says 422.
    fake.fail_next(Fault(200, [], method="GET", path_contains="/pulls"))

    outcome = sync(forge)

    assert (outcome.operation, outcome.number) == ("updated", number)
    assert len(fake.pulls) == 1
    assert fake.pulls[number]["body"] == "## Scores\n\n| split | before | after |\n"


def test_server_error_is_retried_once_then_succeeds(fake: FakeGitHub, forge: GitHubForge):
    fake.fail_next(server_error(method="POST", path_contains="/pulls"))

    outcome = sync(forge)

    assert outcome.operation == "created"
    assert pull_creations(fake) == 2
    assert len(fake.pulls) == 1


def test_persistent_server_errors_become_a_git_error(fake: FakeGitHub, forge: GitHubForge):
    fake.fail_next(*[server_error(method="GET") for _ in range(10)])

    with pytest.raises(GitError) as caught:
        sync(forge)

    assert caught.value.exit_code == 4
    assert "GitHub kept failing" in str(caught.value) and "\n" not in str(caught.value)
    assert len(fake.requests) == 5  # the first try and Pacing's 4 retries


def test_secondary_rate_limit_waits_for_retry_after(fake: FakeGitHub, forge: GitHubForge):
    fake.fail_next(secondary_rate_limit(retry_after=1, method="POST"))

    started = time.monotonic()
    outcome = sync(forge)
    waited = time.monotonic() - started

    assert outcome.operation == "created"
    assert waited >= 0.9
    assert pull_creations(fake) == 2 and len(fake.pulls) == 1


def test_secondary_rate_limit_is_recognised_by_its_message(fake: FakeGitHub,
                                                          forge: GitHubForge):
    # No Retry-After: PyGithub reads the message and waits `secondary_rate_wait` (0 here).
    fake.fail_next(secondary_rate_limit(retry_after=None, method="GET", path_contains="/pulls"))

    outcome = sync(forge)

    assert outcome.operation == "created"
    listings = [r for r in fake.requests if r.method == "GET" and r.path.endswith("/pulls")]
    assert len(listings) == 2  # the refused one and its retry


def test_bad_token_is_one_line_git_error_without_the_token(fake: FakeGitHub):
    wrong_token = "ghp_wrongTokenThatMustNeverBePrinted42"
    client = GitHubForge(ForgeSettings(fake.api_url, fake.repository, wrong_token),
                         pacing=Pacing.none())

    with pytest.raises(GitError) as caught:
        sync(client)

    message = str(caught.value)
    assert caught.value.exit_code == 4
    assert "401" in message and "GITHUB_TOKEN" in message
    assert wrong_token not in message and wrong_token not in repr(caught.value)
    assert "\n" not in message
    assert fake.writes == []


def test_missing_permission_names_the_setting_to_change(fake: FakeGitHub, forge: GitHubForge):
    fake.fail_next(not_permitted())

    with pytest.raises(GitError) as caught:
        sync(forge)

    message = str(caught.value)
    assert "403" in message
    assert "Allow GitHub Actions to create and approve pull requests" in message
    assert "pull-requests: write" in message
    assert fake.token not in message
    assert fake.pulls == {}


def test_unreachable_api_is_a_git_error():
    with FakeGitHub() as stopped:
        api_url = stopped.api_url
    client = GitHubForge(ForgeSettings(api_url, "octo/skills", "ghs_x"), pacing=Pacing.none())

    with pytest.raises(GitError, match="cannot reach the GitHub API"):
        client.find_open_pr(HEAD)


def test_unknown_repository_is_a_git_error(fake: FakeGitHub):
    client = GitHubForge(ForgeSettings(fake.api_url, "octo/missing", fake.token),
                         pacing=Pacing.none())
    with pytest.raises(GitError, match="octo/missing"):
        client.find_open_pr(HEAD)


# --- what is sent -------------------------------------------------------------------------


def test_redact_runs_over_everything_sent(fake: FakeGitHub, forge: GitHubForge):
    secret = "sk-proj-PLANTEDsecret0123456789abcdefABCDEF"

    def redact(text: str) -> str:
        return text.replace(secret, "[REDACTED]")

    sync(forge, title=f"title {secret}", body=f"a table\nkey={secret}\n", redact=redact)
    sync(forge, improved=False, close_reason=f"worse; key was {secret}", redact=redact)

    sent = fake.sent_text()
    assert secret not in sent
    assert "[REDACTED]" in sent
    assert all(secret not in str(request.query) for request in fake.requests)


def test_long_body_is_truncated_with_a_note(fake: FakeGitHub, forge: GitHubForge):
    outcome = sync(forge, body="x" * (MAX_BODY_CHARS + 5000))

    body = fake.pulls[outcome.number]["body"]
    assert len(body) <= MAX_BODY_CHARS
    assert "truncated" in body
    # Re-sending the same long body is recognised as unchanged: no write.
    writes = len(fake.writes)
    sync(forge, body="x" * (MAX_BODY_CHARS + 5000), branch_changed=False)
    assert len(fake.writes) == writes


def test_fit_body_leaves_short_bodies_alone():
    assert fit_body("short") == "short"
    assert len(fit_body("y" * 100, limit=80 + 200)) == 100
    assert len(fit_body("y" * 70_000)) <= MAX_BODY_CHARS


# --- settings from the environment ------------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/octo/skills.git", ("github.com", "octo/skills")),
        ("https://github.com/octo/skills", ("github.com", "octo/skills")),
        ("https://x-access-token:abc@github.com/octo/skills.git", ("github.com", "octo/skills")),
        ("git@github.com:octo/skills.git", ("github.com", "octo/skills")),
        ("ssh://git@github.com/octo/skills.git", ("github.com", "octo/skills")),
        ("ssh://git@ssh.github.com:443/octo/skills.git", ("ssh.github.com", "octo/skills")),
        ("https://ghe.example.com/team/skills.git", ("ghe.example.com", "team/skills")),
        ("/tmp/origin.git", None),
        ("file:///tmp/origin.git", None),
        ("../origin", None),
        ("https://github.com/octo", None),
    ],
)
def test_parse_remote_url(remote: str, expected: tuple[str, str] | None):
    assert parse_remote_url(remote) == expected


def test_settings_need_a_token():
    settings, reason = settings_from_env({"GITHUB_REPOSITORY": "octo/skills"}, None)
    assert settings is None and "GITHUB_TOKEN" in reason
    assert forge_from_env({"GITHUB_REPOSITORY": "octo/skills"}, None) is None


def test_settings_from_the_actions_environment():
    settings, _ = settings_from_env(
        {"GITHUB_TOKEN": "t1", "GH_TOKEN": "t2", "GITHUB_REPOSITORY": "octo/skills",
         "GITHUB_API_URL": "https://ghe.example.com/api/v3/"},
        "git@github.com:someone/else.git",
    )
    assert settings == ForgeSettings("https://ghe.example.com/api/v3", "octo/skills", "t1")
    assert "t1" not in repr(settings)


def test_settings_from_the_remote_url():
    settings, _ = settings_from_env({"GH_TOKEN": "t2"}, "git@github.com:octo/skills.git")
    assert settings == ForgeSettings("https://api.github.com", "octo/skills", "t2")

    enterprise, _ = settings_from_env(
        {"GH_TOKEN": "t2", "GITHUB_API_URL": "https://ghe.example.com/api/v3"},
        "https://ghe.example.com/team/skills.git")
    assert enterprise is not None and enterprise.repository == "team/skills"


@pytest.mark.parametrize("remote", ["https://gitlab.com/octo/skills.git", "/srv/origin.git",
                                    None])
def test_no_pull_request_for_remotes_github_does_not_serve(remote: str | None):
    settings, reason = settings_from_env({"GH_TOKEN": "t2"}, remote)
    assert settings is None
    assert "GITHUB_REPOSITORY" in reason and "t2" not in reason


@pytest.mark.parametrize("api_url", [
    "ftp://ghe.example.com/api/v3", "file:///etc/passwd", "api.github.com",
    "javascript:alert(1)", "http://", "https://ghe.example.com:99999", "https://a b",
    "https://[::1", "https://u:secret@ghe.example.com\x00",
])
def test_an_api_url_that_is_not_http_is_one_line_exit_4(api_url: str):
    env = {"GITHUB_TOKEN": "t1", "GITHUB_REPOSITORY": "octo/skills", "GITHUB_API_URL": api_url}
    with pytest.raises(GitError) as raised:
        forge_from_env(env, None)
    message = str(raised.value)
    assert raised.value.exit_code == 4
    assert message.startswith("GITHUB_API_URL is not an http(s) URL") and "\n" not in message
    assert "secret" not in message


def test_forge_from_env_talks_to_the_api_url(fake: FakeGitHub):
    client = forge_from_env(fake.env(), "/srv/origin.git")
    assert client is not None

    outcome = sync(client)

    assert outcome.operation == "created"
    assert fake.requests[0].headers["authorization"].endswith(fake.token)


# --- never a hang ---------------------------------------------------------------------------


def test_an_answer_that_trickles_is_cut_at_the_total_deadline(fake: FakeGitHub):
    """Headers at once, then a byte every 0.2 s: no single read times out, the request does."""
    fake.trickle_interval, fake.trickle_seconds = 0.2, 8.0
    client = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                         pacing=Pacing.none(), timeout=1)
    fake.trickle_next(10)
    started = time.monotonic()
    with pytest.raises(GitError) as raised:
        sync(client)
    elapsed = time.monotonic() - started
    client.close()
    assert raised.value.exit_code == 4
    assert str(raised.value).startswith("GitHub did not answer within 1s while gitsleep tried")
    assert elapsed < 4, f"bounded by the 1 s deadline, took {elapsed:.1f}s"
    assert fake.pulls == {}


def test_the_deadline_is_per_request_not_per_run(fake: FakeGitHub):
    """Many quick requests add up to more than the deadline; each one is within it."""
    client = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                         pacing=Pacing(seconds_between_requests=0.3, seconds_between_writes=0.3,
                                       backoff_factor=0.0, secondary_rate_wait=0.0),
                         timeout=1)
    assert sync(client).operation == "created"
    assert sync(client, title="a new title").operation == "updated"
    client.close()
    assert len(fake.requests) >= 4
