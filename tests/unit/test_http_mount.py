"""The hooks app mounted in a Starlette (or FastAPI) app under a prefix, as docs/celery.md shows."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from tests.unit.test_http import TOKEN, assert_no_token, call, make


def host_app():  # type: ignore[no-untyped-def]
    hooks, fake = make()
    app = Starlette(routes=[Route("/orders", lambda request: PlainTextResponse("orders")),
                            Mount("/wf", app=hooks)])
    return app, fake


def test_a_hook_is_resumed_below_the_mount_prefix() -> None:
    app, fake = host_app()
    response = call(app, "POST", f"/wf/hooks/{TOKEN}", [b'{"ok": true}'])
    assert response.status == 202 and response.json() == {"status": "accepted", "run_id": "run-1"}
    assert fake.calls == [(TOKEN, {"ok": True})]
    assert response.scope["path"] == "/wf/hooks/<redacted>"  # what the server's access log sees
    assert_no_token(response)


def test_the_host_keeps_its_own_routes_and_the_mount_answers_its_own_errors() -> None:
    app, fake = host_app()
    assert call(app, "GET", "/orders").body == b"orders"
    assert call(app, "GET", "/wf/healthz").json() == {"status": "ok"}
    assert call(app, "GET", f"/wf/hooks/{TOKEN}").status == 405
    assert fake.calls == []
