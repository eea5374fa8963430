"""A worker of its own queues whose AWS requests go through the soak's fault front, for the tests of
the soak's findings; runs are started by the command line on those queues."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from typing import Any, Callable, Iterator

from workflows.soak.faults import FaultPlan
from workflows.soak.proxy import FaultFront
from workflows.soak.stack import endpoints


@contextlib.contextmanager
def worker_behind(plan: FaultPlan, aws_env: dict[str, str], settings: Any, spawn: Callable[..., Any],
                  queues: str = "workflows,steps") -> Iterator[tuple[str, Any]]:
    """Start a threads worker on fresh queues behind a front that ``plan`` drives; yield the queue
    prefix and the worker (``tests.conftest.Proc``)."""
    from persistence.provision import create_queues

    prefix = f"f{uuid.uuid4().hex[:6]}-"
    extra = [q for q in queues.split(",") if q not in ("workflows", "steps")]
    create_queues(settings.with_(queue_prefix=prefix), extra)
    front = FaultFront(aws_env["AWS_ENDPOINT_URL"], plan).start()
    try:
        worker = spawn("worker", "--pool", "threads", "-Q", queues,
                       env={**endpoints(front.url), "WORKFLOWS_QUEUE_PREFIX": prefix})
        worker.wait_ready()
        yield prefix, worker
    finally:
        front.stop()


def finished(worker: Any, task_id: str) -> int:
    """How many times the worker's log says task ``task_id`` succeeded."""
    return str(worker.output()).count(f"[{task_id}] succeeded")


def start_run(prefix: str, workflow: str, args: list[Any]) -> str:
    """Start a run on the queues of ``prefix`` (``workflows runs start``); its id."""
    started = subprocess.run([sys.executable, "-m", "workflows", "runs", "start", workflow, "--args", json.dumps(args)],
                             env={**os.environ, "WORKFLOWS_QUEUE_PREFIX": prefix}, capture_output=True, text=True,
                             timeout=60)
    assert started.returncode == 0, started.stderr
    return started.stdout.split()[-1]
