"""Pull requests on GitHub: a small `Forge` interface, its PyGithub implementation, and
the one rule set (`sync_pull_request`) that decides what happens to a skill's PR.

The rules follow peter-evans/create-pull-request: one fixed branch per skill and one PR
for it, created when the held-out split improves, updated in place on later improving
epochs (and not written at all when nothing changed), closed with a comment when a later
epoch no longer improves. Every forge failure becomes a one-line `GitError` (exit 4) that
never contains the token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.GithubException import (
    BadCredentialsException,
    RateLimitExceededException,
    UnknownObjectException,
)
from github.IssueComment import IssueComment
from github.PullRequest import PullRequest
from github.Repository import Repository
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass
from urllib3 import Retry

from gitsleep.base.deadline import DeadlineAdapter
from gitsleep.base.errors import GitError
from gitsleep.core.outcome import PR_BODY_LIMIT

DEFAULT_API_URL = "https://api.github.com"
REQUEST_TIMEOUT = 30  # seconds for one whole GitHub API request, not per read (PyGithub: an int)
# GitHub rejects longer pull request bodies (create-pull-request truncates at the same size).
MAX_BODY_CHARS = PR_BODY_LIMIT  # one limit: report.pr_body fits under it too
TRUNCATION_NOTE = (
    "\n\n---\n*This description was truncated to GitHub's 65,536-character limit; "
    "the full report is in the run's diagnostics.json and the commit's git note.*\n"
)
# Set to "none" to drop PyGithub's pauses between requests and retries. Meant for tests
# against a loopback fake of the API; against github.com keep the default pacing.
PACING_ENV = "GITSLEEP_FORGE_PACING"
PERMISSION_HINT = (
    "the token lacks permission: in the workflow set `permissions: contents: write, "
    "pull-requests: write`, and enable the repository setting \"Allow GitHub Actions to "
    'create and approve pull requests" (Settings > Actions > General)'
)

Operation = Literal["created", "updated", "closed", "none"]


@dataclass(frozen=True)
class PullRequestInfo:
    """What gitsleep needs to know about one pull request."""

    number: int
    url: str  # the page a person opens (html_url)
    title: str
    body: str
    state: str  # open | closed
    labels: tuple[str, ...] = ()
    # True when `create_pr` met an already-open PR for the head (GitHub answered 422
    # "A pull request already exists") and brought that one up to date instead.
    adopted: bool = False


@dataclass(frozen=True)
class Author:
    """Who wrote a comment, as GitHub's REST API says: the user's id, login and type."""

    id: int | None
    login: str
    type: str  # "User", "Bot", "Organization"


@dataclass(frozen=True)
class CommentInfo:
    """One issue comment of a pull request: its id (to edit it), body and page."""

    id: int
    body: str
    url: str


def _comment_info(comment: IssueComment) -> CommentInfo:
    return CommentInfo(comment.id, comment.body or "", comment.html_url or comment.url)


@dataclass(frozen=True)
class PrOutcome:
    """What `sync_pull_request` did; `operation` uses create-pull-request's words."""

    operation: Operation
    number: int | None = None
    url: str | None = None
    detail: str = ""  # one line for the run log: why this operation

    def to_json(self) -> dict[str, Any]:
        """The `pr` object of `consolidate --json`."""
        return {"operation": self.operation, "number": self.number, "url": self.url}


# --- settings from the environment -------------------------------------------------------


@dataclass(frozen=True)
class Pacing:
    """How PyGithub spaces requests and retries (fast in tests, polite on github.com)."""

    seconds_between_requests: float = 0.25
    seconds_between_writes: float = 1.0  # GitHub asks for about a second between writes
    retries: int = 4  # 5xx, secondary rate limits and connection errors
    backoff_factor: float = 1.0  # urllib3's exponential backoff base, in seconds
    secondary_rate_wait: float = 60.0  # wait on a secondary rate limit without Retry-After

    @classmethod
    def none(cls) -> Pacing:
        """No pauses of our own (Retry-After is still honoured): for loopback test servers."""
        return cls(seconds_between_requests=0.0, seconds_between_writes=0.0,
                   backoff_factor=0.0, secondary_rate_wait=0.0)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Pacing:
        return cls.none() if env.get(PACING_ENV, "").strip().lower() == "none" else cls()

    def retry(self) -> Retry:
        """PyGithub's retry (it understands 403 rate limits), extended to PATCH."""
        return GithubRetry(
            total=self.retries,
            backoff_factor=self.backoff_factor,
            secondary_rate_wait=self.secondary_rate_wait,
            allowed_methods=Retry.DEFAULT_ALLOWED_METHODS | {"GET", "POST", "PATCH"},
        )


@dataclass(frozen=True)
class ForgeSettings:
    """Where and as whom to talk to GitHub. The token never appears in `repr`."""

    api_url: str
    repository: str  # owner/name
    token: str = field(repr=False)


_SCP_REMOTE = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>[^/].*)$")


def parse_remote_url(remote_url: str) -> tuple[str, str] | None:
    """`(host, "owner/name")` from an https, ssh:// or scp-style (`git@host:o/r.git`) URL.

    None for local paths and `file://` URLs, which have no forge behind them.
    """
    url = remote_url.strip()
    if "://" in url:
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http", "ssh", "git") or not parts.hostname:
            return None
        host, path = parts.hostname, parts.path
    else:
        match = _SCP_REMOTE.match(url)
        if not match or url.startswith(("/", ".")):
            return None
        host, path = match["host"], match["path"]
    segments = [segment for segment in path.strip("/").split("/") if segment]
    if len(segments) < 2:
        return None
    owner, name = segments[-2], segments[-1].removesuffix(".git")
    if not owner or not name:
        return None
    return host.lower(), f"{owner}/{name}"


def _api_serves_host(api_url: str, remote_host: str) -> bool:
    """Whether this API URL serves the remote's host (github.com, or a GHE server)."""
    api_host = (urlsplit(api_url).hostname or "").lower()
    if api_host == "api.github.com":
        return remote_host in ("github.com", "www.github.com", "ssh.github.com")
    return remote_host in (api_host, api_host.removeprefix("api."))


def check_api_url(api_url: str) -> None:
    """Refuse an API URL the client cannot use, as one line (exit 4, like an unreachable API).

    PyGithub fails on one with an AssertionError or an AttributeError; the value is not
    echoed whole, since a URL can carry credentials.
    """
    scheme, port_ok, host = "", False, None
    try:
        parts = urlsplit(api_url)
        scheme, host = parts.scheme, parts.hostname
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # a port out of range, a broken [IPv6] host
        pass
    if (scheme not in ("http", "https") or not host or not port_ok
            or any(c.isspace() or not c.isprintable() for c in api_url)):
        raise GitError(
            f"GITHUB_API_URL is not an http(s) URL with a host (scheme {scheme!r}): set it "
            "to https://api.github.com, or https://<host>/api/v3 for GitHub Enterprise, "
            "or unset it"
        )


def settings_from_env(
    env: Mapping[str, str], remote_url: str | None
) -> tuple[ForgeSettings | None, str]:
    """The forge settings, or None and the one-line reason no pull request can be made."""
    token = (env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or "").strip()
    api_url = (env.get("GITHUB_API_URL") or DEFAULT_API_URL).strip().rstrip("/")
    if not token:
        return None, "no GITHUB_TOKEN or GH_TOKEN in the environment"
    check_api_url(api_url)
    repository = (env.get("GITHUB_REPOSITORY") or "").strip()
    if repository:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", repository):
            return None, f"GITHUB_REPOSITORY={repository!r} is not owner/name"
        return ForgeSettings(api_url, repository, token), ""
    parsed = parse_remote_url(remote_url) if remote_url else None
    if parsed is None:
        where = f"the remote {remote_url!r}" if remote_url else "no remote"
        return None, f"{where} names no GitHub repository (set GITHUB_REPOSITORY)"
    host, repository = parsed
    if not _api_serves_host(api_url, host):
        return None, (
            f"the remote's host {host} is not served by {api_url} "
            "(set GITHUB_API_URL or GITHUB_REPOSITORY)"
        )
    return ForgeSettings(api_url, repository, token), ""


def forge_from_env(
    env: Mapping[str, str], remote_url: str | None, *, pacing: Pacing | None = None
) -> GitHubForge | None:
    """A GitHub forge from the environment, or None when there is no token or repository.

    `settings_from_env(env, remote_url)[1]` is the reason to print when this returns None.
    """
    settings, _reason = settings_from_env(env, remote_url)
    if settings is None:
        return None
    return GitHubForge(settings, pacing=pacing or Pacing.from_env(env))


# --- the GitHub implementation ------------------------------------------------------------


def _error_message(exc: GithubException) -> str:
    """GitHub's own words: the message plus any validation error messages."""
    data = exc.data if isinstance(exc.data, dict) else {}
    parts = [str(data.get("message") or exc.message or "").strip()]
    for error in data.get("errors") or []:
        if isinstance(error, dict) and error.get("message"):
            parts.append(str(error["message"]).strip())
        elif isinstance(error, str):
            parts.append(error.strip())
    return ": ".join(part for part in parts if part) or "no message"


def _with_deadline(base: type) -> type:
    """PyGithub's connection class for one scheme, mounting a DeadlineAdapter: the
    request `timeout` PyGithub passes on becomes the whole request's deadline."""

    class Connection(base):  # type: ignore[misc]  # a class chosen at run time
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.adapter = DeadlineAdapter(float(self.timeout or REQUEST_TIMEOUT),
                                           max_retries=self.retry,
                                           pool_connections=self.pool_size,
                                           pool_maxsize=self.pool_size)
            self.session.mount(f"{self.protocol}://", self.adapter)

    return Connection


_CONNECTIONS = {"http": _with_deadline(HTTPRequestsConnectionClass),
                "https": _with_deadline(HTTPSRequestsConnectionClass)}


class GitHubForge:
    """The pull-request operations gitsleep needs, over the GitHub REST API with PyGithub
    (retries, rate limits, Retry-After); the only forge gitsleep speaks to."""

    def __init__(self, settings: ForgeSettings, *, pacing: Pacing | None = None,
                 timeout: int = REQUEST_TIMEOUT) -> None:
        pacing = pacing or Pacing()
        self.settings = settings
        self.timeout = timeout
        self.owner = settings.repository.split("/", 1)[0]
        self._github = Github(
            auth=Auth.Token(settings.token),
            base_url=settings.api_url,
            retry=pacing.retry(),
            seconds_between_requests=pacing.seconds_between_requests,
            seconds_between_writes=pacing.seconds_between_writes,
            timeout=timeout,
        )
        # PyGithub picks its connection class per instance from the URL's scheme; it has
        # no public way to pass one, so set it on this instance's requester.
        scheme = urlsplit(settings.api_url).scheme
        self._github.requester._Requester__connectionClass = _CONNECTIONS[scheme]  # type: ignore[attr-defined]
        self._repository: Repository | None = None
        self._pulls: dict[int, PullRequest] = {}
        self._comments: dict[int, IssueComment] = {}  # listed or made, by id (for edits)

    def close(self) -> None:
        self._github.close()

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn any client failure into one `GitError` line that names the action."""
        try:
            yield
        except BadCredentialsException as exc:
            raise self._git_error(
                f"GitHub rejected the token while trying to {action} ({exc.status} "
                f"{_error_message(exc)}): check GITHUB_TOKEN / GH_TOKEN"
            ) from None
        except RateLimitExceededException as exc:
            raise self._git_error(
                f"GitHub's rate limit stopped gitsleep from trying to {action} "
                f"({_error_message(exc)}): try again later"
            ) from None
        except UnknownObjectException as exc:
            raise self._git_error(
                f"GitHub found nothing to {action} in {self.settings.repository} "
                f"({exc.status} {_error_message(exc)}): check GITHUB_REPOSITORY and that "
                "the token can see the repository"
            ) from None
        except GithubException as exc:
            hint = f": {PERMISSION_HINT}" if exc.status == 403 else ""
            raise self._git_error(
                f"GitHub refused to {action} in {self.settings.repository} "
                f"({exc.status} {_error_message(exc)}){hint}"
            ) from None
        except requests.exceptions.RetryError:
            raise self._git_error(
                f"GitHub kept failing (server errors or rate limits) while gitsleep tried "
                f"to {action} in {self.settings.repository}: try again later"
            ) from None
        except requests.RequestException as exc:
            # A body cut at the deadline surfaces as a ConnectionError("Read timed out").
            if isinstance(exc, requests.Timeout) or "timed out" in str(exc):
                raise self._git_error(
                    f"GitHub did not answer within {self.timeout:g}s while gitsleep tried "
                    f"to {action}: try again later"
                ) from None
            raise self._git_error(
                f"cannot reach the GitHub API at {self.settings.api_url} to {action}: "
                f"{type(exc).__name__}"
            ) from None

    def _git_error(self, message: str) -> GitError:
        """One line that can never carry the token, whatever the server echoed back."""
        message = message.replace(self.settings.token, "***")
        return GitError(" ".join(message.split()))

    def _repo(self) -> Repository:
        if self._repository is None:
            with self._errors("read the repository"):
                self._repository = self._github.get_repo(self.settings.repository)
        return self._repository

    def _pull(self, number: int) -> PullRequest:
        if number not in self._pulls:
            repo = self._repo()
            with self._errors(f"read pull request #{number}"):
                self._pulls[number] = repo.get_pull(number)
        return self._pulls[number]

    def _info(self, pull: PullRequest) -> PullRequestInfo:
        self._pulls[pull.number] = pull
        return PullRequestInfo(
            number=pull.number,
            url=pull.html_url or pull.url,
            title=pull.title or "",
            body=pull.body or "",
            state=pull.state or "open",
            labels=tuple(label.name for label in pull.labels or ()),
        )

    def _find(self, head_branch: str, state: str) -> PullRequestInfo | None:
        repo = self._repo()
        with self._errors(f"list {state} pull requests from {head_branch}"):
            for pull in repo.get_pulls(state=state, head=f"{self.owner}:{head_branch}"):
                return self._info(pull)
        return None

    def find_open_pr(self, head_branch: str) -> PullRequestInfo | None:
        return self._find(head_branch, "open")

    def find_closed_pr(self, head_branch: str) -> PullRequestInfo | None:
        """A closed (or merged) PR from this branch: a person already dealt with it."""
        return self._find(head_branch, "closed")

    def create_pr(self, head: str, base: str, title: str, body: str, labels: Sequence[str],
                  draft: bool) -> PullRequestInfo:
        """Open a PR and label it; if one is already open for `head`, update that one."""
        repo = self._repo()
        pull: PullRequest | None = None
        with self._errors(f"open a pull request from {head} into {base}"):
            try:
                pull = repo.create_pull(base=base, head=head, title=title, body=body,
                                        draft=draft)
            except GithubException as exc:
                message = _error_message(exc).lower()
                if exc.status != 422:
                    raise
                if draft and "draft" in message:
                    # Draft PRs are not available on every plan: open a normal one instead.
                    pull = repo.create_pull(base=base, head=head, title=title, body=body)
                elif "already exists" not in message:
                    raise
        if pull is None:  # a concurrent run, or a person, opened it a moment ago
            return self._adopt(head, title, body)
        info = self._info(pull)
        if labels:
            self.add_labels(info.number, labels)
            info = replace(info, labels=tuple(labels))
        return info

    def _adopt(self, head: str, title: str, body: str) -> PullRequestInfo:
        """GitHub says a PR from `head` is open: find it and bring title and body up to date."""
        existing = self.find_open_pr(head)
        if existing is None:
            raise self._git_error(
                f"GitHub says a pull request from {head} already exists in "
                f"{self.settings.repository}, but none is open for {self.owner}:{head}"
            )
        if (existing.title, existing.body) != (title, body):
            existing = self.update_pr(existing.number, title, body)
        return replace(existing, adopted=True)

    def update_pr(self, number: int, title: str, body: str) -> PullRequestInfo:
        pull = self._pull(number)
        with self._errors(f"update pull request #{number}"):
            pull.edit(title=title, body=body)
        return self._info(pull)

    def add_labels(self, number: int, labels: Sequence[str]) -> None:
        pull = self._pull(number)
        with self._errors(f"label pull request #{number}"):
            pull.add_to_labels(*labels)

    def comment(self, number: int, body: str) -> None:
        pull = self._pull(number)
        with self._errors(f"comment on pull request #{number}"):
            pull.create_issue_comment(body)

    def close_pr(self, number: int, comment: str) -> None:
        """Say why, then close: whoever opens the PR reads the reason last."""
        if comment:
            self.comment(number, comment)
        pull = self._pull(number)
        with self._errors(f"close pull request #{number}"):
            pull.edit(state="closed")

    # -- issue comments of a pull request (`gitsleep review`'s one comment per PR) --

    def list_comments(self, number: int) -> list[CommentInfo]:
        """Every comment of pull request `number`, oldest first (all pages)."""
        pull = self._pull(number)
        with self._errors(f"list the comments of pull request #{number}"):
            found = list(pull.get_issue_comments())
        self._comments.update({c.id: c for c in found})
        return [_comment_info(c) for c in found]

    def comment_author(self, comment_id: int) -> Author | None:
        """Who wrote a comment `list_comments` returned. Asked only for the comments that
        need it: reading `user` of a comment GitHub sent without one fetches it."""
        found = self._comments.get(comment_id)
        user = getattr(found, "user", None)
        if user is None:
            return None
        return Author(user.id, user.login or "", user.type or "")

    def token_user(self) -> Author | None:
        """The token's own user (`GET /user`), or None when GitHub will not say: an
        installation token, as Actions' GITHUB_TOKEN is, gets 403 there."""
        with self._errors("read the token's own user (GET /user)"):
            try:
                me = self._github.get_user()
                return Author(me.id, me.login, me.type or "User")
            except GithubException as exc:
                if exc.status in (403, 404) and not isinstance(exc,
                                                               RateLimitExceededException):
                    return None
                raise

    def create_comment(self, number: int, body: str) -> CommentInfo:
        pull = self._pull(number)
        with self._errors(f"comment on pull request #{number}"):
            made = pull.create_issue_comment(body)
        self._comments[made.id] = made
        return _comment_info(made)

    def update_comment(self, number: int, comment_id: int, body: str) -> CommentInfo:
        """Edit a comment `list_comments` returned (its id); the body is replaced whole."""
        found = self._comments.get(comment_id)
        if found is None:
            raise self._git_error(f"comment {comment_id} of pull request #{number} was not "
                                  "listed before the update")
        with self._errors(f"update comment {comment_id} on pull request #{number}"):
            found.edit(body)
        return _comment_info(found)


# --- the pull-request rules -------------------------------------------------------------


def fit_body(body: str, limit: int = MAX_BODY_CHARS) -> str:
    """The body cut to GitHub's limit, with a note saying where the rest is."""
    if len(body) <= limit:
        return body
    return body[: limit - len(TRUNCATION_NOTE)].rstrip() + TRUNCATION_NOTE


def sync_pull_request(
    forge: GitHubForge,
    *,
    head: str,
    base: str,
    title: str,
    body: str,
    labels: Sequence[str],
    draft: bool,
    improved: bool,
    branch_changed: bool,
    close_reason: str,
    redact: Callable[[str], str] | None = None,
) -> PrOutcome:
    """Bring the skill branch's PR in line with the epoch's decision.

    improved, no open PR   -> create it (labels applied); but when the branch did not
                              change and a closed PR from it exists, a person already
                              closed or merged this result: do not reopen it ("none");
    improved, open PR      -> update title/body in place when they differ (no write at
                              all when identical); "updated" also when the push changed
                              the branch, since the PR then shows new commits;
    not improved, open PR  -> comment with `close_reason`, then close;
    not improved, no PR    -> nothing.
    Everything sent goes through `redact` (when given); the body is cut to 65,536 chars.
    """
    clean = redact or (lambda text: text)
    title = clean(title).strip() or head
    body = fit_body(clean(body))
    open_pr = forge.find_open_pr(head)

    if not improved:
        if open_pr is None:
            return PrOutcome("none", detail="no improvement and no open pull request")
        reason = clean(close_reason)
        forge.close_pr(open_pr.number, comment=reason)
        return PrOutcome("closed", open_pr.number, open_pr.url,
                         detail=f"closed #{open_pr.number}: {reason}")

    if open_pr is not None:
        if (open_pr.title, open_pr.body) != (title, body):
            forge.update_pr(open_pr.number, title, body)
            return PrOutcome("updated", open_pr.number, open_pr.url,
                             detail=f"updated the description of #{open_pr.number}")
        if branch_changed:
            return PrOutcome("updated", open_pr.number, open_pr.url,
                             detail=f"pushed new commits to #{open_pr.number}")
        return PrOutcome("none", open_pr.number, open_pr.url,
                         detail=f"#{open_pr.number} is already up to date")

    if not branch_changed:
        closed_pr = forge.find_closed_pr(head)
        if closed_pr is not None:
            return PrOutcome("none", closed_pr.number, closed_pr.url,
                             detail=f"#{closed_pr.number} showed this same result and was "
                             "closed; not reopened")
    created = forge.create_pr(head, base, title, body, labels, draft)
    if created.adopted:
        return PrOutcome("updated", created.number, created.url,
                         detail=f"#{created.number} was already open; updated it")
    return PrOutcome("created", created.number, created.url, detail=f"opened #{created.number}")
