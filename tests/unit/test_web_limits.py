"""The web server's limits over real HTTP (uvicorn in a thread, as ``workflows web`` runs it): a chunked
body is cut off at the limit while it streams, a slow body at the deadline, and connections are capped."""

from __future__ import annotations

import select
import socket
import time
from typing import Iterator

import pytest

from tests.serving import serve
from tests.unit.test_http import TOKEN, make
from tests.unit.test_web_auth import SECRET
from workflows.memory import MemoryStore
from workflows.settings import Settings, configure
from workflows.web import create_app, server_options
from workflows.web.throttle import FAILURE_LIMIT

BODY_SECONDS = 1.0


@pytest.fixture()
def server() -> Iterator[tuple[str, int]]:
    settings = Settings(web_body_timeout=BODY_SECONDS, web_max_connections=8)
    configure(settings)
    try:
        app = create_app(SECRET, hooks=make()[0], sessions=MemoryStore(settings))
        with serve(app, **server_options(settings)) as address:
            yield address
    finally:
        configure(None)


def answer(sock: socket.socket, timeout: float = 10) -> tuple[int, bytes]:
    """Read the response until the server closes the connection; its status and the whole text."""
    sock.settimeout(timeout)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            break
        if not chunk:
            break
        data += chunk
    return (int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0), data


def send_until_answered(sock: socket.socket, pieces: Iterator[bytes], pause: float = 0.0) -> tuple[int, int, bytes]:
    """Send ``pieces`` until the server answers (or stops reading); the bytes sent, status and answer."""
    sent = 0
    for piece in pieces:
        if select.select([sock], [], [], pause)[0]:
            break
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(piece)
    status, data = answer(sock)
    return sent, status, data


def head(path: str, framing: str) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"{framing}\r\n\r\n").encode()


@pytest.mark.parametrize("path", ["/login", f"/hooks/{TOKEN}"])
def test_a_chunked_body_with_no_length_is_refused_at_the_limit_while_it_streams(
        server: tuple[str, int], path: str) -> None:
    sock = socket.create_connection(server)
    sock.sendall(head(path, "Transfer-Encoding: chunked"))
    chunk = b"%x\r\n%s\r\n" % (65536, b"t" * 65536)
    sent, status, data = send_until_answered(sock, (chunk for _ in range(1600)))  # 100 MB if nobody stops it
    sock.close()
    assert status == 413 and b"connection: close" in data.lower(), data[:300]
    assert sent < 8 * 1024 * 1024, f"the server took {sent} bytes"  # the limit plus socket buffers


@pytest.mark.parametrize("path", ["/login", f"/hooks/{TOKEN}"])
def test_a_slow_body_is_cut_off_at_the_deadline(server: tuple[str, int], path: str) -> None:
    sock = socket.create_connection(server)
    started = time.monotonic()  # before the head: the server's deadline starts once it has read it
    sock.sendall(head(path, "Content-Length: 100"))
    sent, status, data = send_until_answered(sock, (b"t" for _ in range(100)), pause=0.3)  # would take 30 s
    elapsed = time.monotonic() - started
    sock.close()
    assert status == 408 and b"connection: close" in data.lower(), data[:300]
    assert BODY_SECONDS <= elapsed < BODY_SECONDS + 3 and sent < 20


def test_connections_past_the_limit_are_refused(server: tuple[str, int]) -> None:
    idle = [socket.create_connection(server) for _ in range(8)]
    time.sleep(0.3)  # no condition to poll: the server accepts the 8 idle connections
    try:
        sock = socket.create_connection(server)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        status, _ = answer(sock)
        sock.close()
        assert status == 503
    finally:
        for conn in idle:
            conn.close()
    time.sleep(0.3)  # no condition to poll: the server sees the 8 connections closed
    sock = socket.create_connection(server)
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert answer(sock)[0] == 200
    sock.close()


def sign_in_with(server: tuple[str, int], token: str, forwarded_for: str) -> int:
    """One sign-in over a fresh connection, claiming to come from ``forwarded_for``; its status."""
    body = f"token={token}".encode()
    sock = socket.create_connection(server)
    sock.sendall(head("/login", f"Content-Length: {len(body)}\r\nX-Forwarded-For: {forwarded_for}\r\n"
                                "Connection: close") + body)
    status, _ = answer(sock)
    sock.close()
    return status


def test_a_forged_forwarding_header_does_not_walk_around_the_sign_in_limit(server: tuple[str, int]) -> None:
    statuses = [sign_in_with(server, "wrong-token", f"10.0.0.{i}") for i in range(FAILURE_LIMIT + 5)]
    assert statuses[:FAILURE_LIMIT] == [401] * FAILURE_LIMIT
    assert statuses[FAILURE_LIMIT:] == [429] * 5  # the address that connected, not the header, is counted


def test_a_trusted_proxys_forwarded_address_is_counted() -> None:
    settings = Settings(web_trusted_proxies=("127.0.0.1",))
    configure(settings)
    try:
        app = create_app(SECRET, hooks=make()[0], sessions=MemoryStore(settings))
        with serve(app, **server_options(settings)) as address:
            statuses = [sign_in_with(address, "wrong-token", f"10.0.0.{i}") for i in range(FAILURE_LIMIT + 5)]
            assert statuses == [401] * (FAILURE_LIMIT + 5)  # each client behind the proxy counts on its own
            assert [sign_in_with(address, "wrong-token", "10.0.0.1") for _ in range(FAILURE_LIMIT)][-1] == 429
    finally:
        configure(None)
