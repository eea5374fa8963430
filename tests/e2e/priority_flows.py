"""Workflows of the priority end-to-end test: one step on a queue of its own, which logs when
it starts (wall time) to a file shared by the worker processes."""

from __future__ import annotations

import time

from tests.e2e.flow_limit_flows import note
from workflows import step, workflow


@step(queue="prioq", retries=0)
def prio_work(tag: str, label: str) -> str:
    note(tag, "S", label)
    time.sleep(0.25)
    return label


@workflow
def prio_job(tag: str, label: str) -> str:
    return prio_work(tag, label)
