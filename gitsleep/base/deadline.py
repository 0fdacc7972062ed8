"""A total deadline per HTTP request, for the model client and the GitHub client.

Both HTTP stacks time out each socket read, never the whole request: a server (or a proxy)
that sends its headers and then one byte every half second keeps a call alive forever.
Here every read and write of a request waits at most the time left before the request's
deadline (`timeout` seconds after it started), so `timeout` is the whole call. Running out
is an ordinary read timeout to the client above, so its own retries and errors apply.

- `DeadlineTransport` is an httpx2 transport (the `openai` client's HTTP stack): the
  deadline is kept per thread while the request and its body are read, and every network
  stream of the pool consults it.
- `DeadlineAdapter` is a requests adapter (PyGithub's HTTP stack): each urllib3 connection
  stamps a deadline when it sends a request and reads the reply through a file that
  consults it.
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore2
import httpx2
import requests.adapters
import urllib3.connection
import urllib3.connectionpool

_local = threading.local()


def _left(timeout: float | None, error: type[Exception]) -> float | None:
    """The per-operation timeout, shortened to what is left of this thread's deadline."""
    deadline: float | None = getattr(_local, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's total deadline passed")
    return left if timeout is None else min(timeout, left)


class _Within:
    """Set this thread's deadline for the duration of a `with` block."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __enter__(self) -> None:
        self.previous = getattr(_local, "deadline", None)
        _local.deadline = self.deadline

    def __exit__(self, *exc_info: object) -> None:
        _local.deadline = self.previous


# -- httpx2 / httpcore2 (the openai client) -------------------------------------------------


class _DeadlineStream(httpcore2.NetworkStream):
    def __init__(self, stream: httpcore2.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore2.NetworkStream:
        return _DeadlineStream(self._stream.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore2.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    def __init__(self, backend: httpcore2.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                    local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
        return _DeadlineStream(self._backend.connect_tcp(
            host, port, _left(timeout, httpcore2.ConnectTimeout), local_address,
            socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None
                            ) -> httpcore2.NetworkStream:
        return _DeadlineStream(self._backend.connect_unix_socket(
            path, _left(timeout, httpcore2.ConnectTimeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _DeadlineBody(httpx2.SyncByteStream):
    """A response body read under its request's deadline."""

    def __init__(self, stream: Any, deadline: float, on_timeout: Callable[[], None]) -> None:
        self._stream = stream
        self._deadline = deadline
        self._on_timeout = on_timeout

    def __iter__(self) -> Iterator[bytes]:
        chunks = iter(self._stream)
        while True:
            try:
                with _Within(self._deadline):
                    chunk = next(chunks, None)
            except httpx2.TimeoutException:
                self._on_timeout()
                raise
            if chunk is None:
                return
            yield chunk

    def close(self) -> None:
        self._stream.close()


class DeadlineTransport(httpx2.HTTPTransport):
    """httpx2's transport with a total deadline of `total` seconds per request.

    `on_timeout` is called (then the timeout propagates) whenever a request times out,
    whether on a per-read timeout or the total deadline.
    """

    def __init__(self, total: float, *, on_timeout: Callable[[], None] | None = None,
                 **options: Any) -> None:
        super().__init__(**options)
        self.total = total
        self.on_timeout = on_timeout
        # httpcore2's pool takes a network backend; HTTPTransport does not pass one on.
        pool = self._pool
        pool._network_backend = _DeadlineBackend(pool._network_backend)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = time.monotonic() + self.total
        try:
            with _Within(deadline):
                response = super().handle_request(request)
        except httpx2.TimeoutException:
            self._timed_out()
            raise
        response.stream = _DeadlineBody(response.stream, deadline, self._timed_out)
        return response

    def _timed_out(self) -> None:
        if self.on_timeout is not None:
            self.on_timeout()


class DeadlineClientMixin:
    """Mixed into an httpx2.Client: every transport it makes (direct or through a proxy
    from the environment) is a DeadlineTransport."""

    def __init__(self, *, total: float, on_timeout: Callable[[], None] | None = None,
                 **options: Any) -> None:
        self._deadline_options: dict[str, Any] = {"total": total, "on_timeout": on_timeout}
        super().__init__(**options)

    def _init_transport(self, transport: Any = None, **options: Any) -> Any:
        return transport or DeadlineTransport(**self._deadline_options, **options)

    def _init_proxy_transport(self, proxy: Any, **options: Any) -> Any:
        return DeadlineTransport(**self._deadline_options, proxy=proxy, **options)


# -- requests / urllib3 (PyGithub) ----------------------------------------------------------


class _DeadlineReader(io.RawIOBase):
    """A socket's reading side where no read outlasts the request's deadline.

    It reads through the socket's own file (`makefile`), which holds a reference on the
    socket: http.client closes its socket as soon as it has the headers of a reply that
    ends the connection (`Connection: close`, HTTP/1.0), and the body must still be read
    from the open descriptor, as http.client's own file would.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's total deadline passed")
        before = self._sock.gettimeout()
        self._sock.settimeout(left if before is None else min(before, left))
        try:
            read: int | None = self._raw.readinto(buffer)
            return 0 if read is None else read
        finally:
            self._sock.settimeout(before)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()  # drops the reference; the socket closes with its last one
        super().close()


class _ReplySocket:
    """What http.client's response reads from: the socket, through `_DeadlineReader`."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BufferedReader:
        return io.BufferedReader(_DeadlineReader(self._sock, self._deadline))


def _reply(sock: socket.socket, *args: Any, deadline: float,
           **kwargs: Any) -> http.client.HTTPResponse:
    return http.client.HTTPResponse(_ReplySocket(sock, deadline), *args, **kwargs)  # type: ignore[arg-type]


class _DeadlineConnection:
    """Mixed into urllib3's connections: a deadline from `request` to the last body byte."""

    total: float = 30.0
    _deadline: float = 0.0

    def request(self, *args: Any, **kwargs: Any) -> None:
        self._deadline = time.monotonic() + self.total
        super().request(*args, **kwargs)  # type: ignore[misc]

    def getresponse(self) -> Any:
        self.response_class = functools.partial(_reply, deadline=self._deadline)
        return super().getresponse()  # type: ignore[misc]


@functools.lru_cache(maxsize=8)
def _pool_classes(total: float) -> dict[str, type]:
    made = {}
    for scheme, pool, connection in (
        ("http", urllib3.connectionpool.HTTPConnectionPool, urllib3.connection.HTTPConnection),
        ("https", urllib3.connectionpool.HTTPSConnectionPool, urllib3.connection.HTTPSConnection),
    ):
        conn = type(f"Deadline{connection.__name__}", (_DeadlineConnection, connection),
                    {"total": total})
        made[scheme] = type(f"Deadline{pool.__name__}", (pool,), {"ConnectionCls": conn})
    return made


class DeadlineAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter with a total deadline of `total` seconds per request."""

    def __init__(self, total: float, **options: Any) -> None:
        self.total = total  # read by init_poolmanager, which the base __init__ calls
        super().__init__(**options)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _pool_classes(self.total)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _pool_classes(self.total)
        return manager
