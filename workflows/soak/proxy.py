"""The fault front: an HTTP proxy between every project process and the local AWS server.

Each process's AWS endpoint variables name the front; it forwards every request to the server
over a keep-alive connection of its own thread, unless the request's draw (:mod:`.faults`) says
otherwise. A lost response and a reset close the client's socket with ``SO_LINGER`` 0, so the
client reads a connection reset (what a dropped load balancer connection looks like to the SDK).
"""

from __future__ import annotations

import http.client
import socket
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from .faults import Answer, FaultPlan, Request, error_answer, throttle_answer

#: Headers of one hop only: never forwarded either way.
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                         "upgrade", "content-length"})


class _Upstream(threading.local):
    """This thread's connection to the server."""

    connection: http.client.HTTPConnection | None = None


class FrontHandler(BaseHTTPRequestHandler):
    """Forwards one request, or fails it as the plan draws."""

    protocol_version = "HTTP/1.1"
    server: FaultFront

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the soak counts faults, it does not log requests."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        """Proxy a GET."""
        self.handle_any()

    do_POST = do_PUT = do_DELETE = do_HEAD = do_GET  # noqa: N815

    def handle_any(self) -> None:
        """Read the request, draw its fault, then answer, forward or drop it."""
        body = self.read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = Request.of(self.command, headers, body)
        fault, delay = self.server.plan.draw(request)
        if fault == "reset":
            return self.drop()
        if fault in ("throttle", "error"):
            return self.answer(throttle_answer(request, len(body)) if fault == "throttle" else error_answer(request))
        if fault == "latency":
            time.sleep(delay)
        answer = self.forward(body)
        if fault == "lose":
            return self.drop()  # applied, then the response is lost
        self.answer(answer)

    def read_body(self) -> bytes:
        """The request's body, whether sized or chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def forward(self, body: bytes) -> Answer:
        """Send the request to the server and read its whole answer (one retry on a stale connection)."""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
        headers["Content-Length"] = str(len(body))
        for retry in (False, True):
            connection = self.server.upstream_connection(fresh=retry)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                if retry:
                    raise
                continue
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_HEADERS]
            if self.command == "HEAD":
                kept += [(k, v) for k, v in response.getheaders() if k.lower() == "content-length"]
            return response.status, kept, data
        raise AssertionError("unreachable")

    def answer(self, answer: Answer) -> None:
        """Write an answer to the client."""
        status, headers, body = answer
        self.send_response_only(status)
        for key, value in headers:
            self.send_header(key, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.wfile.flush()

    def drop(self) -> None:
        """Reset the client's connection: ``SO_LINGER`` 0, then close."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass


class FaultFront(ThreadingHTTPServer):
    """The proxy server: ``start()`` serves it in a daemon thread on a free port of 127.0.0.1."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, upstream: str, plan: FaultPlan) -> None:
        super().__init__(("127.0.0.1", 0), FrontHandler)
        parsed = urlparse(upstream)
        self.upstream_host, self.upstream_port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.plan = plan
        self._local = _Upstream()
        self._thread: threading.Thread | None = None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is no error of the front's."""
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        """The front's endpoint URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    def upstream_connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        """This thread's keep-alive connection to the server (a new one when ``fresh``)."""
        if fresh or self._local.connection is None:
            if self._local.connection is not None:
                self._local.connection.close()
            self._local.connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=120)
        return self._local.connection

    def start(self) -> FaultFront:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(target=self.serve_forever, name="soak-fault-front", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self.shutdown()
        self.server_close()
