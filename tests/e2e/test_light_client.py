"""A process that only starts runs (a web app, a script) stays light: ``start()`` by name
loads neither Celery's worker machinery nor the modules of ``WORKFLOWS_IMPORTS``, and
the run it starts is executed by the session's worker."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from workflows import get_run

pytestmark = pytest.mark.e2e

CLIENT = """
import json, sys
from workflows import workflow
from workflows.client import start

@workflow(name="sequence")          # the caller knows the workflow by name only
def sequence(n: int) -> int: ...

run = start("sequence", 3)
print(json.dumps({"run_id": run.run_id, "modules": sorted(sys.modules)}))
"""


def test_start_from_a_plain_process_loads_no_worker_machinery(cluster, proc_env) -> None:  # type: ignore[no-untyped-def]
    out = subprocess.run([sys.executable, "-c", CLIENT], cwd=ROOT, env=proc_env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.splitlines()[-1])
    modules = set(report["modules"])
    # A Celery app object itself loads celery.worker.worker; the consumer, the pools and the
    # worker program are what a worker adds.
    heavy = ["celery.worker.consumer", "celery.concurrency.thread", "celery.concurrency.prefork", "celery.apps.worker",
             "workflows.celery.deadletter", "workflows.celery.visibility"]
    assert [m for m in heavy if m in modules] == []
    user_modules = proc_env["WORKFLOWS_IMPORTS"].split(",")
    assert [m for m in user_modules if m in modules] == []
    assert "workflows.celery.tasks" not in modules and "workflows.celery.app" not in modules
    assert get_run(report["run_id"]).result(timeout=60) == 3  # 0 + 1 + 2
