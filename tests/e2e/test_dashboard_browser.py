"""The dashboard in a real headless Chromium, against the real stack: the moto server, a
worker and beat process, and the dashboard served by uvicorn on a free port.

Screenshots go to tests/artifacts/ (ignored by git); with WORKFLOWS_DOC_SCREENSHOTS=1 the
ones docs/dashboard.md shows are written to docs/img/ too.
"""

from __future__ import annotations

import datetime as dt
import http.client
import json
import os
import secrets
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlencode

import pytest

from tests.conftest import IN_CI
from tests.e2e import dashboard_flows, flows, update_flows
from tests.e2e.flows import counter_dir
from tests.serving import serve
from tests.waiting import wait_for
from workflows import RunStatus, get_schedule
from workflows.runtime import get_engine

uvicorn = pytest.importorskip("uvicorn", reason="SKIPPED LOUDLY: uvicorn is not installed (pip install -e '.[dev]')")
webdriver = pytest.importorskip("selenium.webdriver",
                                reason="SKIPPED LOUDLY: selenium is not installed (pip install -e '.[dev]')")
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
DOC_IMAGES = ROOT / "docs" / "img"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
TOKEN = secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def server(cluster) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The dashboard (with the hook endpoint) served by uvicorn in a thread; its base URL."""
    from workflows.web import create_app

    with serve(create_app(TOKEN)) as (host, port):
        yield f"http://{host}:{port}"


@pytest.fixture(scope="module")
def browser(server: str) -> Iterator[Any]:
    """Headless Chromium driven through the system chromedriver, signed in to the dashboard."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        message = "chromium and chromium-driver are not installed (apt-get install -y chromium chromium-driver)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(f"SKIPPED LOUDLY: {message}")
    profile = tempfile.mkdtemp(prefix="dash-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,1000", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(90)
    try:
        driver.get(f"{server}/login")
        driver.find_element(By.NAME, "token").send_keys(TOKEN)
        submit(driver, "sign-in")
        assert driver.current_url.endswith("/runs"), driver.page_source[:500]
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shot(driver: Any, name: str, doc: bool = False) -> None:
    """Save a screenshot of the whole page (and, on request, the docs' copy)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1280, min(max(height + 40, 600), 3000))
    driver.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    if doc and os.environ.get("WORKFLOWS_DOC_SCREENSHOTS") == "1":
        DOC_IMAGES.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(DOC_IMAGES / f"{name}.png"))


def wait_status(run: Any, *statuses: RunStatus, timeout: float = 120) -> None:
    wait_for(lambda: run.status() in statuses, timeout, poll=0.2, what=f"run {run.run_id} is one of {statuses}")


def gone(element: Any) -> Any:
    """A wait's condition: ``element`` belongs to a page the browser has left. Chromium says so
    either as a stale element or, while the next page loads, as an inspector error."""
    def check(_: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return check


def follow(driver: Any, button: Any) -> None:
    """Click ``button`` (of a form or a link) and wait until the next page has loaded."""
    old = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, 90).until(gone(old))
    WebDriverWait(driver, 90).until(lambda d: d.execute_script("return document.readyState") == "complete")


def submit(driver: Any, element_id: str) -> None:
    """Click a form's button by its id and wait until the next page has loaded."""
    WebDriverWait(driver, 90).until(lambda d: d.find_elements(By.ID, element_id))
    follow(driver, driver.find_element(By.ID, element_id))


def rects(driver: Any, css: str) -> list[Any]:
    return list(driver.find_elements(By.CSS_SELECTOR, f"svg.timeline rect.{css}"))


def request(server: str, method: str, path: str, body: dict[str, str] | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str]:
    """One plain HTTP request (no browser); the status and the body."""
    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=15)
    data = urlencode(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers={"Content-Type": "application/x-www-form-urlencoded",
                                                   **(headers or {})})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    return response.status, text


def test_every_page_and_action_needs_the_credential(server: str, browser: Any) -> None:
    run = flows.sequence.start(2)
    for method, path in (("GET", "/runs"), ("GET", f"/runs/{run.run_id}"), ("GET", "/schedules"),
                         ("POST", f"/runs/{run.run_id}/cancel"), ("GET", "/")):
        status, text = request(server, method, path, {"confirm": "yes"} if method == "POST" else None)
        assert status == 401 and 'name="token"' in text and run.run_id not in text, (method, path)
    wrong = TOKEN[:-1] + ("y" if TOKEN.endswith("x") else "x")  # (1 token in 64 ends with "x")
    status, text = request(server, "POST", "/login", {"token": wrong})
    assert status == 401 and "not the dashboard token" in text
    status, _ = request(server, "GET", "/runs", headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200
    # A signed-in browser session still needs the form's CSRF token for an action.
    cookie = browser.get_cookie("workflows_dashboard")["value"]
    status, text = request(server, "POST", f"/runs/{run.run_id}/cancel", {"confirm": "yes", "csrf": "forged"},
                           headers={"Cookie": f"workflows_dashboard={cookie}"})
    assert status == 403
    assert run.result(timeout=120) == 1
    # A browser without the cookie sees the sign-in form.
    browser.delete_all_cookies()
    try:
        browser.get(f"{server}/runs/{run.run_id}")
        assert browser.find_elements(By.NAME, "token") and run.run_id not in browser.page_source
        shot(browser, "sign-in")
    finally:
        browser.get(f"{server}/login")
        browser.find_element(By.NAME, "token").send_keys(TOKEN)
        submit(browser, "sign-in")


def test_runs_list_and_timelines_of_completed_retried_failed_and_sleeping_runs(server: str, browser: Any) -> None:
    tag, started = f"doomed-{time.time_ns()}", time.time()
    completed, retried = flows.sequence.start(3), flows.retrying.start(f"retry-{time.time_ns()}")
    failed, sleeping = dashboard_flows.doomed.start(tag), flows.sleeper.start(600)
    fanned, parent, parent_of_one = (flows.fan_out.start(3), flows.parent_of_children.start(2),
                                     flows.parent_of_sleeper.start(0.2))
    assert completed.result(timeout=120) == 3
    assert retried.result(timeout=120) == "ok after 2"
    assert fanned.result(timeout=120) == [0, 2, 4]
    assert parent.result(timeout=120) == [0, 2]
    assert parent_of_one.result(timeout=120)["woke_at"] > 0
    wait_status(failed, RunStatus.FAILED)
    wait_status(sleeping, RunStatus.SUSPENDED)

    browser.get(f"{server}/runs")
    listed = {row.get_attribute("data-run-id") for row in browser.find_elements(By.CSS_SELECTOR, "tr.run")}
    assert {completed.run_id, retried.run_id, failed.run_id, sleeping.run_id} <= listed
    browser.get(f"{server}/runs?status=failed")
    failed_rows = {row.get_attribute("data-run-id") for row in browser.find_elements(By.CSS_SELECTOR, "tr.run")}
    assert failed.run_id in failed_rows and completed.run_id not in failed_rows
    minute = dt.datetime.fromtimestamp(started - 60, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
    later = dt.datetime.fromtimestamp(time.time() + 120, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
    browser.get(f"{server}/runs?from={minute}&to={later}")  # a window of its own: counted afresh
    shown = {a.get_attribute("data-status"): a.find_element(By.TAG_NAME, "b").text
             for a in browser.find_elements(By.CSS_SELECTOR, "#counts a")}
    assert int(shown["failed"]) >= 1 and int(shown["completed"]) >= 4 and int(shown["suspended"]) >= 1
    browser.get(f"{server}/runs?from={later}")
    assert not browser.find_elements(By.CSS_SELECTOR, "tr.run")  # nothing created after the window
    shot(browser, "runs")

    browser.get(f"{server}/runs/{completed.run_id}")
    assert len(rects(browser, "attempt")) == 3 and len(rects(browser, "attempt.completed")) == 3

    browser.get(f"{server}/runs/{retried.run_id}")
    assert len(rects(browser, "attempt")) == 3
    assert len(rects(browser, "attempt.failed")) == 2 and len(rects(browser, "attempt.completed")) == 1
    shot(browser, "run-retried", doc=True)

    browser.get(f"{server}/runs/{failed.run_id}")
    assert len(rects(browser, "attempt.failed")) == 3 and not rects(browser, "attempt.completed")
    error = browser.find_element(By.ID, "error").text
    assert "<b>boom</b>" in error  # shown as text, escaped: not a bold element
    assert not browser.find_elements(By.CSS_SELECTOR, "#error b")
    shot(browser, "run-failed")

    browser.get(f"{server}/runs/{sleeping.run_id}")
    assert len(rects(browser, "wait")) == 1 and len(rects(browser, "attempt")) == 1
    assert browser.find_element(By.ID, "run-status").text == "suspended"

    browser.get(f"{server}/runs/{fanned.run_id}")
    assert len(rects(browser, "attempt")) == 3  # one lane per branch
    lanes = [t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.timeline text.lane")]
    assert len([label for label in lanes if label.startswith("#0.")]) == 3
    shot(browser, "run-fan-out")

    browser.get(f"{server}/runs/{parent.run_id}")
    children = [c.run_id for c in parent.children()]
    assert len(children) == 2 and len(rects(browser, "wait")) == 2  # waiting for each child's result
    for child in children:
        assert browser.find_elements(By.CSS_SELECTOR, f'dl.links a[href$="/runs/{child}"]')
    browser.get(f"{server}/runs/{parent_of_one.run_id}")
    [only_child] = [c.run_id for c in parent_of_one.children()]
    assert browser.find_elements(By.CSS_SELECTOR, f'svg.timeline a[href$="/runs/{only_child}"] rect.wait')
    browser.get(f"{server}/runs/{children[0]}")
    assert browser.find_elements(By.CSS_SELECTOR, f'dl.links a[href$="/runs/{parent.run_id}"]')  # back to the parent


def test_cancelling_from_the_page_asks_first_then_cancels(server: str, browser: Any) -> None:
    run = flows.sleeper.start(600)
    wait_status(run, RunStatus.SUSPENDED)
    browser.get(f"{server}/runs/{run.run_id}")
    submit(browser, "cancel")
    assert run.run_id in browser.find_element(By.TAG_NAME, "h1").text  # the confirmation page
    shot(browser, "cancel-confirm")
    assert run.status() == RunStatus.SUSPENDED  # nothing happened yet
    submit(browser, "confirm")
    assert "Cancellation requested" in browser.find_element(By.CLASS_NAME, "notice").text, browser.current_url
    wait_status(run, RunStatus.CANCELLED)
    browser.refresh()
    assert browser.find_element(By.ID, "run-status").text == "cancelled"


def test_a_failed_run_is_rerun_from_the_page_after_a_confirmation(server: str, browser: Any) -> None:
    run = dashboard_flows.doomed.start(f"rerun-{time.time_ns()}")
    wait_status(run, RunStatus.FAILED)
    browser.get(f"{server}/runs/{run.run_id}")
    submit(browser, "rerun")
    submit(browser, "confirm")  # the new run's page, linked to the failed one
    assert run.run_id in browser.find_element(By.ID, "forked-from").text, browser.current_url


def test_a_signal_sent_from_the_page_reaches_the_run(server: str, browser: Any) -> None:
    run = flows.signal_collector.start(1)
    wait_status(run, RunStatus.SUSPENDED)
    browser.get(f"{server}/runs/{run.run_id}")
    browser.find_element(By.CSS_SELECTOR, "form.signal input[name=name]").send_keys("item")
    payload = browser.find_element(By.CSS_SELECTOR, "form.signal textarea[name=payload]")
    payload.clear()
    payload.send_keys('{"sku": "<i>A</i>"}')
    follow(browser, browser.find_element(By.CSS_SELECTOR, "form.signal button"))  # the confirmation page
    assert '{"sku": "<i>A</i>"}' in browser.find_element(By.CSS_SELECTOR, "pre.detail").text
    submit(browser, "confirm")
    assert "Signal sent" in browser.find_element(By.CLASS_NAME, "notice").text
    assert run.result(timeout=120) == [{"sku": "<i>A</i>"}]


def test_the_run_page_lists_the_signals_that_wait_for_the_run(server: str, browser: Any) -> None:
    run = flows.signal_collector.start(2)
    wait_status(run, RunStatus.SUSPENDED)
    run.signal("item", 1)
    wait_for(lambda: any(e.kind == "signal" and e.status == "received" for e in run.history()), 120, poll=0.2,
             what="the first item taken")
    run.signal("later", {"note": "<b>not waited for</b>"})
    browser.get(f"{server}/runs/{run.run_id}")
    rows = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
            for row in browser.find_elements(By.CSS_SELECTOR, "table#inbox tr")[1:]]
    assert [(kind, name) for kind, name, *_ in rows] == [("signal", "later")]  # "item" 1 was taken
    assert json.loads(rows[0][4]) == {"note": "<b>not waited for</b>"}  # shown as text, not HTML
    assert not browser.find_elements(By.CSS_SELECTOR, "table#inbox b")
    run.signal("item", 2)
    assert run.result(timeout=120) == [1, 2]
    browser.refresh()
    assert not browser.find_elements(By.ID, "inbox")  # an ended run waits for nothing


def send_update_from_the_page(browser: Any, server: str, run_id: str, name: str, payload: str) -> None:
    browser.get(f"{server}/runs/{run_id}")
    browser.find_element(By.CSS_SELECTOR, "form.update input[name=name]").send_keys(name)
    box = browser.find_element(By.CSS_SELECTOR, "form.update textarea[name=payload]")
    box.clear()
    box.send_keys(payload)
    follow(browser, browser.find_element(By.CSS_SELECTOR, "form.update button"))  # the confirmation page
    assert payload in browser.find_element(By.CSS_SELECTOR, "pre.detail").text
    submit(browser, "confirm")


def test_an_update_sent_from_the_page_shows_the_runs_answer_and_a_refusal(server: str, browser: Any) -> None:
    run = update_flows.cart.start(0.1)
    wait_status(run, RunStatus.SUSPENDED)  # after its step, waiting for the checkout signal
    send_update_from_the_page(browser, server, run.run_id, "add", '"<b>apple</b>"')
    assert browser.find_element(By.ID, "update-outcome").text == "answered", browser.page_source[:800]
    assert browser.find_element(By.ID, "update-answer").text == "1"
    first_id = browser.find_element(By.ID, "update-id").text
    browser.refresh()  # the browser posts the confirmation again: the same update id, applied once
    assert browser.find_element(By.ID, "update-id").text == first_id
    assert browser.find_element(By.ID, "update-answer").text == "1"
    shot(browser, "update-answer")
    send_update_from_the_page(browser, server, run.run_id, "add", '""')
    assert browser.find_element(By.ID, "update-outcome").text == "refused"
    assert "non-empty string" in browser.find_element(By.ID, "update-answer").text
    run.signal("checkout")
    assert run.result(timeout=120) == {"items": ["<b>apple</b>"], "total": 12}


def test_html_in_a_payload_is_shown_escaped(server: str, browser: Any) -> None:
    text = "<script>document.title='owned'</script><b id=\"injected\">bold</b>"
    run = dashboard_flows.echo.start(text)
    assert run.result(timeout=120) == text
    browser.get(f"{server}/runs/{run.run_id}")
    assert not browser.find_elements(By.ID, "injected")
    assert "owned" not in browser.title
    assert json.dumps(text) in browser.find_element(By.ID, "result").text  # the result is shown as JSON
    assert "&lt;script&gt;" in browser.page_source


def test_no_hook_token_or_nonce_appears_in_the_page(server: str, browser: Any) -> None:
    tag = f"hook-{time.time_ns()}"
    run = dashboard_flows.quiet_approval.start(tag)
    token_file = counter_dir() / f"token-{tag}"
    wait_for(token_file.exists, 120, poll=0.1, what="the run hands over its token")
    token = token_file.read_text()
    wait_status(run, RunStatus.SUSPENDED)
    [hook_record] = [e for e in get_engine().store.read_history(run.run_id) if e.kind == "hook"]
    secrets_of_hook = [token, json.loads(hook_record.data or "{}")["nonce"]]

    browser.get(f"{server}/runs/{run.run_id}")
    assert "approve" in browser.find_element(By.CSS_SELECTOR, "table.hooks").text
    assert not [s for s in secrets_of_hook if s in browser.page_source]
    # The hook endpoint is served by the same app, at its usual path.
    host, port = server.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=15)
    conn.request("POST", f"/hooks/{token}", body=b'{"approved": true}', headers={"Content-Type": "application/json"})
    assert conn.getresponse().status == 202
    conn.close()
    assert run.result(timeout=120) == {"approved": True}
    browser.get(f"{server}/runs/{run.run_id}")
    assert "resumed" in browser.find_element(By.CSS_SELECTOR, "table.hooks").text
    assert not [s for s in secrets_of_hook if s in browser.page_source]
    shot(browser, "run-hook")


def test_schedules_page_pauses_resumes_and_triggers(server: str, browser: Any) -> None:
    from workflows import create_schedule, delete_schedule

    schedule_id = f"dash-{time.time_ns()}"
    create_schedule("scheduled_tick", every="1h", args=[f"tick-{schedule_id}"], schedule_id=schedule_id,
                    overlap="allow_all")
    try:
        def act(label: str) -> None:
            browser.get(f"{server}/schedules")
            row = browser.find_element(By.CSS_SELECTOR, f'tr.schedule[data-schedule-id="{schedule_id}"]')
            [button] = [b for b in row.find_elements(By.TAG_NAME, "button") if b.text == label]
            follow(browser, button)  # the confirmation page
            submit(browser, "confirm")

        browser.get(f"{server}/schedules")
        row = browser.find_element(By.CSS_SELECTOR, f'tr.schedule[data-schedule-id="{schedule_id}"]')
        assert "every 3600s" in row.text and "allow_all" in row.text and row.text.count("Z") >= 3
        shot(browser, "schedules", doc=True)
        act("Pause")
        assert get_schedule(schedule_id).paused
        act("Resume")
        assert not get_schedule(schedule_id).paused
        act("Trigger now")
        assert "a run started" in browser.page_source
        assert get_schedule(schedule_id).fired == 1
    finally:
        delete_schedule(schedule_id)


def test_signing_out_ends_the_session_so_a_copied_cookie_is_refused_by_every_process(server: str,
                                                                                     browser: Any) -> None:
    from workflows.web import create_app

    cookie = {"Cookie": f"workflows_dashboard={browser.get_cookie('workflows_dashboard')['value']}"}
    try:
        with serve(create_app(TOKEN)) as (host, port):  # a second web process on the same tables
            servers = (server, f"http://{host}:{port}")
            for base in servers:
                assert request(base, "GET", "/runs", headers=cookie)[0] == 200
            browser.get(f"{server}/runs")
            follow(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Sign out']"))
            assert browser.find_elements(By.NAME, "token") and browser.get_cookie("workflows_dashboard") is None
            for base in servers:  # the copied cookie stops working at once, in both processes
                status, text = request(base, "GET", "/runs", headers=cookie)
                assert status == 401 and 'name="token"' in text
    finally:
        browser.get(f"{server}/login")
        browser.find_element(By.NAME, "token").send_keys(TOKEN)
        submit(browser, "sign-in")


def test_a_batch_started_from_the_page_cancels_the_runs_its_filter_selects(server: str, browser: Any) -> None:
    from selenium.webdriver.support.ui import Select

    from tests.e2e import batch_flows

    for method, path in (("GET", "/batches"), ("POST", "/batches"), ("GET", "/batches/x"), ("POST", "/batches/x/stop")):
        status, text = request(server, method, path, {"confirm": "yes", "operation": "cancel", "status": "suspended"}
                               if method == "POST" else None)
        assert status == 401 and 'name="token"' in text, (method, path)
    tag = f"page-{time.time_ns()}"
    runs = [batch_flows.waiter.options(tags={"batch": tag}).start(i) for i in range(3)]
    for run in runs:
        wait_status(run, RunStatus.SUSPENDED)
    browser.get(f"{server}/batches")
    Select(browser.find_element(By.ID, "operation")).select_by_value("cancel")
    browser.find_element(By.ID, "tag").send_keys(f"batch={tag}")
    browser.find_element(By.ID, "reason").send_keys("from the page")
    browser.find_element(By.ID, "rate").send_keys("2")
    submit(browser, "start-batch")  # the confirmation page: the filter and the runs it selects
    detail = browser.find_element(By.CSS_SELECTOR, "pre.detail").text
    assert all(run.run_id in detail for run in runs)
    assert f"tag=batch={tag}" in browser.find_element(By.TAG_NAME, "h1").text
    shot(browser, "batch-confirm")
    assert {run.status() for run in runs} == {RunStatus.SUSPENDED}  # nothing happened yet
    submit(browser, "confirm")
    assert "Batch started" in browser.find_element(By.CLASS_NAME, "notice").text

    def completed() -> bool:
        browser.refresh()
        return browser.find_element(By.ID, "state").text == "completed"

    wait_for(completed, 180, poll=0.5, what="the batch to complete")
    counts = [browser.find_element(By.ID, k).text for k in ("selected", "done", "failed", "skipped")]
    assert counts == ["3", "3", "0", "0"]
    shot(browser, "batch", doc=True)
    for run in runs:
        wait_status(run, RunStatus.CANCELLED)
    browser.get(f"{server}/batches")
    assert browser.find_elements(By.CSS_SELECTOR, "tr.batch")


def test_a_batch_is_stopped_from_its_page_after_a_confirmation(server: str, browser: Any) -> None:
    from tests.e2e import batch_flows
    from workflows import RunFilter, batch_cancel, get_batch

    tag = f"stop-{time.time_ns()}"
    runs = [batch_flows.waiter.options(tags={"batch": tag}).start(i) for i in range(4)]
    for run in runs:
        wait_status(run, RunStatus.SUSPENDED)
    batch_id = batch_cancel(RunFilter(tag=f"batch={tag}"), rate=0.1)  # one run every ten seconds
    wait_for(lambda: get_batch(batch_id).done >= 1, 180, poll=0.5, what="the batch's first chunk")
    browser.get(f"{server}/batches/{batch_id}")
    submit(browser, "stop")
    assert batch_id in browser.find_element(By.TAG_NAME, "h1").text  # the confirmation page
    assert get_batch(batch_id).is_live  # nothing happened yet
    submit(browser, "confirm")
    assert "Batch stopped" in browser.find_element(By.CLASS_NAME, "notice").text
    assert browser.find_element(By.ID, "state").text == "stopped" and not browser.find_elements(By.ID, "stop")
    assert get_batch(batch_id).done < len(runs)


def test_the_batches_page_lists_every_batch_kept_a_page_at_a_time(server: str, browser: Any) -> None:
    from workflows.core.model.batches import ENDED_PART, BatchRecord, Selection, new_batch_id
    from workflows.core.model.states import BatchState
    from workflows.core.storage.plans import Put, plan
    from workflows.core.storage.writes.batches import TABLE, batch_item

    store, old = get_engine().store, 1_000_000_000 + time.time_ns() % 10**8 / 1000  # 2001: below every other batch
    mine = []
    for i in range(55):  # ended batches of an old day, stored as a batch's end stores them
        batch = BatchRecord(new_batch_id(old + i), "cancel", Selection(workflow="e2e_pages"),
                            state=BatchState.COMPLETED, created_at=old + i, updated_at=old + i, ended_at=old + i)
        store.commit(plan("put ended batch", Put(TABLE, batch_item(batch, ENDED_PART, "page-test"))))
        mine.append(batch.batch_id)
    browser.get(f"{server}/batches")
    shown, pages = [], 0
    while True:
        pages += 1
        rows = browser.find_elements(By.CSS_SELECTOR, "tr.batch")
        assert len(rows) <= 50
        shown += [row.get_attribute("data-batch-id") for row in rows]
        older = browser.find_elements(By.ID, "older")
        if not older:
            break
        follow(browser, older[0])
        assert browser.find_elements(By.LINK_TEXT, "Newest")
    assert pages >= 2 and len(shown) == len(set(shown)) and shown == sorted(shown, reverse=True)
    assert shown[-55:] == mine[::-1]  # the oldest of all, each once, on the last pages
