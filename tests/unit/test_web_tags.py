"""The dashboard's tag filter and a run's tags on its page, over the ASGI app in process."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from tests.unit import tag_flows as flows
from workflows.testing import WorkflowEnv

pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")
TOKEN = secrets.token_urlsafe(24)


def get(app: Any, path: str, query: str = "") -> tuple[int, str]:
    """One GET through the ASGI app with the bearer credential: (status, body)."""
    sent: list[dict[str, Any]] = []
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
             "headers": [(b"host", b"test"), (b"authorization", f"Bearer {TOKEN}".encode())],
             "client": ("127.0.0.1", 1), "server": ("test", 80)}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


def test_the_runs_page_filters_by_tag_and_a_run_shows_its_tags(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    tagged = workflow_env.apply_async(flows.tag_order, ["o-web"], tags={"customer": "c-web"})
    other = workflow_env.start(flows.tag_order, "o-other")
    tagged.result(), other.result()
    status, body = get(app, "/runs", "tag=order%3Do-web")  # tag_order ends with order=... and no customer
    assert status == 200 and tagged.run_id in body and other.run_id not in body
    assert 'name="tag" value="order=o-web"' in body
    status, body = get(app, f"/runs/{tagged.run_id}")
    assert status == 200 and "order=o-web" in body and "stage=paid" in body
    assert "/runs?tag=stage%3Dpaid" in body
    status, body = get(app, "/runs", "tag=novalue")
    assert status == 422 and "InvalidTags" in body
