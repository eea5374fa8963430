"""An ASGI app served by uvicorn on a free port, in a background thread, for a test."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any, Iterator

import uvicorn

from tests.waiting import wait_for


@contextlib.contextmanager
def serve(app: Any, **config: Any) -> Iterator[tuple[str, int]]:
    """Serve ``app`` (uvicorn ``config`` options) until the block ends; yields ``(host, port)``."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="on", **config))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    wait_for(lambda: srv.started or not thread.is_alive(), 10, what="uvicorn starts")
    assert srv.started, "uvicorn did not start"
    try:
        yield sock.getsockname()
    finally:
        srv.should_exit = True
        thread.join(timeout=10)
        sock.close()
