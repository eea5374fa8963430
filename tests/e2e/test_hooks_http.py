"""Hooks resumed over a real socket: uvicorn serving ``workflows.http.app`` against real worker and beat processes."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from typing import Any, Iterator

import pytest

from tests.e2e import hook_flows
from tests.serving import serve
from workflows import HookAlreadyResumed, RunStatus, resume_hook
from workflows.core.model.tokens import new_token
from workflows.runtime import get_engine

pytestmark = pytest.mark.e2e

uvicorn = pytest.importorskip("uvicorn", reason="SKIPPED LOUDLY: uvicorn is not installed (pip install -e '.[dev]')")


class Collect(logging.Handler):
    """Keeps every formatted record of a logger."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def access_log() -> Iterator[Collect]:
    handler, logger = Collect(), logging.getLogger("uvicorn.access")
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old_level)


@pytest.fixture(scope="module")
def server(cluster, access_log: Collect) -> Iterator[tuple[str, int]]:  # type: ignore[no-untyped-def]
    """uvicorn on a free port in a background thread, serving the real app."""
    from workflows.web.hooks import app

    with serve(app, access_log=True) as address:
        yield address


def post(server: tuple[str, int], token: str, body: bytes | Any, headers: dict[str, str] | None = None,
         method: str = "POST") -> tuple[int, dict[str, Any]]:
    """Send one request; return the status and the decoded JSON answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection(*server, timeout=15)
    try:
        conn.request(method, f"/hooks/{token}", body=data,
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        text = response.read().decode()
    finally:
        conn.close()
    assert token not in text
    return response.status, json.loads(text)


def test_healthz(server: tuple[str, int]) -> None:
    conn = http.client.HTTPConnection(*server, timeout=5)
    conn.request("GET", "/healthz")
    response = conn.getresponse()
    assert (response.status, json.loads(response.read())) == (200, {"status": "ok"})
    conn.close()


def test_resume_once_then_409(server: tuple[str, int], access_log: Collect) -> None:
    run = hook_flows.approval.start()
    token = hook_flows.published_token(run)
    assert post(server, token, {"ok": True}, method="GET")[0] == 405
    assert post(server, token, b"{not json")[0] == 422
    status, body = post(server, token, {"approved": True, "note": "ship it"})
    assert (status, body) == (202, {"status": "accepted", "run_id": run.run_id})
    assert run.result(timeout=30) == {"approved": True, "note": "ship it"}
    status, body = post(server, token, {"approved": False})
    assert status == 409 and body["error"] == "HookAlreadyResumed"
    assert access_log.lines, "the access log recorded nothing"
    assert not [line for line in access_log.lines if token in line]
    assert any("/hooks/<redacted>" in line for line in access_log.lines)


def test_unknown_token_is_404(server: tuple[str, int]) -> None:
    status, body = post(server, new_token(), {"approved": True})
    assert status == 404 and body["error"] == "HookNotFound"


def test_expired_hook_is_410(server: tuple[str, int]) -> None:
    run = hook_flows.short_approval.start(1.0)
    token = hook_flows.published_token(run)
    [pending] = get_engine().store.hooks_for_run(run.run_id)  # beat may have expired it already (1 s)
    assert pending.status in ("pending", "expired") and pending.expires_at is not None
    time.sleep(max(0.0, pending.expires_at - time.time()) + 0.1)  # the time is the test: the hook expires
    status, body = post(server, token, {"approved": True})
    assert status == 410 and body["error"] in ("HookExpired", "HookClosed")
    assert run.result(timeout=30) == "timed out"
    status, body = post(server, token, {"approved": True})
    assert status == 410 and body["error"] in ("HookExpired", "HookClosed")


def test_schema_mismatch_is_422_and_hook_stays_pending(server: tuple[str, int]) -> None:
    run = hook_flows.typed_approval.start()
    token = hook_flows.published_token(run)
    status, body = post(server, token, {"approved": "maybe"})
    assert status == 422 and body["error"] == "HookPayloadInvalid"
    assert post(server, token, {"by": "ana"})[0] == 422
    assert run.status() is RunStatus.SUSPENDED
    assert post(server, token, {"approved": True, "by": "ana"})[0] == 202
    assert run.result(timeout=30) == {"approved": True, "by": "ana"}


def test_over_limit_bodies_are_413_and_hook_stays_pending(server: tuple[str, int]) -> None:
    from workflows.settings import get_settings

    limit = get_settings().max_payload_bytes
    run = hook_flows.approval.start()
    token = hook_flows.published_token(run)
    # A declared length over the limit is refused from the headers alone: the body is never sent.
    conn = http.client.HTTPConnection(*server, timeout=15)
    conn.putrequest("POST", f"/hooks/{token}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(10 * limit))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and json.loads(response.read())["error"] == "PayloadTooLarge"
    conn.close()
    # A body under the byte limit whose stored encoding is over it (each "é" is stored as \u00e9).
    status, body = post(server, token, json.dumps("é" * (limit // 4), ensure_ascii=False).encode())
    assert status == 413 and body["error"] == "PayloadTooLarge"
    assert run.status() is RunStatus.SUSPENDED
    assert post(server, token, "small")[0] == 202
    assert run.result(timeout=30) == "small"


def test_type_tagged_payload_arrives_as_plain_dict(server: tuple[str, int]) -> None:
    payload = {"__type__": "enum", "class": "builtins.eval", "args": ["1+1"]}
    run = hook_flows.approval.start()
    token = hook_flows.published_token(run)
    assert post(server, token, payload)[0] == 202
    assert run.result(timeout=30) == payload


def test_concurrent_resumes_exactly_one_wins(cluster) -> None:  # type: ignore[no-untyped-def]
    run = hook_flows.approval.start()
    token = hook_flows.published_token(run)
    barrier = threading.Barrier(10)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            result: Any = resume_hook(token, {"winner": i})
        except Exception as exc:  # collected and checked below
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    winners = [o for o in outcomes if not isinstance(o, Exception)]
    losers = [o for o in outcomes if isinstance(o, Exception)]
    assert len(winners) == 1 and winners[0].run_id == run.run_id
    assert len(losers) == 9 and all(isinstance(e, HookAlreadyResumed) for e in losers), losers
    assert run.result(timeout=30)["winner"] in range(10)
