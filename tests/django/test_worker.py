"""The example's workflow runs in a Celery worker started the Django way, ``celery -A shop_site worker``
(with ``DJANGO_SETTINGS_MODULE`` set, Celery's Django fix-up calls ``django.setup()`` before the
project's modules are imported), beside ``celery -A shop_site beat -S beat.scheduler:WorkflowScheduler``.
Its steps read and update the order through the ORM, in the worker's pool processes (prefork,
Celery's default), in the project's SQLite file.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.django.conftest import EXAMPLE, manage, order_row, shell
from tests.processes import stop
from tests.waiting import wait_for
from workflows import get_run

pytestmark = pytest.mark.e2e


def celery(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as handle:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "shop_site", *args], cwd=EXAMPLE, env=env,
                                stdout=handle, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def shop_worker(shop_env, tmp_path_factory) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """The project's worker (prefork, 2 children) and beat; yields the worker's log file."""
    logs = tmp_path_factory.mktemp("shop-procs")
    beat = celery(["beat", "-S", "beat.scheduler:WorkflowScheduler", "--loglevel", "INFO",
                   "-s", str(logs / "beat-schedule")], shop_env, logs / "beat.log")
    worker = celery(["worker", "-c", "2", "--loglevel", "INFO"], shop_env, logs / "worker.log")
    try:
        log = logs / "worker.log"
        wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 90, poll=0.2,
                 what="the project's worker is ready")
        assert worker.poll() is None, log.read_text()
        assert beat.poll() is None, (logs / "beat.log").read_text()
        yield log
    finally:
        stop([worker, beat])


def test_the_steps_update_the_order_through_the_orm_in_the_worker(shop_worker, shop_env) -> None:  # type: ignore[no-untyped-def]
    order_id = str(uuid.uuid4())
    out = shell(shop_env, f"""
from django.test import Client
answer = Client().post("/orders", {{"id": {order_id!r}, "sku": "lamp", "cents": 4200}},
                       content_type="application/json")
print(answer.json()["run"])
""")
    run = get_run(out)
    receipt = f"rcpt-{uuid.UUID(order_id).hex[:8]}-4200"
    assert run.result(timeout=90) == {"order": order_id, "receipt": receipt, "status": "shipped"}
    assert [s["name"] for s in run.steps()] == ["charge_order", "ship_order"]
    row = order_row(shop_env, order_id)
    assert row is not None and (row["status"], row["receipt"]) == ("shipped", receipt)
    # The worker had the project's app, its steps and its Django fix-up.
    text = shop_worker.read_text()
    assert "Task workflows.resume[" in text and "workflows.step.charge_order" in text, text[-3000:]
    # The management command lists the run with the order's status, read from the database.
    listed = manage(shop_env, "runs", "--order", order_id).strip().splitlines()
    assert len(listed) == 1 and listed[0].split() == [run.run_id, "completed", "order", order_id, "shipped"]
