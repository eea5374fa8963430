"""The hooks ASGI app, driven directly with hand-written receive/send callables (no server)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from workflows.core.model.tokens import new_token
from workflows.errors import (
    HookAlreadyResumed,
    HookClosed,
    HookExpired,
    HookNotFound,
    HookPayloadInvalid,
    PayloadTooLarge,
    SerializationError,
    StorageError,
)
from workflows.web import hooks as http

TOKEN = new_token()
LIMIT = 1000


@dataclass
class Run:
    run_id: str


@dataclass
class FakeResume:
    """Records calls; raises ``error`` if set, else returns a run."""

    error: BaseException | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)

    def __call__(self, token: str, payload: Any) -> Run:
        self.calls.append((token, payload))
        self.threads.append(threading.get_ident())
        if self.error is not None:
            raise self.error
        return Run("run-1")


@dataclass
class Response:
    status: int
    headers: dict[bytes, bytes]
    body: bytes
    scope: dict[str, Any]
    received: int

    def json(self) -> Any:
        return json.loads(self.body)


def call(app: http.HooksApp, method: str, path: str, chunks: list[bytes] | None = None,
         headers: list[tuple[bytes, bytes]] | None = None, root_path: str = "") -> Response:
    """Send one request through the app and collect the response."""
    chunks = [b"null"] if chunks is None else chunks
    if headers is None:
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(sum(map(len, chunks))).encode())]
    scope: dict[str, Any] = {"type": "http", "method": method, "path": root_path + path,
                             "raw_path": (root_path + path).encode(), "root_path": root_path,
                             "query_string": b"", "headers": headers}
    pending = list(chunks)
    sent: list[dict[str, Any]] = []
    received = 0

    async def receive() -> dict[str, Any]:
        nonlocal received
        received += 1
        if not pending:
            return {"type": "http.disconnect"}
        body = pending.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    return Response(sent[0]["status"], dict(sent[0]["headers"]), sent[1]["body"], scope, received)


def make(error: BaseException | None = None) -> tuple[http.HooksApp, FakeResume]:
    fake = FakeResume(error)
    return http.create_app(complete=fake, max_body=LIMIT, imports=()), fake


def assert_no_token(response: Response) -> None:
    assert TOKEN not in response.body.decode()
    assert TOKEN not in response.scope["path"] and TOKEN.encode() not in response.scope["raw_path"]


def test_accepted_runs_resume_in_a_thread() -> None:
    app, fake = make()
    response = call(app, "POST", f"/hooks/{TOKEN}", [b'{"approved": true}'])
    assert response.status == 202
    assert response.json() == {"status": "accepted", "run_id": "run-1"}
    assert response.headers[b"content-type"] == b"application/json"
    assert fake.calls == [(TOKEN, {"approved": True})]
    assert fake.threads[0] != threading.get_ident()  # not on the event loop's thread
    assert_no_token(response)
    assert response.scope["path"] == "/hooks/<redacted>"  # what the server's access log will print


@pytest.mark.parametrize(("error", "status"), [
    (HookNotFound(), 404),
    (HookAlreadyResumed("this hook token was already used"), 409),
    (HookExpired("hook 'approve' expired"), 410),
    (HookClosed("the run of hook 'approve' has ended"), 410),
    (HookPayloadInvalid("payload for hook 'approve' does not match its schema"), 422),
    (SerializationError("hook payload is not JSON data"), 422),
    (PayloadTooLarge("hook payload", 2000, 1000), 413),
])
def test_typed_errors_map_to_status(error: Exception, status: int) -> None:
    app, fake = make(error)
    response = call(app, "POST", f"/hooks/{TOKEN}", [b'{"x": 1}'])
    assert response.status == status
    assert response.json() == {"error": type(error).__name__, "message": str(error)}
    assert len(fake.calls) == 1
    assert_no_token(response)


def test_token_is_scrubbed_from_error_messages() -> None:
    app, _ = make(HookExpired(f"hook for {TOKEN} expired"))
    response = call(app, "POST", f"/hooks/{TOKEN}", [b"1"])
    assert response.status == 410
    assert response.json()["message"] == "hook for <token> expired"


def test_unexpected_error_is_500_generic_and_logged_without_token(caplog: pytest.LogCaptureFixture) -> None:
    app, _ = make(StorageError(f"table down while resuming {TOKEN}"))
    with caplog.at_level(logging.ERROR, logger="workflows.http"):
        response = call(app, "POST", f"/hooks/{TOKEN}", [b"{}"])
    assert response.status == 500
    body = response.json()
    assert body["error"] == "InternalError"
    assert "table down" not in body["message"] and "Traceback" not in body["message"]
    assert "StorageError: table down while resuming <token>" in caplog.text
    assert TOKEN not in caplog.text
    assert_no_token(response)


def test_oversize_content_length_is_413_before_reading() -> None:
    app, fake = make()
    headers = [(b"content-length", str(LIMIT + 1).encode())]
    response = call(app, "POST", f"/hooks/{TOKEN}", [b"x" * (LIMIT + 1)], headers=headers)
    assert response.status == 413
    assert response.json()["error"] == "PayloadTooLarge"
    assert response.received == 0 and fake.calls == []
    assert_no_token(response)


@pytest.mark.parametrize("value", [b"lots", b"", b"1e3"])
def test_invalid_content_length_is_400_before_reading(value: bytes) -> None:
    app, fake = make()
    response = call(app, "POST", f"/hooks/{TOKEN}", [b"1"], headers=[(b"content-length", value)])
    assert response.status == 400
    assert response.json() == {"error": "BadRequest", "message": "invalid Content-Length header"}
    assert response.received == 0 and fake.calls == []
    assert_no_token(response)


def test_oversize_streamed_body_is_413_without_reading_it_all() -> None:
    app, fake = make()
    chunks = [b"[" + b"1," * 200] * 20  # ~4 KB without a Content-Length (chunked)
    response = call(app, "POST", f"/hooks/{TOKEN}", chunks, headers=[])
    assert response.status == 413
    assert fake.calls == []
    assert response.received < len(chunks)


def test_streamed_body_within_limit_is_joined() -> None:
    app, fake = make()
    response = call(app, "POST", f"/hooks/{TOKEN}", [b'{"a": ', b'[1, 2]', b"}"], headers=[])
    assert response.status == 202
    assert fake.calls == [(TOKEN, {"a": [1, 2]})]


@pytest.mark.parametrize("body", [b"{", b"", b"  ", b"NaN", b'{"x": Infinity}', b"\xff\xfe", b"[" * 100_000])
def test_bad_json_is_422_without_calling_resume(body: bytes) -> None:
    app, fake = make()
    app.max_body = 200_000
    response = call(app, "POST", f"/hooks/{TOKEN}", [body])
    assert response.status == 422
    assert response.json()["error"] == "SerializationError"
    assert fake.calls == []
    assert_no_token(response)


def test_type_tagged_payload_is_passed_as_plain_data() -> None:
    app, fake = make()
    payload = {"__type__": "enum", "class": "builtins.eval", "args": ["1+1"]}
    assert call(app, "POST", f"/hooks/{TOKEN}", [json.dumps(payload).encode()]).status == 202
    assert fake.calls == [(TOKEN, payload)]


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "HEAD"])
def test_wrong_method_is_405(method: str) -> None:
    app, fake = make()
    response = call(app, method, f"/hooks/{TOKEN}")
    assert response.status == 405
    assert response.headers[b"allow"] == b"POST"
    assert fake.calls == []
    assert_no_token(response)


@pytest.mark.parametrize("path", ["/", "/hooks", "/hooks/", f"/hooks/{TOKEN}/", f"/hooks/{TOKEN}/x", "/other"])
def test_other_paths_are_404(path: str) -> None:
    app, fake = make()
    response = call(app, "POST", path)
    assert response.status == 404
    assert response.json()["error"] == "NotFound"
    assert fake.calls == []
    assert TOKEN not in response.body.decode()
    if path.startswith("/hooks/"):
        assert_no_token(response)


def test_healthz() -> None:
    app, _ = make()
    assert call(app, "GET", "/healthz").json() == {"status": "ok"}
    head = call(app, "HEAD", "/healthz")
    assert head.status == 200 and head.body == b""
    assert call(app, "POST", "/healthz").status == 405


def test_mounted_under_a_root_path() -> None:
    app, fake = make()
    response = call(app, "POST", f"/hooks/{TOKEN}", [b"7"], root_path="/wf")
    assert response.status == 202 and fake.calls == [(TOKEN, 7)]
    assert response.scope["path"] == "/wf/hooks/<redacted>"
    assert call(app, "GET", "/healthz", root_path="/wf").status == 200


def test_workflow_modules_are_imported_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[tuple[str, ...]] = []
    monkeypatch.setattr("workflows.core.model.registry.load_imports", lambda modules: loaded.append(tuple(modules)))
    fake = FakeResume()
    app = http.create_app(complete=fake, max_body=LIMIT, imports=["tests.e2e.flows"])
    call(app, "GET", "/healthz")
    assert loaded == []
    for _ in range(3):
        assert call(app, "POST", f"/hooks/{TOKEN}", [b"1"]).status == 202
    assert loaded == [("tests.e2e.flows",)]


def test_default_body_limit_follows_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from workflows.settings import Settings

    monkeypatch.setattr("workflows.settings.get_settings", lambda: Settings(max_payload_bytes=5000))
    assert http.create_app(complete=FakeResume()).body_limit() == 5000 + http.BODY_MARGIN


def test_lifespan() -> None:
    app, _ = make()
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app({"type": "lifespan"}, receive, send))
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


def test_the_old_resume_keyword_still_builds_the_app_with_a_deprecation_warning() -> None:
    fake = FakeResume(None)
    with pytest.warns(DeprecationWarning, match=r"create_app\(complete=") as caught:
        app = http.create_app(resume=fake, max_body=LIMIT, imports=())
    assert caught[0].filename == __file__
    assert call(app, "POST", f"/hooks/{TOKEN}", [b'{"ok": 1}']).status == 202
    assert fake.calls == [(TOKEN, {"ok": 1})]
