"""The dashboard's /metrics: behind the credential, off unless metrics are on."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Iterator

import pytest

from tests.serving import serve
from workflows.settings import Settings, configure, get_settings
from workflows.web import create_app

TOKEN = "metrics-test-token-0123456789"


@pytest.fixture()
def metrics_on() -> Iterator[None]:
    before = get_settings()
    configure(Settings(metrics=True))
    try:
        yield
    finally:
        configure(before)


def get(port: int, token: str | None = None) -> tuple[int, str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers),
                                    timeout=10) as response:
            return response.status, response.headers["content-type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["content-type"], ""


def test_metrics_need_the_credential(metrics_on: None) -> None:
    from workflows.observe.metrics import RUNS_ENDED

    RUNS_ENDED.labels("web_metrics_flow", "completed").inc()
    with serve(create_app(token=TOKEN)) as (_, port):
        assert get(port)[0] == 401
        assert get(port, "wrong-token-0123456789")[0] == 401
        status, content_type, body = get(port, TOKEN)
    assert status == 200 and content_type.startswith("text/plain")
    assert 'workflows_runs_ended_total{status="completed",workflow="web_metrics_flow"}' in body


def test_metrics_are_off_by_default() -> None:
    with serve(create_app(token=TOKEN)) as (_, port):
        assert get(port, TOKEN)[0] == 404
