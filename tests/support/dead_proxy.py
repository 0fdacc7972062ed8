"""A loopback HTTP proxy that forwards nothing and records who tried to use it.

The suite's network guard (tests/conftest.py) patches sockets in the test process only;
an agent CLI the test starts is another process. Pointing its `HTTP(S)_PROXY` here keeps
it off the internet (every request is refused with 403) and shows what it tried to reach:
`attempts` holds the first line of each connection, e.g.
`CONNECT raw.githubusercontent.com:443 HTTP/1.1`.

    with DeadProxy() as proxy:
        env = {**os.environ, **proxy.env(no_proxy="127.0.0.1")}
"""

from __future__ import annotations

import socketserver
import threading


class _Handler(socketserver.StreamRequestHandler):
    proxy: DeadProxy

    def handle(self) -> None:
        first = self.rfile.readline(8192).decode("latin-1").strip()
        with self.proxy.lock:
            self.proxy.attempts.append(first)
        self.wfile.write(
            b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )


class DeadProxy:
    """Binds 127.0.0.1 on a free port; `attempts` lists what clients asked it for."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"proxy": self})
        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def env(self, no_proxy: str) -> dict[str, str]:
        """Proxy variables in both spellings (libraries read one or the other)."""
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return {
            **{n: self.url for n in names},
            **{n.lower(): self.url for n in names},
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
        }

    def __enter__(self) -> DeadProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
