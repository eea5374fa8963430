"""A run's page renders a history with handled updates (``update`` op records), over the ASGI app in process."""

from __future__ import annotations

import pytest

from tests.testing import update_flows as flows
from tests.unit.test_web_tags import TOKEN, get
from workflows.testing import WorkflowEnv

pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")


def test_the_run_page_shows_a_run_with_updates(workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    app = create_app(TOKEN)
    run = workflow_env.start(flows.echo)
    assert run.update("note", "x") == 1
    workflow_env.signal(run, "go", "yes")
    run.result()
    status, body = get(app, f"/runs/{run.run_id}")
    assert status == 200 and "note" in body


def test_the_run_pages_update_form_sends_an_update_and_shows_the_answer_or_the_error(
        workflow_env: WorkflowEnv, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Signed in with a session (so every form needs its CSRF token): the run page's update form,
    its confirmation (one update id per page: submitting it twice applies the update once), then the
    answer, a refusal, a failure, a payload that is not JSON and a form without its token."""
    import html
    import re
    from urllib.parse import urlencode

    from tests.unit.test_web_auth import SECRET, form, get
    from workflows.web import create_app, updates
    from workflows.web.auth import SESSION_COOKIE

    def update_run(run_id: str, name: str, payload: object, *, update_id: str, timeout: float) -> object:
        return workflow_env.update(run_id, name, payload, update_id=update_id, timeout=timeout)  # the kit drives it

    monkeypatch.setattr(updates, "update_run", update_run)
    app = create_app(SECRET, sessions=workflow_env.store)
    signed_in = form(app, "/login", f"token={SECRET}".encode())
    cookie = signed_in.headers[b"set-cookie"].decode().split(";")[0].split("=", 1)[1]
    run = workflow_env.start(flows.cart, 1)
    workflow_env.driver.settle()
    page = get(app, f"/runs/{run.run_id}", [(b"cookie", f"{SESSION_COOKIE}={cookie}".encode())]).body.decode()
    found = re.search(rf'action="/runs/{run.run_id}/update" class="update">\s*<input type="hidden" name="csrf" '
                      r'value="([^"]+)"', page)
    assert found, page[:2000]
    csrf = html.unescape(found.group(1))
    assert '<textarea name="payload"' in page and "Send update" in page

    def post(**fields: str) -> tuple[int, str]:
        response = form(app, f"/runs/{run.run_id}/update", urlencode(fields).encode(), cookie)
        return response.status, html.unescape(response.body.decode())

    status, confirm = post(name="add", payload='"<b>apple</b>"', csrf=csrf)
    assert status == 200 and f"Send update 'add' to run {run.run_id}?" in confirm
    update_id = re.search(r'name="update_id" value="([0-9a-f]+)"', confirm)
    assert update_id, confirm
    fields = {"name": "add", "payload": '"<b>apple</b>"', "csrf": csrf, "confirm": "yes",
              "update_id": update_id.group(1)}
    for _ in range(2):  # the confirmation submitted twice: one update, one answer
        status, shown = post(**fields)
        assert status == 200 and '<strong id="update-outcome">answered</strong>' in shown
        assert re.search(r'<pre id="update-answer" class="detail">1</pre>', shown), shown
    assert [e.name for e in workflow_env.store.read_history(run.run_id) if e.kind == "update"] == ["add"]
    _, refused = post(name="add", payload='"pear"', csrf=csrf, confirm="yes")
    assert ">refused<" in refused and "the cart is full (1 items)" in refused
    _, failed = post(name="broken", payload="null", csrf=csrf, confirm="yes")
    assert ">failed<" in failed and "RuntimeError: the handler broke" in failed
    status, bad = post(name="add", payload="{nope", csrf=csrf)
    assert status == 422 and "The payload is not valid JSON." in bad
    status, forged = post(**{**fields, "csrf": "forged"})
    assert status == 403 and "did not come from the dashboard" in forged
    workflow_env.signal(run, "checkout")
    assert run.result() == {"items": ["<b>apple</b>"], "total": 5}
    _, ended = post(name="add", payload='"plum"', csrf=csrf, confirm="yes")
    assert ">run ended<" in ended
