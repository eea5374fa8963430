"""Workflows and a client for tests/deploy/test_iam_enforced.py, each process under its own IAM policy.

``python -m tests.e2e.iam_flows journey HOOK_URL SIZE`` is the client: it starts a
:func:`journey` run, resumes its hook by POSTing to the hook endpoint, and prints the
run's id and result as one JSON line. ``python -m tests.e2e.iam_flows keep-alive RUN_ID``,
under beat's keys, renews a live run's items as beat's keep-alive pass does.
``python -m tests.e2e.iam_flows late-hook RUN_ID HOOK_URL`` POSTs to the hook a run published,
once the run ended, and prints the endpoint's answer.
"""

from __future__ import annotations

import http.client
import json
import sys
import urllib.parse
from typing import Any

from workflows import hook, on_update, parallel, sleep, step, wait_for_signal, workflow
from workflows.settings import Settings, configure

from .hook_flows import publish_token, published_token


@step
def iam_grow(blob: str) -> str:
    """Double a text: with a low payload threshold, its argument and result go to S3."""
    return blob + blob


@step
def iam_length(text: str) -> int:
    """A fan-out's branch."""
    return len(text)


@workflow
def journey(blob: str) -> dict[str, Any]:
    """A step, a durable sleep, a hook resumed over HTTP, then a fan-out (its messages sent in a batch)."""
    doubled = iam_grow(blob)
    sleep(1)
    h = hook("approve", timeout=120)
    publish_token(h.token)
    decision = h.wait()
    lengths = parallel(*(iam_length.s("x" * n) for n in range(1, 13)))
    return {"size": len(doubled), "decision": decision, "lengths": lengths}


@workflow
def counter() -> int:
    """Takes updates (a request stored in the signals table, its answer in the run's history) until stopped."""
    total = [0]

    def add(n: int) -> int:
        total[0] += n
        return total[0]

    on_update("add", add)
    wait_for_signal("stop", timeout=120)
    return total[0]


@step
def tick() -> str:
    return "tick"


@workflow
def scheduled() -> str:
    """What the test's schedule starts."""
    return tick()


def _post(url: str, body: Any) -> int:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=15)
    try:
        conn.request("POST", parts.path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def run_journey(hook_url: str, size: int) -> dict[str, Any]:
    """Start a journey, resume its hook through the endpoint at ``hook_url``, wait for its result."""
    run = journey.start("x" * size)
    token = published_token(run, timeout=60)
    status = _post(f"{hook_url}/hooks/{token}", {"approved": True})
    if status != 202:
        raise RuntimeError(f"the hook endpoint answered {status}")
    return {"run_id": run.run_id, "result": run.result(timeout=60)}


def late_hook(run_id: str, hook_url: str) -> dict[str, Any]:
    """Resume the hook ``run_id`` published after the run ended: the endpoint's HTTP status."""
    from workflows.client import RunHandle

    token = published_token(RunHandle(run_id), timeout=30)
    return {"status": _post(f"{hook_url}/hooks/{token}", {"approved": True})}


def keep_alive(run_id: str) -> dict[str, Any]:
    """What beat's keep-alive pass does to one live run, made due now: its history's TTLs after."""
    from workflows.core.storage.retention import write_expiry
    from workflows.runtime import get_engine

    engine = get_engine()
    now = engine.now()
    until = (write_expiry(now, engine.settings) or 0) + 3600  # later than any TTL written so far
    kept = engine.store.keep_run_alive(run_id, now + 1, until)
    return {"kept": kept, "until": until,
            "ttls": sorted({e.get("retain_until") for e in engine.store.query_items("read", "history", run_id)})}


if __name__ == "__main__":
    configure(Settings.from_env())
    if sys.argv[1] == "keep-alive":
        print(json.dumps(keep_alive(sys.argv[2])), flush=True)
    elif sys.argv[1] == "late-hook":
        print(json.dumps(late_hook(sys.argv[2], sys.argv[3])), flush=True)
    else:
        print(json.dumps(run_journey(sys.argv[2], int(sys.argv[3]))), flush=True)
