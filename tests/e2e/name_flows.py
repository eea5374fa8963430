"""A workflow and a step with dotted names, the step on a queue of its own (``billing``); workers import
this module by name."""

from __future__ import annotations

import os

from workflows import step, workflow


@step(name="billing.charge", queue="billing")
def charge(amount: int) -> dict[str, object]:
    """Runs on the worker consuming ``billing`` (the test starts it with a secret full of URL characters)."""
    return {"charged": amount, "worker_pid": os.getpid()}


@workflow(name="billing.invoice")
def invoice(amount: int) -> dict[str, object]:
    return charge(amount)
