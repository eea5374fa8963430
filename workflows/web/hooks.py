"""A dependency-free ASGI app that completes hooks over HTTP (``resume_hook``).

Routes::

    POST /hooks/{token}   body: the JSON payload  -> 202 {"status": "accepted", "run_id": ...}
    GET  /healthz                                 -> 200 {"status": "ok"}

Errors answer ``{"error": <type>, "message": <text>}`` with 404 (unknown token),
409 (token already used), 410 (hook expired or its run ended), 413 (payload too
large), 408 (the body did not arrive within ``WORKFLOWS_WEB_BODY_TIMEOUT``), 422
(schema mismatch, or the body is not JSON data), 405 (wrong method) or 500 (anything
else; logged, no details sent). The body is read with a running count, so a chunked
body with no Content-Length is cut off at the limit too; a 408 or 413 closes the connection.

Serve it with ``uvicorn workflows.http:app`` (the stable path of this module) or mount it in another ASGI app,
e.g. ``starlette_app.mount("/wf", workflows.http.app)``. Tokens are secrets:
they never appear in a response or a log line, and the app rewrites the
request path in the ASGI scope to ``/hooks/<redacted>`` so that the server's
access log does not record them either.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import traceback
import warnings
from typing import Any, Awaitable, Callable, MutableMapping, Sequence

from ..client import resume_hook
from ..errors import (
    HookAlreadyResumed,
    HookClosed,
    HookExpired,
    HookNotFound,
    HookPayloadInvalid,
    PayloadTooLarge,
    SerializationError,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
CompleteFn = Callable[[str, Any], Any]

log = logging.getLogger("workflows.http")

HOOKS_PREFIX = "/hooks/"
REDACTED_PATH = "/hooks/<redacted>"
BODY_MARGIN = 4096  # room for whitespace a client adds around a payload at the size limit

# Most specific first: PayloadTooLarge is a SerializationError, HookNotFound a NotFound.
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (HookNotFound, 404),
    (HookAlreadyResumed, 409),
    (HookExpired, 410),
    (HookClosed, 410),
    (HookPayloadInvalid, 422),
    (PayloadTooLarge, 413),
    (SerializationError, 422),
)


class ClientGone(Exception):
    """The client disconnected before sending its whole body; nobody is left to answer."""


class HttpError(Exception):
    """An error answered with ``status`` and a JSON body naming ``kind``."""

    def __init__(self, status: int, kind: str, message: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.headers = status, kind, message, list(headers)


def route_path(scope: Scope) -> str:
    """The path below the mount point (``root_path``), as Starlette's ``Mount`` passes it."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root):len(root) + 1] in ("", "/"):
        return path[len(root):]
    return path


def _redact(scope: Scope, root_path: str) -> None:
    # Servers log the path from the scope after the response starts (uvicorn reads ``raw_path``).
    scope["path"] = (root_path or "") + REDACTED_PATH
    scope["raw_path"] = scope["path"].encode()


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


def parse_body(body: bytes) -> Any:
    """Decode a request body as strict JSON (UTF-8, no NaN or Infinity).

    Raises:
        SerializationError: the body is not JSON data.
    """
    try:
        return json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        reason = "it is empty" if not body.strip() else type(exc).__name__
        raise SerializationError(f"the request body is not JSON data ({reason}); send null for no payload") from None


async def read_body(scope: Scope, receive: Receive, limit: int, timeout: float | None = None) -> bytes:
    """Read the request body, counting as it comes: refused once over ``limit`` bytes (declared or
    streamed, chunked or not), or when the whole of it has not come within ``timeout`` seconds.

    Raises:
        HttpError: 413 over ``limit``, 408 past ``timeout``; both ask to close the connection,
            since the rest of the body is never read.
        ClientGone: the client disconnected.
    """
    close = [(b"connection", b"close")]
    too_large = HttpError(413, "PayloadTooLarge", f"the request body is over the limit of {limit} bytes", close)
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                declared = int(value)
            except ValueError:
                raise HttpError(400, "BadRequest", "invalid Content-Length header") from None
            if declared > limit:
                raise too_large
    chunks, size = [], 0
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        try:
            message = await (receive() if deadline is None else
                             asyncio.wait_for(receive(), max(0.0, deadline - loop.time())))
        except asyncio.TimeoutError:
            raise HttpError(408, "RequestTimeout", f"the request body did not arrive within {timeout:g} s",
                            close) from None
        if message["type"] == "http.disconnect":
            raise ClientGone()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_json(send: Send, status: int, body: Any, headers: Sequence[tuple[bytes, bytes]] = (),
                    head: bool = False) -> None:
    """Send a complete JSON response."""
    data = json.dumps(body, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"cache-control", b"no-store"), *headers]})
    await send({"type": "http.response.body", "body": b"" if head else data})


def error_response(exc: Exception, token: str) -> HttpError:
    """Map a library error to its HTTP answer; the token is scrubbed from the message."""
    for kind, status in ERROR_STATUS:
        if isinstance(exc, kind):
            message = str(exc).replace(token, "<token>") if token else str(exc)
            return HttpError(status, type(exc).__name__, message)
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    log.error("completing a hook failed:\n%s", trace.replace(token, "<token>") if token else trace)
    return HttpError(500, "InternalError", "the hook could not be resumed; see the server log")


class HooksApp:
    """The ASGI callable; see the module docstring for routes and answers."""

    def __init__(self, complete: CompleteFn = resume_hook, max_body: int | None = None,
                 imports: Sequence[str] | None = None, body_timeout: float | None = None) -> None:
        self.complete = complete
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.imports = imports
        self._loaded = False
        self._lock = threading.Lock()

    def body_limit(self) -> int:
        """The largest accepted body: the configured payload limit plus a small margin."""
        if self.max_body is None:
            from ..settings import get_settings

            self.max_body = get_settings().max_payload_bytes + BODY_MARGIN
        return self.max_body

    def body_seconds(self) -> float:
        """How long a request has to send its whole body (``WORKFLOWS_WEB_BODY_TIMEOUT`` by default)."""
        if self.body_timeout is None:
            from ..settings import get_settings

            self.body_timeout = get_settings().web_body_timeout
        return self.body_timeout

    def load_workflows(self) -> None:
        """Import the workflow modules once, so hook schemas (pydantic models) can validate payloads."""
        if self._loaded:
            return
        with self._lock:
            if not self._loaded:
                from ..core.model.registry import load_imports
                from ..settings import get_settings

                load_imports(tuple(self.imports) if self.imports is not None else get_settings().imports)
                self._loaded = True

    def _complete(self, token: str, payload: Any) -> Any:
        self.load_workflows()
        return self.complete(token, payload)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise RuntimeError(f"workflows.http serves HTTP only, not {scope['type']!r}")
        method, path = scope.get("method", "GET"), route_path(scope)
        try:
            if path == "/healthz":
                if method not in ("GET", "HEAD"):
                    raise HttpError(405, "MethodNotAllowed", f"{method} is not allowed here",
                                    [(b"allow", b"GET, HEAD")])
                await send_json(send, 200, {"status": "ok"}, head=method == "HEAD")
                return
            if not path.startswith(HOOKS_PREFIX):
                raise HttpError(404, "NotFound", "no such route")
            _redact(scope, scope.get("root_path", ""))  # even a mistyped hook URL holds a token
            token = path[len(HOOKS_PREFIX):]
            if not token or "/" in token:
                raise HttpError(404, "NotFound", "no such route")
            if method != "POST":
                raise HttpError(405, "MethodNotAllowed", f"{method} is not allowed here", [(b"allow", b"POST")])
            await send_json(send, 202, await self._handle_completion(scope, receive, token))
        except ClientGone:
            return
        except HttpError as exc:
            await send_json(send, exc.status, {"error": exc.kind, "message": exc.message}, exc.headers,
                            head=method == "HEAD")

    async def _handle_completion(self, scope: Scope, receive: Receive, token: str) -> dict[str, Any]:
        body = await read_body(scope, receive, self.body_limit(), self.body_seconds())
        try:
            payload = parse_body(body)
            run = await asyncio.to_thread(self._complete, token, payload)
        except Exception as exc:  # every failure becomes a typed answer; the 500s are logged
            raise error_response(exc, token) from None
        return {"status": "accepted", "run_id": getattr(run, "run_id", None)}

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(complete: CompleteFn = resume_hook, max_body: int | None = None,
               imports: Sequence[str] | None = None, body_timeout: float | None = None,
               **deprecated: Any) -> HooksApp:
    """Build the hooks app.

    Args:
        complete: the function that completes a hook with its payload (``resume_hook``; tests
            inject fakes). ``resume=``, its old name, works for one release with a ``DeprecationWarning``.
        max_body: largest accepted request body in bytes; default: the configured
            ``max_payload_bytes`` plus a small margin, read at the first request.
        imports: workflow modules to import at the first hook request; default:
            ``WORKFLOWS_IMPORTS``.
        body_timeout: seconds a request has to send its whole body (408 past it); default
            ``WORKFLOWS_WEB_BODY_TIMEOUT`` (10).
    """
    if deprecated.keys() - {"resume"}:
        raise TypeError(f"create_app() got unexpected keyword(s) {', '.join(sorted(deprecated.keys() - {'resume'}))}")
    if "resume" in deprecated:
        warnings.warn("create_app(resume=...) is deprecated: use create_app(complete=...) (a hook is completed; "
                      "a resume is a run's replay)", DeprecationWarning, stacklevel=2)
        complete = deprecated["resume"]
    return HooksApp(complete, max_body, imports, body_timeout)


app = create_app()
