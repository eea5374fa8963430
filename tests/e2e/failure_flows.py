"""Workflows of the typed-failure end-to-end test: a sent step raises a declared error after a retry."""

from __future__ import annotations

from typing import Any

from tests.e2e.flows import bump
from workflows import StepFailed, declare_error, sleep, step, workflow


@declare_error
class E2eDeclined(Exception):
    """Declared: rebuilt in the workflow from the JSON the worker recorded."""

    def __init__(self, reason: str, balance: int) -> None:
        super().__init__(reason)
        self.balance = balance


@step(retries=1, retry_delay=0.2)
def e2e_fail_charge(tag: str, kind: str) -> str:
    bump(f"{tag}-{kind}")
    if kind == "declined":
        raise E2eDeclined("card declined", 7)
    try:
        int("not a number")
    except ValueError as exc:
        raise RuntimeError("parse failed") from exc
    return "unreachable"


@workflow
def e2e_fail_caught(tag: str) -> dict[str, Any]:
    """Catch a declared failure by type and an undeclared one as StepFailed; replayed after a sleep."""
    caught: dict[str, Any] = {}
    try:
        e2e_fail_charge(tag, "declined")
    except E2eDeclined as exc:
        caught["declined"] = [type(exc).__name__, str(exc), exc.balance]
    try:
        e2e_fail_charge(tag, "chained")
    except StepFailed as exc:
        chain = exc.failure.chain if exc.failure is not None else ()
        caught["chained"] = [exc.type, [[link.qualname, link.relation] for link in chain]]
    sleep(1)  # the replay after the sleep (in a worker) raises the same types again
    return caught
