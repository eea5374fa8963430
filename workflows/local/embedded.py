"""An embedded stack in one process: local AWS emulator, a worker thread and the beat sweep.

Used by ``workflows demo`` and by the examples::

    with embedded_stack():
        print(my_workflow.start(...).result(timeout=60))
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
import uuid
from typing import Iterator


@contextlib.contextmanager
def embedded_stack(sweep_interval: float = 0.25) -> Iterator[None]:
    """Run everything a deployment needs, in this process, until the block ends."""
    from .server import LocalAWS

    with LocalAWS() as aws:
        session = uuid.uuid4().hex[:6]
        os.environ.update(aws.environ())
        os.environ.update({"WORKFLOWS_TABLE_PREFIX": f"local{session}-", "WORKFLOWS_QUEUE_PREFIX": f"local{session}-",
                           "WORKFLOWS_SWEEP_INTERVAL": str(sweep_interval), "WORKFLOWS_POLL_WAIT_SECONDS": "1"})
        if not os.environ.get("WORKFLOWS_HOOK_SECRET"):  # one process, one key: its hooks live as long as it
            os.environ["WORKFLOWS_HOOK_SECRET"] = secrets.token_urlsafe(32)
        from ..settings import Settings, configure

        configure(Settings.from_env())
        with _worker_and_sweep():
            yield


@contextlib.contextmanager
def _worker_and_sweep() -> Iterator[None]:
    from celery.contrib.testing.worker import start_worker

    from beat.scheduler import tick_once
    from persistence.provision import create_queues, create_tables

    from ..celery.app import app, worker_queues
    from ..settings import get_settings

    settings = get_settings()
    create_tables(settings)
    create_queues(settings, worker_queues())
    stop = threading.Event()

    def sweep() -> None:
        while not stop.wait(settings.sweep_interval):
            tick_once()

    sweeper = threading.Thread(target=sweep, name="beat-sweep", daemon=True)
    with start_worker(app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING",
                      queues=worker_queues(), shutdown_timeout=10):
        sweeper.start()
        try:
            yield
        finally:
            stop.set()
