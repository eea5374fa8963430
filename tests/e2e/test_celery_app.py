"""The example project (examples/celery_app): workflows installed into an existing Celery app.

Its worker is started as its users start it, ``celery -A proj worker``, with the threads
and the prefork pools; its beat is ``celery -A proj beat -S beat.scheduler:WorkflowScheduler``.
The project has a queue prefix of its own, so the session's workers never see its messages.
Runs are started from processes that import the project (as a web process would) and from
inside one of its tasks; this process only reads their outcome from DynamoDB.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import ROOT
from tests.processes import stop
from tests.waiting import wait_for
from workflows import get_run
from workflows.runtime import build_engine, use_engine

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "examples" / "celery_app"


@pytest.fixture(scope="module")
def proj_settings(settings):  # type: ignore[no-untyped-def]
    """The project's own queues and tables: the test cluster's beat, sweeping shared tables,
    would send the project's timers and recoveries to a worker that knows none of its code."""
    from persistence.provision import create_queues, create_tables

    proj = settings.with_(queue_prefix=settings.queue_prefix + "proj-", table_prefix=settings.table_prefix + "proj-")
    create_tables(proj)
    create_queues(proj, ["default", "payments", "emails"])
    return proj


@pytest.fixture(autouse=True)
def proj_engine(proj_settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """This process reads the project's runs from its tables."""
    with use_engine(build_engine(proj_settings)):
        yield


@pytest.fixture(scope="module")
def proj_env(proj_settings, proc_env, tmp_path_factory) -> dict[str, str]:  # type: ignore[no-untyped-def]
    prefix = proj_settings.queue_prefix
    outbox = tmp_path_factory.mktemp("proj-outbox")
    return {**proc_env, "WORKFLOWS_QUEUE_PREFIX": prefix, "WORKFLOWS_TABLE_PREFIX": proj_settings.table_prefix,
            "PROJ_QUEUE_PREFIX": prefix, "PROJ_BROKER_URL": proj_settings.broker_url(), "PROJ_OUTBOX": str(outbox),
            "WORKFLOWS_IMPORTS": "proj.flows",
            "PYTHONPATH": f"{EXAMPLE}:{ROOT}"}


def celery(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = open(log, "ab")
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "proj", *args], cwd=EXAMPLE, env=env,
                            stdout=handle, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def proj_beat(proj_env, tmp_path_factory) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    log = tmp_path_factory.mktemp("proj-beat") / "beat.log"
    beat = celery(["beat", "-S", "beat.scheduler:WorkflowScheduler", "--loglevel", "INFO",
                   "-s", str(log.with_name("beat-schedule"))], proj_env, log)
    yield beat
    stop([beat])


@pytest.fixture(scope="module", params=["threads", "prefork"])
def proj_worker(request, proj_env, proj_beat, tmp_path_factory) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """A worker of the project with the given pool; yields its log file."""
    log = tmp_path_factory.mktemp(f"proj-{request.param}") / "worker.log"
    worker = celery(["worker", "-P", request.param, "-c", "2", "--loglevel", "INFO"], proj_env, log)
    wait_for(lambda: "ready." in log.read_text() or worker.poll() is not None, 60, poll=0.2,
             what="the project's worker is ready")
    assert worker.poll() is None, log.read_text()
    assert proj_beat.poll() is None
    yield log
    stop([worker])


def in_project(code: str, env: dict[str, str]) -> str:
    """Run ``code`` in a fresh process that imports the project; return its last output line."""
    out = subprocess.run([sys.executable, "-c", code], cwd=EXAMPLE, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def wait_file(path: Path, timeout: float = 60) -> str:
    return wait_for(lambda: path.exists() and path.read_text(), timeout, poll=0.1, what=f"{path.name} is written")


def test_existing_tasks_run_as_steps_under_their_own_names(proj_worker, proj_env) -> None:  # type: ignore[no-untyped-def]
    order_id = f"o-{proj_worker.parent.name[-6:]}"
    run_id = in_project(f"from proj.flows import checkout\nprint(checkout.start({order_id!r}, 1999).run_id)",
                        proj_env)
    run = get_run(run_id)
    assert run.result(timeout=90) == {
        "receipt": f"rcpt-{order_id}-1999",
        "reservations": [{"sku": "A", "qty": 1, "task": "proj.tasks.reserve_stock"},
                         {"sku": "B", "qty": 2, "task": "proj.tasks.reserve_stock"}]}
    assert [s["name"] for s in run.steps()] == ["proj.tasks.charge_card", "proj.tasks.send_receipt", "total",
                                                "proj.tasks.notify"]
    outbox = Path(proj_env["PROJ_OUTBOX"])
    assert (outbox / f"receipt-{order_id}").read_text() == f"rcpt-{order_id}-1999"
    assert (outbox / f"notify-{order_id}").read_text() == "3 items"
    # Fan-out branches always go out as messages (other steps may run in place): Celery saw
    # them under the task's own name.
    assert "Task proj.tasks.reserve_stock[" in proj_worker.read_text()


def test_a_step_from_a_task_retries_with_the_step_policy(proj_worker, proj_env) -> None:  # type: ignore[no-untyped-def]
    order_id = f"o-{proj_worker.parent.name[-6:]}-flaky"
    run_id = in_project(f"from proj.flows import checkout\nprint(checkout.start({order_id!r}, 5).run_id)",
                        proj_env)
    run = get_run(run_id)
    assert run.result(timeout=90)["receipt"] == f"rcpt-{order_id}-5"
    charge = run.steps()[0]
    assert charge["name"] == "proj.tasks.charge_card" and charge["attempts"] == 2


def test_a_task_starts_a_run_and_plain_tasks_run_beside_steps(proj_worker, proj_env) -> None:  # type: ignore[no-untyped-def]
    order_id = f"t-{proj_worker.parent.name[-6:]}"
    in_project("from proj import tasks\n"
               f"tasks.place_order.delay({order_id!r}, 700)\n"
               f"tasks.audit.delay({order_id!r})\n"
               f"tasks.notify.delay({order_id!r}, 'called as a task')\nprint('sent')", proj_env)
    outbox = Path(proj_env["PROJ_OUTBOX"])
    run = get_run(wait_file(outbox / f"run-{order_id}"))
    assert run.result(timeout=90)["receipt"] == f"rcpt-{order_id}-700"
    assert wait_file(outbox / f"audit-{order_id}") == order_id
    # The task declared as a step is still an ordinary task when called as one (it ran once
    # that way, and once as the run's last step: whichever came last wrote the file).
    assert wait_file(outbox / f"notify-{order_id}") in ("called as a task", "3 items")
    assert "Task proj.tasks.audit[" in proj_worker.read_text()
