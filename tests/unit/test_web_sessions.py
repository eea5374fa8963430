"""Signing out ends the session for every web process; failed sign-ins are logged and rate-limited.

Two apps sharing one in-memory store stand for two web processes sharing DynamoDB."""

from __future__ import annotations

import logging

import pytest

from tests.unit.test_http import call, make
from tests.unit.test_web_auth import FORM, SECRET, form, get
from workflows.memory import MemoryStore
from workflows.settings import Settings
from workflows.web import create_app
from workflows.web.app import FORM_LIMIT
from workflows.web.auth import SESSION_COOKIE
from workflows.web.throttle import FAILURE_LIMIT, SignInThrottle


def sign_in(app: object) -> str:
    response = form(app, "/login", f"token={SECRET}".encode())
    assert response.status == 303
    return response.headers[b"set-cookie"].decode().split(";")[0].split("=", 1)[1]


def with_cookie(cookie: str) -> list[tuple[bytes, bytes]]:
    return [(b"cookie", f"{SESSION_COOKIE}={cookie}".encode())]


def csrf_of(app: object, cookie: str) -> str:
    page = form(app, "/runs/r-1/cancel", b"", cookie)  # an action without its token: refused, but...
    assert page.status == 403
    from workflows.web.auth import Credentials

    creds = Credentials(SECRET)
    session_id = creds.session_id(cookie)
    assert session_id is not None
    return creds.csrf_token(session_id)


def test_a_copied_cookie_stops_working_in_every_process_once_its_session_signs_out() -> None:
    store = MemoryStore(Settings())
    first, second = (create_app(SECRET, hooks=make()[0], sessions=store) for _ in range(2))
    cookie = sign_in(first)
    for app in (first, second):  # the cookie works in both processes (an action gets past sign-in to CSRF)
        assert form(app, "/runs/r-1/cancel", b"confirm=yes", cookie).status == 403
    signed_out = form(first, "/logout", f"csrf={csrf_of(first, cookie)}".encode(), cookie)
    assert signed_out.status == 303 and b"Max-Age=0" in signed_out.headers[b"set-cookie"]
    for app in (first, second):
        refused = form(app, "/runs/r-1/cancel", b"confirm=yes", cookie)
        assert refused.status == 401 and b'name="token"' in refused.body
        assert call(app, "GET", "/runs", [b""], with_cookie(cookie)).status == 401  # type: ignore[arg-type]
    # a new sign-in makes a new session, which works
    assert form(second, "/runs/r-1/cancel", b"confirm=yes", sign_in(second)).status == 403


def test_failed_sign_ins_are_logged_without_the_token_and_limited_per_address(
        caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(SECRET, hooks=make()[0], sessions=MemoryStore(Settings()))
    guess = "not-the-token-but-a-long-guess"
    with caplog.at_level(logging.WARNING, logger="workflows.web"):
        for _ in range(FAILURE_LIMIT - 1):
            assert form(app, "/login", f"token={guess}".encode()).status == 401
        assert get(app, "/runs", [(b"authorization", f"Bearer {guess}".encode())]).status == 401
    failures = [r.getMessage() for r in caplog.records if "sign-in failed" in r.getMessage()]
    assert len(failures) == FAILURE_LIMIT and "from unknown" in failures[0]
    assert all(guess not in line and SECRET not in line for line in caplog.text.splitlines())
    for attempt in (f"token={SECRET}", f"token={guess}"):  # refused before the token is even checked
        refused = form(app, "/login", attempt.encode())
        assert refused.status == 429 and 0 < int(refused.headers[b"retry-after"]) <= 60
    assert get(app, "/runs", [(b"authorization", f"Bearer {SECRET}".encode())]).status == 429


def test_the_throttle_forgets_failures_past_the_window_and_bounds_its_memory() -> None:
    now = [1000.0]
    throttle = SignInThrottle(limit=3, window=60, clock=lambda: now[0], max_clients=2)
    for _ in range(3):
        assert throttle.retry_after("a") is None
        throttle.failed("a")
    assert throttle.retry_after("a") == 60
    now[0] += 30
    assert throttle.retry_after("a") == 30
    now[0] += 30.5
    assert throttle.retry_after("a") is None
    throttle.failed("b"), throttle.failed("c"), throttle.failed("d")
    assert len(throttle._failures) == 2


def test_a_chunked_form_without_a_length_is_cut_off_at_the_limit() -> None:
    app = create_app(SECRET, hooks=make()[0], sessions=MemoryStore(Settings()))
    chunk = b"t" * 65536
    chunks = [b"token="] + [chunk] * 1600  # 100 MB, no Content-Length
    response = call(app, "POST", "/login", chunks, [FORM])  # type: ignore[arg-type]
    assert response.status == 413 and response.headers.get(b"connection") == b"close"
    assert response.received <= FORM_LIMIT // len(chunk) + 3  # read no further than the limit


def test_failures_from_many_addresses_together_meet_an_overall_ceiling() -> None:
    now = [1000.0]
    throttle = SignInThrottle(limit=3, window=60, clock=lambda: now[0], overall=10)
    for i in range(10):  # ten addresses, each well under its own limit
        assert throttle.retry_after(f"10.0.0.{i}") is None
        throttle.failed(f"10.0.0.{i}")
    assert throttle.retry_after("10.9.9.9") == 60  # a fresh address is refused too, until the window passes
    now[0] += 60.5
    assert throttle.retry_after("10.9.9.9") is None
