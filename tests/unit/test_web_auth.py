"""The dashboard's credential checks and routing, driven through the ASGI app with no store
(every request here is answered before anything is read)."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.unit.test_http import TOKEN as HOOK_TOKEN
from tests.unit.test_http import Response, assert_no_token, call, make
from workflows.cli.commands import main
from workflows.errors import ConfigurationError
from workflows.memory import MemoryStore
from workflows.settings import Settings, configure
from workflows.web import create_app
from workflows.web.auth import SESSION_COOKIE, Credentials

SECRET = "dashboard-token-for-tests-0123456789"
FORM = b"content-type", b"application/x-www-form-urlencoded"


def form(app: object, path: str, body: bytes, cookie: str | None = None, root_path: str = "") -> Response:
    headers = [FORM, (b"content-length", str(len(body)).encode())]
    if cookie:
        headers.append((b"cookie", f"{SESSION_COOKIE}={cookie}".encode()))
    return call(app, "POST", path, [body], headers, root_path=root_path)  # type: ignore[arg-type]


def get(app: object, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> Response:
    return call(app, "GET", path, [b""], headers or [])  # type: ignore[arg-type]


def test_sessions_are_signed_expire_and_never_hold_the_token() -> None:
    creds = Credentials(SECRET, session_seconds=60)
    cookie = creds.new_session(now=1000)
    assert SECRET not in cookie
    session_id = creds.session_id(cookie, now=1030)
    assert session_id is not None and creds.session_id(cookie, now=1061) is None
    assert creds.session_id(cookie[:-1] + ("A" if cookie[-1] != "A" else "B"), now=1030) is None
    assert Credentials(SECRET + "x").session_id(cookie, now=1030) is None  # a new token ends every session
    assert creds.csrf_matches(session_id, creds.csrf_token(session_id))
    assert not creds.csrf_matches(session_id, "forged") and not creds.csrf_matches(session_id, None)
    assert creds.bearer_matches(f"Bearer {SECRET}") and not creds.bearer_matches(f"Basic {SECRET}")


def test_the_token_is_a_secret_setting_of_at_least_16_bytes() -> None:
    assert Settings.from_env({"WORKFLOWS_DASHBOARD_TOKEN": SECRET}).dashboard_token == SECRET
    assert SECRET not in repr(Settings(dashboard_token=SECRET))
    with pytest.raises(ConfigurationError, match="WORKFLOWS_DASHBOARD_TOKEN"):
        Settings(dashboard_token="short")


def test_without_a_token_the_dashboard_is_off_and_hooks_still_work() -> None:
    hooks, fake = make()
    app = create_app("", hooks=hooks)
    assert get(app, "/runs").status == 404
    assert form(app, "/login", f"token={SECRET}".encode()).status == 404
    response = call(app, "POST", f"/hooks/{HOOK_TOKEN}", [b'{"ok": true}'])  # type: ignore[arg-type]
    assert response.status == 202 and fake.calls == [(HOOK_TOKEN, {"ok": True})]
    assert_no_token(response)


def test_every_page_needs_the_credential() -> None:
    app = create_app(SECRET, hooks=make()[0])
    for path in ("/", "/runs", "/runs/some-run", "/schedules"):
        response = get(app, path)
        assert response.status == 401 and b'name="token"' in response.body, path
    assert form(app, "/runs/some-run/cancel", b"confirm=yes").status == 401
    assert form(app, "/login", b"token=wrong-token-of-some-length").status == 401
    assert get(app, "/runs", [(b"authorization", b"Bearer wrong")]).status == 401


def test_signing_in_sets_a_strict_http_only_cookie_and_actions_need_the_csrf_token() -> None:
    app = create_app(SECRET, hooks=make()[0], sessions=MemoryStore(Settings()))
    response = form(app, "/login", f"token={SECRET}".encode())
    assert response.status == 303 and response.headers[b"location"] == b"/runs"
    cookie_header = response.headers[b"set-cookie"].decode()
    assert "HttpOnly" in cookie_header and "SameSite=strict" in cookie_header and SECRET not in cookie_header
    cookie = cookie_header.split(";")[0].split("=", 1)[1]
    for body in (b"confirm=yes", b"confirm=yes&csrf=forged"):
        refused = form(app, "/runs/some-run/cancel", body, cookie)
        assert refused.status == 403 and b"did not come from the dashboard" in refused.body


def test_mounted_under_a_prefix_links_and_hooks_stay_below_it() -> None:
    hooks, fake = make()
    host = Starlette(routes=[Mount("/ops", app=create_app(SECRET, hooks=hooks))])
    response = get(host, "/ops/runs")
    assert response.status == 401 and b'action="/ops/login"' in response.body
    assert form(host, "/ops/login", f"token={SECRET}".encode()).headers[b"location"] == b"/ops/runs"
    assert call(host, "POST", f"/ops/hooks/{HOOK_TOKEN}", [b"1"]).status == 202  # type: ignore[arg-type]
    assert get(host, "/ops/healthz").status == 200
    assert fake.calls == [(HOOK_TOKEN, 1)]


def test_pages_forbid_framing_and_scripts() -> None:
    response = get(create_app(SECRET, hooks=make()[0]), "/runs")
    policy = response.headers[b"content-security-policy"].decode()
    assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
    assert response.headers[b"x-frame-options"] == b"DENY"


def test_workflows_web_refuses_to_start_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    configure(Settings())
    try:
        assert main(["web", "--port", "8123"]) == 1
    finally:
        configure(None)
    assert "WORKFLOWS_DASHBOARD_TOKEN" in capsys.readouterr().err
