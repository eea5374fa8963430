"""A dotted workflow and step name run on real workers, and a worker whose AWS secret holds URL
characters (``/``, ``+``, ``=``) connects to SQS and never shows the secret."""

from __future__ import annotations

import pytest

from tests.e2e import name_flows
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

#: Its pieces hold letters no id or hex digest has: "d=e" was found in "run_id=ed4c..." of a log line.
SECRET = "qk/x+yz=wv/s"


def test_dotted_names_run_on_a_worker_whose_secret_holds_url_characters(cluster, spawn) -> None:
    billing = spawn("worker", "-Q", "billing", "-c", "2", env={"AWS_SECRET_ACCESS_KEY": SECRET})
    run = name_flows.invoice.start(7)
    result = run.result(timeout=90)
    assert result["charged"] == 7 and result["worker_pid"] == billing.pid
    assert [s["name"] for s in run.steps()] == ["billing.charge"]
    assert run.status() == "completed"
    log = wait_for(lambda: ":**@" in billing.output() and billing.output(), 10, what="the startup banner is written")
    assert "billing" in log and ":**@" in log  # the startup banner shows the broker, secret masked
    for piece in (SECRET, "qk/x", "x+yz", "yz=wv", "wv/s", "qk%2Fx"):
        assert piece not in log, f"{piece!r} in the worker's output"
    assert "SyntaxError" not in cluster["worker"].output()
