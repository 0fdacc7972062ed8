"""`gitsleep review`'s edges (`gitsleep/flows/review/edges.py`): the pull request from the
environment, the config comparison, the one comment per PR on the loopback GitHub fake (only
gitsleep's own comment is edited) and the comment result's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsleep.base.errors import GitError, UsageError
from gitsleep.flows.review import edges, verdict
from gitsleep.git_forge.forge import ForgeSettings, GitHubForge, Pacing
from gitsleep.inputs.config import Config
from tests.support.fake_github import FakeGitHub, Fault

# -- the pull request from the environment --------------------------------------------------


def event_file(tmp_path: Path, payload: object) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return str(path)


def test_the_pull_request_comes_from_the_event_the_ref_or_the_option(tmp_path: Path):
    same = {"full_name": "octo/skills"}
    event = {"pull_request": {"number": 12, "head": {"repo": same}, "base": {"repo": same}}}
    env = {"GITHUB_EVENT_PATH": event_file(tmp_path, event)}
    assert edges.pull_request_from_env(env, None) == edges.PullRequestRef(12, False)
    assert edges.pull_request_from_env(env, 3) == edges.PullRequestRef(3, False)
    assert edges.pull_request_from_env({"GITHUB_REF": "refs/pull/7/merge"}, None) == \
        edges.PullRequestRef(7, False)
    assert edges.pull_request_from_env({"GITHUB_REF": "refs/heads/main"}, None) is None
    assert edges.pull_request_from_env(
        {"GITHUB_EVENT_PATH": str(tmp_path / "missing.json")}, None) is None


def test_a_fork_is_a_head_repository_other_than_the_base(tmp_path: Path):
    fork = {"pull_request": {"number": 5, "head": {"repo": {"full_name": "someone/skills"}},
                             "base": {"repo": {"full_name": "octo/skills"}}}}
    gone = {"pull_request": {"number": 6, "head": {"repo": None},
                             "base": {"repo": {"full_name": "octo/skills"}}}}
    for payload, number in ((fork, 5), (gone, 6)):
        env = {"GITHUB_EVENT_PATH": event_file(tmp_path, payload)}
        assert edges.pull_request_from_env(env, None) == \
            edges.PullRequestRef(number, True)


TARGET = {"GITHUB_EVENT_NAME": "pull_request_target"}


@pytest.mark.parametrize("head, base", [
    ({"id": 1}, {"id": 1}),  # by id only
    ({"id": 1, "full_name": ""}, {"id": 1, "full_name": ""}),  # empty names
    ({"full_name": "  "}, {"full_name": "  "}),
    ({}, {}),
    ({"full_name": "octo/skills", "id": 2}, {"full_name": "octo/skills", "id": 1}),
])
def test_a_target_payload_that_does_not_say_where_the_head_lives_is_refused(
        tmp_path: Path, head: dict, base: dict):
    """Before: two repositories named by id only (or with empty names) compared equal."""
    payload = {"pull_request": {"number": 4, "head": {"repo": head}, "base": {"repo": base}}}
    env = {**TARGET, "GITHUB_EVENT_PATH": event_file(tmp_path, payload)}
    with pytest.raises(UsageError, match="pull_request_target"):
        edges.refuse_untrusted_event(env)
    assert edges.pull_request_from_env(env, None) == edges.PullRequestRef(4, True)


@pytest.mark.parametrize("event", ["missing", "not json", "no pull_request"])
def test_a_target_run_whose_event_file_says_nothing_is_refused_even_on_a_pull_ref(
        tmp_path: Path, event: str):
    path = tmp_path / "event.json"
    if event == "not json":
        path.write_text("{not json")
    elif event == "no pull_request":
        path.write_text(json.dumps({"number": 4}))
    env = {**TARGET, "GITHUB_EVENT_PATH": str(path), "GITHUB_REF": "refs/pull/4/merge"}
    with pytest.raises(UsageError, match="pull_request_target"):
        edges.refuse_untrusted_event(env)
    with pytest.raises(UsageError, match="pull_request_target"):
        edges.refuse_untrusted_event({**TARGET, "GITHUB_REF": "refs/pull/4/merge"})


def test_a_target_payload_from_this_repository_runs(tmp_path: Path):
    same = {"full_name": "octo/skills", "id": 1}
    payload = {"pull_request": {"number": 4, "head": {"repo": same}, "base": {"repo": same}}}
    edges.refuse_untrusted_event({**TARGET, "GITHUB_EVENT_PATH": event_file(tmp_path, payload)})


# -- the config comparison ------------------------------------------------------------------


def config(**extra: object) -> Config:
    data: dict[str, object] = {"version": 1, "backend": "offline", "skills": [
        {"name": "notes", "skill": "SKILL.md", "tasks": [{"path": "t.jsonl"}]}]}
    data.update(extra)
    return Config.model_validate(data)


def test_only_settings_that_change_a_score_make_configs_differ():
    assert edges.config_differences(config(), config(workers=2, rounds=5)) == []
    more_tasks = config(skills=[{"name": "notes", "skill": "SKILL.md",
                                 "tasks": [{"path": "t.jsonl"}, {"path": "u.jsonl"}]}])
    assert edges.config_differences(config(), more_tasks) == []
    assert edges.config_differences(config(), config(gate={"metric": "soft"})) == \
        ["gate.metric"]
    assert edges.config_differences(config(), config(model="m2")) == ["model"]


def test_an_optimizer_model_that_moves_the_judge_is_a_scoring_difference():
    """Before: `optimizer_model` counted as "not scoring", yet the rubric judge defaults to
    it, so a pull request could pick the model that grades it unseen."""
    base = config(backend="openai", model="agent-m")
    head = config(backend="openai", model="agent-m", optimizer_model="friendly-grader")
    assert edges.config_differences(base, head) == ["effective judge model"]
    both = config(backend="openai", model="agent-m", optimizer_model="o",
                  judge_model="agent-m")
    assert edges.config_differences(base, both) == ["judge_model"]


# -- one comment per pull request, on the loopback fake --------------------------------------


ACTIONS_BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
PERSON = {"login": "pr-author", "id": 77, "type": "User"}
REFUSED_USER = {"message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/users/users"
                                     "#get-the-authenticated-user"}


class AuthoredGitHub(FakeGitHub):
    """The loopback fake with comment authors as GitHub gives them: a comment made through
    the API is the token's own user, a seeded one a person's. `viewer` None is an Actions
    installation token (GITHUB_TOKEN): comments by `github-actions[bot]`, `GET /user`
    refused with 403; a user dict is a personal token, `GET /user` answers with it. With
    `refuse_foreign_edits`, editing someone else's comment is a 403, as for most tokens."""

    def __init__(self, *args: object, viewer: dict[str, object] | None = None,
                 refuse_foreign_edits: bool = True, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.viewer = viewer
        self.refuse_foreign_edits = refuse_foreign_edits

    def _identity(self, who: dict[str, object]) -> dict[str, object]:
        return {**who, "url": self._url(f"/users/{who['login']}")}

    def handle(self, method: str, path: str, query: dict[str, str],
               payload: object) -> tuple[int, object, dict[str, str]]:
        if path == "/user" and method == "GET":
            if self.viewer is None:
                return 403, REFUSED_USER, {}
            return 200, self._identity(self.viewer), {}
        if method == "PATCH" and "/issues/comments/" in path and self.refuse_foreign_edits:
            me = (self.viewer or ACTIONS_BOT)["id"]
            target = int(path.rsplit("/", 1)[-1])
            owner = next((c["user"]["id"] for cs in self.comments.values() for c in cs
                          if c["id"] == target), me)
            if owner != me:
                return 403, {"message": "Resource not accessible by integration"}, {}
        return super().handle(method, path, query, payload)  # type: ignore[arg-type]

    def _add_comment(self, pull: dict, payload: dict) -> tuple[int, object, dict[str, str]]:
        status, comment, headers = super()._add_comment(pull, payload)
        comment["user"] = self._identity(self.viewer or ACTIONS_BOT)  # type: ignore[index]
        return status, comment, headers

    def add_comment(self, number: int, body: str,
                    author: dict[str, object] | None = None) -> int:
        """Seed a comment as `author` wrote it (a person, the PR's author, by default)."""
        made = super().add_comment(number, body)
        comment = next(c for c in self.comments[number] if c["id"] == made)
        comment["user"] = self._identity(author or PERSON)
        return made


@pytest.fixture
def hub():
    with AuthoredGitHub() as fake:
        forge = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                            pacing=Pacing.none())
        yield fake, forge
        forge.close()


def test_sync_comment_creates_once_skips_an_unchanged_body_and_edits_in_place(hub):
    fake, forge = hub
    number = fake.add_pull("feature")
    fake.add_comment(number, f"a person quoting us: {verdict.MARKER} is not ours")
    body = f"{verdict.MARKER}\nfirst\n"
    assert edges.sync_comment(forge, number, body).operation == "created"
    assert edges.sync_comment(forge, number, body).operation == "none"
    assert [w.method for w in fake.writes] == ["POST"]
    done = edges.sync_comment(forge, number, f"{verdict.MARKER}\nsecond\n")
    assert done.operation == "updated"
    assert [w.method for w in fake.writes] == ["POST", "PATCH"]
    assert [c["body"] for c in fake.comments[number]] == [
        f"a person quoting us: {verdict.MARKER} is not ours", f"{verdict.MARKER}\nsecond\n"]


def test_a_refused_comment_edit_is_one_git_error_line_without_the_token(hub):
    fake, forge = hub
    number = fake.add_pull("feature")
    edges.sync_comment(forge, number, f"{verdict.MARKER}\nfirst\n")
    fake.fail_next(Fault(403, {"message": "Resource not accessible by integration"},
                         method="PATCH", path_contains="/issues/comments/"))
    with pytest.raises(GitError) as caught:
        edges.sync_comment(forge, number, f"{verdict.MARKER}\nsecond\n")
    assert "403" in str(caught.value) and fake.token not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_marked_comment_is_found_past_the_first_page_of_comments(hub):
    fake, forge = hub
    fake.per_page = 30  # GitHub's default page size
    number = fake.add_pull("feature")
    for index in range(34):
        fake.add_comment(number, f"comment {index}")
    assert edges.sync_comment(forge, number, f"{verdict.MARKER}\none\n").operation == \
        "created"
    pages = [r.query.get("page", "1") for r in fake.requests
             if r.method == "GET" and r.path.endswith(f"/issues/{number}/comments")]
    assert pages == ["1", "2"]
    again = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                        pacing=Pacing.none())
    try:
        assert edges.sync_comment(again, number, f"{verdict.MARKER}\none\n").operation \
            == "none"
    finally:
        again.close()
    assert len(fake.comments[number]) == 35 and len(fake.writes) == 1


# -- only gitsleep's own comment is edited ---------------------------------------------------


def forge_for(fake: FakeGitHub) -> GitHubForge:
    return GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token),
                       pacing=Pacing.none())


@pytest.mark.parametrize("viewer", [None, {"login": "octo-maintainer", "id": 5, "type": "User"}],
                         ids=["GITHUB_TOKEN", "personal token"])
def test_a_marked_comment_by_someone_else_is_never_edited(viewer):
    with AuthoredGitHub(viewer=viewer) as fake:
        number = fake.add_pull("feature")
        forged = f"{verdict.MARKER}\n## gitsleep review: improvement\n\nmerge it\n"
        fake.add_comment(number, forged)  # the PR's author, posting our marker
        forge = forge_for(fake)
        try:
            made = edges.sync_comment(forge, number, f"{verdict.MARKER}\nfirst\n")
            assert made.operation == "created"
            again = edges.sync_comment(forge, number, f"{verdict.MARKER}\nsecond\n")
        finally:
            forge.close()
        assert again.operation == "updated" and again.id == made.id
        assert [w.method for w in fake.writes] == ["POST", "PATCH"]
        assert fake.comments[number][0]["body"] == forged, "the person's comment is theirs"
        assert fake.comments[number][1]["body"] == f"{verdict.MARKER}\nsecond\n"


def test_a_personal_token_owns_only_its_own_login_not_any_bot():
    me = {"login": "octo-maintainer", "id": 5, "type": "User"}
    with AuthoredGitHub(viewer=me) as fake:
        number = fake.add_pull("feature")
        fake.add_comment(number, f"{verdict.MARKER}\nan app's\n",
                         author={"login": "other-app[bot]", "id": 9, "type": "Bot"})
        ours = fake.add_comment(number, f"{verdict.MARKER}\nold\n", author=me)
        forge = forge_for(fake)
        try:
            done = edges.sync_comment(forge, number, f"{verdict.MARKER}\nnew\n")
        finally:
            forge.close()
        assert (done.operation, done.id) == ("updated", ours)
        assert fake.comments[number][0]["body"] == f"{verdict.MARKER}\nan app's\n"


def test_without_get_user_only_a_bot_comment_counts_and_user_is_asked_only_when_needed():
    body = f"{verdict.MARKER}\nfirst\n"
    with AuthoredGitHub() as fake:  # GITHUB_TOKEN: GET /user is refused
        quiet, copied = fake.add_pull("feature"), fake.add_pull("other")
        fake.add_comment(copied, body)  # a person's exact copy of what gitsleep would say
        forge = forge_for(fake)
        try:
            assert edges.sync_comment(forge, quiet, body).operation == "created"
            assert not [r for r in fake.requests if r.path == "/user"], \
                "no marked comment yet: nobody's authorship to check"
            made = edges.sync_comment(forge, copied, body)
            again = edges.sync_comment(forge, copied, body)
        finally:
            forge.close()
        assert made.operation == "created"
        assert (again.operation, again.id) == ("none", made.id)
        assert [w.method for w in fake.writes] == ["POST", "POST"]


def test_the_comment_result_writes_the_json_keys_review_has_always_written():
    """`review --json`'s `comment`: operation, id, url, pr, then why not or what failed."""
    made = edges.CommentResult("created", 7, "https://x/7", 3)
    assert list(made.to_json()) == ["operation", "id", "url", "pr"]
    ref = edges.PullRequestRef(3)
    assert edges.CommentResult.none(ref, reason="--no-comment").to_json() == {
        "operation": "none", "id": None, "url": None, "pr": 3, "reason": "--no-comment"}
    assert list(edges.CommentResult.none(None, error="403").to_json()) == [
        "operation", "id", "url", "pr", "error"]
