"""Workflows of the typed-failure tests: steps that raise declared and undeclared exceptions."""

from __future__ import annotations

from typing import Any

import workflows
from workflows import StepFailed, declare_error, step, workflow

#: What each replay of ``fail_caught`` saw (tests reset it).
SEEN: list[Any] = []


@declare_error
class Declined(Exception):
    """A declared error with a custom constructor and an attribute."""

    def __init__(self, reason: str, balance: int) -> None:
        super().__init__(reason)
        self.balance = balance


class TooBig(Declined):
    """A subclass that is not declared itself: rebuilt as Declined."""


class Undeclared(Exception):
    """Never declared: a workflow sees StepFailed."""


class Listed(Exception):
    """Declared by a step's ``errors=``."""


def _charge(kind: str) -> str:
    if kind == "declined":
        raise Declined("card declined", 12)
    if kind == "too_big":
        raise TooBig("amount too big", 5)
    if kind == "chained":
        try:
            {}["missing"]
        except KeyError as exc:
            raise Undeclared("lookup failed") from exc
    if kind == "context":
        try:
            raise ValueError("first")
        except ValueError:
            raise Undeclared("second")  # noqa: B904 - the implicit context is what the test reads
    return "charged"


@step(retries=0)
def fail_charge(kind: str) -> str:
    return _charge(kind)


@step(retries=0, inline=True)
def fail_inline(kind: str) -> str:
    return _charge(kind)


@step(retries=0, errors=[Listed])
def fail_listed() -> None:
    raise Listed("listed on the step")


@workflow
def fail_caught(kind: str) -> dict[str, Any]:
    """Call the step, catch a declared failure by type, and report what was caught."""
    try:
        fail_charge(kind)
    except Declined as exc:
        SEEN.append((type(exc).__name__, exc.args, exc.balance))
        return {"caught": type(exc).__name__, "args": list(exc.args), "balance": exc.balance,
                "cause": type(exc.__cause__).__name__}
    except StepFailed as exc:
        SEEN.append(("StepFailed", exc.type))
        chain = exc.failure.chain if exc.failure is not None else ()
        return {"caught": "StepFailed", "type": exc.type, "chain": [(c.type, c.relation) for c in chain]}
    workflows.sleep(1)
    return {"caught": None}


@workflow
def fail_inline_caught(kind: str) -> str:
    try:
        fail_inline(kind)
    except Declined as exc:
        return f"declined {exc.balance}"
    return "ok"


@workflow
def fail_listed_caught() -> str:
    try:
        fail_listed()
    except Listed as exc:
        return f"caught {exc}"
    return "not raised"


@workflow
def fail_uncaught(kind: str) -> str:
    fail_charge(kind)
    return "ok"


@workflow
def fail_branches() -> list[str]:
    """A fan-out that returns its branches' exceptions: declared ones rebuilt."""
    results = workflows.parallel(fail_charge.s("declined"), fail_charge.s("chained"), fail_charge.s("ok"),
                                 return_exceptions=True)
    return [type(r).__name__ if isinstance(r, BaseException) else r for r in results]


@workflow
def fail_raises_declared(balance: int) -> str:
    """Raises a declared error itself (no step): the run fails typed."""
    raise Declined("over the limit", balance)


@workflow
def fail_parent_of(kind: str) -> dict[str, Any]:
    """Waits for a child that fails; what it caught, and its cause."""
    try:
        fail_uncaught.start(kind).result()
    except workflows.ChildFailed as exc:
        cause = exc.cause
        return {"status": exc.status, "cause": type(cause).__name__ if cause is not None else None,
                "balance": getattr(cause, "balance", None), "type": exc.failure.type if exc.failure else None}
    return {}


@workflow
def fail_race_child(kind: str) -> dict[str, Any]:
    """The same through first_of: the failed child wins the race."""
    try:
        workflows.first_of(fail_uncaught.start(kind), workflows.timer("1h"))
    except workflows.ChildFailed as exc:
        return {"cause": type(exc.cause).__name__ if exc.cause is not None else None}
    return {}
