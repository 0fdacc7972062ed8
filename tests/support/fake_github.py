"""A loopback fake of the GitHub REST endpoints gitsleep's forge uses.

The real PyGithub client talks to it over HTTP (`base_url=fake.api_url`), so tests cover
the client's own paths, retries and error handling. State lives in memory; every request
is logged (method, path, query, headers, body) so a test can count writes or search what
was sent for secrets; `fail_next` queues faults (401, 403 rate limits with Retry-After,
422, 500) that answer the next matching requests instead of the normal handler;
`trickle_next` sends the next matching answers one byte per interval (headers at once),
for a bounded time.

    with FakeGitHub() as fake:
        forge = GitHubForge(ForgeSettings(fake.api_url, fake.repository, fake.token))
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
FAKE_TOKEN = "ghs_fakeTokenForTests0123456789abcdef"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Fault:
    """A canned answer for the next request matching `method` and `path_contains`."""

    status: int
    body: Any  # the JSON answer
    headers: dict[str, str] = field(default_factory=dict)
    method: str | None = None  # None: any method
    path_contains: str = ""

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and self.path_contains in path


# Faults shaped like GitHub's real answers.
def bad_credentials() -> Fault:
    return Fault(401, {"message": "Bad credentials",
                       "documentation_url": "https://docs.github.com/rest"})


def secondary_rate_limit(retry_after: int | None = 1, method: str | None = None,
                         path_contains: str = "") -> Fault:
    """GitHub's 403 for too many requests; without Retry-After only the message tells."""
    headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
    return Fault(403, {"message": "You have exceeded a secondary rate limit. Please wait a "
                                  "few minutes before you try again."}, headers, method=method,
                 path_contains=path_contains)


def not_permitted(method: str | None = "POST", path_contains: str = "/pulls") -> Fault:
    return Fault(403, {"message": "GitHub Actions is not permitted to create or approve "
                                  "pull requests."}, method=method, path_contains=path_contains)


def server_error(method: str | None = None, path_contains: str = "") -> Fault:
    return Fault(500, {"message": "Server Error"}, method=method, path_contains=path_contains)


def already_exists(owner: str, branch: str) -> Fault:
    return Fault(422, {"message": "Validation Failed",
                       "errors": [{"resource": "PullRequest", "code": "custom",
                                   "message": f"A pull request already exists for "
                                              f"{owner}:{branch}."}]},
                 method="POST", path_contains="/pulls")


class FakeGitHub:
    """In-memory GitHub for one repository, served on 127.0.0.1 at a free port."""

    def __init__(self, owner: str = "octo", name: str = "skills",
                 token: str = FAKE_TOKEN, default_branch: str = "main", *,
                 protocol: str = "HTTP/1.1", close_connections: bool = False) -> None:
        # protocol "HTTP/1.0" or close_connections (`Connection: close` on every answer)
        # answer like a proxy or a GitHub Enterprise front end that ends each connection
        self.protocol, self.close_connections = protocol, close_connections
        self.owner, self.name, self.token = owner, name, token
        self.default_branch = default_branch
        self.requests: list[RecordedRequest] = []
        self.pulls: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.per_page: int | None = None  # page size of comment lists (None: one page)
        self._faults: list[Fault] = []
        self._trickles: list[Fault] = []  # Fault used as a (method, path) matcher only
        self.trickle_interval = 0.5
        self.trickle_seconds = 10.0
        self._stopping = threading.Event()
        self._next_number = 1
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.02}, daemon=True)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # --- what tests use ---------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def repository(self) -> str:
        return f"{self.owner}/{self.name}"

    def env(self) -> dict[str, str]:
        """The environment a run needs to open PRs here (the way the Actions runner sets it)."""
        return {"GITHUB_API_URL": self.api_url, "GITHUB_REPOSITORY": self.repository,
                "GITHUB_TOKEN": self.token, "GITSLEEP_FORGE_PACING": "none"}

    def fail_next(self, *faults: Fault) -> None:
        """Answer the next matching requests with these faults, in order."""
        with self._lock:
            self._faults.extend(faults)

    def trickle_next(self, count: int = 1, method: str | None = None,
                     path_contains: str = "") -> None:
        """Send the next `count` matching answers one byte every `trickle_interval`."""
        with self._lock:
            self._trickles.extend(Fault(200, None, method=method, path_contains=path_contains)
                                  for _ in range(count))

    def _take_trickle(self, method: str, path: str) -> bool:
        with self._lock:
            for index, trickle in enumerate(self._trickles):
                if trickle.matches(method, path):
                    del self._trickles[index]
                    return True
        return False

    @property
    def writes(self) -> list[RecordedRequest]:
        return [request for request in self.requests if request.method in WRITE_METHODS]

    def sent_text(self) -> str:
        """Every request body the fake received, joined: for secret searches."""
        return "\n".join(request.body for request in self.requests)

    def open_pulls(self) -> list[dict[str, Any]]:
        return [pull for pull in self.pulls.values() if pull["state"] == "open"]

    def add_pull(self, head: str, base: str | None = None, title: str = "a title",
                 body: str = "", state: str = "open", labels: tuple[str, ...] = ()) -> int:
        """Seed a PR as if someone opened it earlier; returns its number."""
        with self._lock:
            pull = self._new_pull(head, base or self.default_branch, title, body, False)
            pull["state"] = state
            pull["labels"] = [self._label(name) for name in labels]
            return int(pull["number"])

    def add_comment(self, number: int, body: str) -> int:
        """Seed a comment on PR `number` as if a person wrote it; returns its id."""
        with self._lock:
            _, comment, _ = self._add_comment(self.pulls[number], {"body": body})
            return int(comment["id"])

    # --- the REST resources -----------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self.api_url}{path}"

    def _repo_path(self) -> str:
        return f"/repos/{self.owner}/{self.name}"

    def _user(self) -> dict[str, Any]:
        return {"login": self.owner, "id": 1, "type": "User",
                "url": self._url(f"/users/{self.owner}")}

    def _label(self, name: str) -> dict[str, Any]:
        return {"name": name, "color": "ededed",
                "url": self._url(f"{self._repo_path()}/labels/{name}")}

    def repo_json(self) -> dict[str, Any]:
        return {"id": 1, "name": self.name, "full_name": self.repository,
                "owner": self._user(), "private": False,
                "url": self._url(self._repo_path()),
                "html_url": self._url(f"/{self.repository}"),
                "default_branch": self.default_branch}

    def _new_pull(self, head: str, base: str, title: str, body: str | None,
                  draft: bool) -> dict[str, Any]:
        number = self._next_number
        self._next_number += 1
        branch = head.split(":", 1)[-1]
        pull = {
            "id": 500 + number, "number": number, "state": "open", "draft": draft,
            "title": title, "body": body, "labels": [], "user": self._user(),
            "url": self._url(f"{self._repo_path()}/pulls/{number}"),
            "issue_url": self._url(f"{self._repo_path()}/issues/{number}"),
            "comments_url": self._url(f"{self._repo_path()}/issues/{number}/comments"),
            "html_url": self._url(f"/{self.repository}/pull/{number}"),
            "head": {"ref": branch, "label": f"{self.owner}:{branch}", "sha": "0" * 40,
                     "repo": self.repo_json()},
            "base": {"ref": base, "label": f"{self.owner}:{base}", "sha": "1" * 40,
                     "repo": self.repo_json()},
            "merged": False,
        }
        self.pulls[number] = pull
        self.comments[number] = []
        return pull

    def _issue_json(self, pull: dict[str, Any]) -> dict[str, Any]:
        number = pull["number"]
        return {"id": pull["id"], "number": number, "state": pull["state"],
                "title": pull["title"], "body": pull["body"], "labels": pull["labels"],
                "user": pull["user"], "url": pull["issue_url"],
                "html_url": pull["html_url"], "comments": len(self.comments[number]),
                "pull_request": {"url": pull["url"], "html_url": pull["html_url"]}}

    def handle(self, method: str, path: str, query: dict[str, str],
               payload: Any) -> tuple[int, Any, dict[str, str]]:
        """Route one authenticated request; returns (status, JSON body, extra headers)."""
        repo = self._repo_path()
        if not path.startswith(repo):
            return 404, {"message": "Not Found"}, {}
        rest = [part for part in path[len(repo):].split("/") if part]
        if not rest and method == "GET":
            return 200, self.repo_json(), {}
        if rest == ["pulls"] and method == "GET":
            return 200, self._list_pulls(query), {}
        if rest == ["pulls"] and method == "POST":
            return self._create_pull(payload or {})
        if rest[:2] == ["issues", "comments"] and len(rest) == 3 and rest[2].isdigit():
            return self._one_comment(method, int(rest[2]), payload or {})
        if len(rest) >= 2 and rest[1].isdigit() and rest[0] in ("pulls", "issues"):
            pull = self.pulls.get(int(rest[1]))
            if pull is None:
                return 404, {"message": "Not Found"}, {}
            kind, tail = rest[0], rest[2:]
            if kind == "pulls" and not tail and method == "GET":
                return 200, pull, {}
            if kind == "pulls" and not tail and method == "PATCH":
                return self._update_pull(pull, payload or {})
            if kind == "issues" and not tail and method == "GET":
                return 200, self._issue_json(pull), {}
            if kind == "issues" and tail == ["labels"] and method == "POST":
                return self._add_labels(pull, payload)
            if kind == "issues" and tail == ["comments"] and method == "POST":
                return self._add_comment(pull, payload or {})
            if kind == "issues" and tail == ["comments"] and method == "GET":
                return self._comment_page(path, pull["number"], query)
        return 404, {"message": "Not Found"}, {}

    def _list_pulls(self, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        head, base = query.get("head"), query.get("base")
        found = []
        for pull in sorted(self.pulls.values(), key=lambda item: -item["number"]):
            if state != "all" and pull["state"] != state:
                continue
            if head and pull["head"]["label"] != head:
                continue
            if base and pull["base"]["ref"] != base:
                continue
            found.append(pull)
        return found

    def _create_pull(self, payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        head, base, title = payload.get("head"), payload.get("base"), payload.get("title")
        if not head or not base or not title:
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "PullRequest", "code": "missing_field"}]}, {}
        branch = str(head).split(":", 1)[-1]
        if any(pull["head"]["ref"] == branch for pull in self.open_pulls()):
            fault = already_exists(self.owner, branch)
            return fault.status, fault.body, {}
        body = payload.get("body")
        if body is not None and len(body) > 65_536:
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Issue", "field": "body",
                                     "code": "custom",
                                     "message": "body is too long (maximum is 65536 "
                                                "characters)"}]}, {}
        pull = self._new_pull(str(head), str(base), str(title), body,
                              bool(payload.get("draft", False)))
        return 201, pull, {"Location": pull["url"]}

    def _update_pull(self, pull: dict[str, Any],
                     payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        for key in ("title", "body", "state"):
            if key in payload:
                pull[key] = payload[key]
        if "base" in payload:
            pull["base"]["ref"] = payload["base"]
        return 200, pull, {}

    def _add_labels(self, pull: dict[str, Any], payload: Any) -> tuple[int, Any, dict[str, str]]:
        names = payload.get("labels", []) if isinstance(payload, dict) else payload or []
        present = {label["name"] for label in pull["labels"]}
        for name in names:
            if name not in present:
                pull["labels"].append(self._label(str(name)))
                present.add(name)
        return 200, pull["labels"], {}

    def _add_comment(self, pull: dict[str, Any],
                     payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        comment_id = self._next_id
        self._next_id += 1
        number = pull["number"]
        comment = {"id": comment_id, "body": payload.get("body", ""), "user": self._user(),
                   "url": self._url(f"{self._repo_path()}/issues/comments/{comment_id}"),
                   "html_url": f"{pull['html_url']}#issuecomment-{comment_id}",
                   "issue_url": pull["issue_url"]}
        self.comments[number].append(comment)
        return 201, comment, {}

    def _comment_page(self, path: str, number: int,
                      query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        """One page of a PR's comments; with `per_page` set, a `Link: rel="next"` header
        names the next page, as GitHub's does."""
        comments = self.comments[number]
        if self.per_page is None:
            return 200, comments, {}
        size = min(int(query.get("per_page", self.per_page)), self.per_page)
        page = int(query.get("page", "1"))
        shown = comments[(page - 1) * size : page * size]
        headers = {}
        if page * size < len(comments):
            headers["Link"] = f'<{self._url(path)}?per_page={size}&page={page + 1}>; rel="next"'
        return 200, shown, headers

    def _one_comment(self, method: str, comment_id: int,
                     payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        """GET or PATCH /issues/comments/{id}: read or edit one comment in place."""
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] != comment_id:
                    continue
                if method == "PATCH" and "body" in payload:
                    comment["body"] = payload["body"]
                    return 200, comment, {}
                if method == "GET":
                    return 200, comment, {}
        return 404, {"message": "Not Found"}, {}

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for index, fault in enumerate(self._faults):
            if fault.matches(method, path):
                return self._faults.pop(index)
        return None

    def answer(self, request: RecordedRequest) -> tuple[int, Any, dict[str, str]]:
        """Log the request, then answer with a queued fault, a 401 or the resource."""
        with self._lock:
            self.requests.append(request)
            fault = self._take_fault(request.method, request.path)
            if fault is not None:
                return fault.status, fault.body, fault.headers
            authorization = request.headers.get("authorization", "")
            if authorization.split(" ", 1)[-1] != self.token:
                fault = bad_credentials()
                return fault.status, fault.body, fault.headers
            try:
                payload = request.json()
            except json.JSONDecodeError:
                return 400, {"message": "Problems parsing JSON"}, {}
            return self.handle(request.method, request.path, request.query, payload)


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = fake.protocol  # HTTP/1.1: keep-alive, as PyGithub's session expects
        disable_nagle_algorithm = True  # headers and body go out at once: no 40 ms stalls

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode("utf-8") if length else ""
            request = RecordedRequest(
                method=self.command,
                path=unquote(parts.path),
                query={key: values[-1] for key, values in parse_qs(parts.query).items()},
                headers={key.lower(): value for key, value in self.headers.items()},
                body=body,
            )
            status, payload, headers = fake.answer(request)
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for key, value in headers.items():
                self.send_header(key, value)
            if fake.close_connections:
                self.send_header("Connection", "close")  # also sets self.close_connection
            self.end_headers()
            if not fake._take_trickle(request.method, request.path):
                self.wfile.write(data)
                return
            self.wfile.flush()
            ends = time.monotonic() + fake.trickle_seconds
            for index in range(len(data)):  # every read returns in time; the whole never does
                if time.monotonic() >= ends or fake._stopping.is_set():
                    self.close_connection = True
                    return
                try:
                    self.wfile.write(data[index : index + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up
                    self.close_connection = True
                    return
                fake._stopping.wait(fake.trickle_interval)

        do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return  # keep test output clean

    return Handler

