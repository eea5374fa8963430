"""The soak's workload: workflows that use every feature; workers import this module
(``WORKFLOWS_IMPORTS=workflows.soak.flows``).

Every step body runs inside :func:`workflows.soak.ledger.executing` under a key unique in its run,
so the check can tell each step call's executions apart. Steps run in every mode: inline
(``soak_inline``), in place or sent as a message (``soak_work``, and ``soak_sent`` on a queue only
some workers consume, so the other workers always send it), as fan-out and race branches.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from workflows import (
    continue_as_new,
    first_of,
    hook,
    on_update,
    parallel,
    signal,
    sleep,
    step,
    timer,
    wait_for_signal,
    workflow,
)

from .ledger import LEDGER_ENV, executing

#: A queue that only some workers consume: the others send its steps as messages.
SENT_QUEUE = "soak-sent"
#: What ``soak_order`` returns for a blob of ``size`` characters.
ORDER_VALUE, ORDER_TRIES = 104, 3
#: The concurrency and the rate of ``soak_limited`` (the check holds the ledger to them).
LIMIT_CONCURRENCY, LIMIT_RATE, LIMIT_BURST = 2, 4.0, 1


def token_dir() -> Path:
    """Where ``soak_publish`` hands hook tokens to the driver: beside the ledger."""
    return Path(os.environ[LEDGER_ENV]).parent / "tokens"


@step(inline=True)
def soak_inline(key: str, value: int) -> int:
    """An inline step: runs inside its run's resume."""
    with executing(key):
        return value + 1


@step
def soak_work(key: str, value: int) -> int:
    """A plain step: in place or sent, as the worker decides."""
    with executing(key):
        return value * 2


@step(queue=SENT_QUEUE)
def soak_sent(key: str, value: int) -> int:
    """A step on a queue some workers do not consume: sent as a message from those."""
    with executing(key):
        return value + 100


@step(retries=4, retry_delay=0.3, backoff=1.5)
def soak_flaky(key: str, failures: int) -> int:
    """Fails its first ``failures`` attempts, then returns the attempt that succeeded."""
    with executing(key) as execution:
        if execution.attempt <= failures:
            raise RuntimeError(f"attempt {execution.attempt} of {key} fails on purpose")
        return execution.attempt


@step
def soak_blob(key: str, size: int) -> str:
    """A result over the payload threshold: it goes to S3."""
    with executing(key):
        return "x" * size


@step
def soak_measure(key: str, blob: str) -> int:
    """An argument over the payload threshold: read back from S3."""
    with executing(key):
        return len(blob)


@step
def soak_slow(key: str, seconds: float) -> float:
    """A step that takes a while (a race's candidate)."""
    with executing(key):
        time.sleep(seconds)
        return seconds


@step
def soak_branch(key: str, i: int) -> int:
    """One branch of a fan-out."""
    with executing(key):
        return i * i


@step(concurrency=LIMIT_CONCURRENCY, rate=f"{LIMIT_RATE:g}/s", burst=LIMIT_BURST, retries=2)
def soak_limited(key: str, seconds: float) -> str:
    """A step under a fleet-wide concurrency limit and rate limit."""
    with executing(key):
        time.sleep(seconds)
        return key


@step
def soak_publish(key: str, token: str) -> None:
    """Hand a hook's token to the outside world (the driver), as a step must."""
    with executing(key) as execution:
        directory = token_dir()
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / execution.run
        path.with_suffix(".tmp").write_text(token)
        path.with_suffix(".tmp").replace(path)


@workflow
def soak_order(tag: str, size: int) -> dict[str, Any]:
    """Steps of every mode, a retried step, a durable sleep and a payload through S3."""
    a = soak_inline("inline", 1)
    b = soak_work("work", a)
    c = soak_sent("sent", b)
    tries = soak_flaky("flaky", ORDER_TRIES - 1)
    sleep(1.5)
    blob = soak_blob("blob", size)
    return {"value": c, "tries": tries, "size": soak_measure("measure", blob)}


@workflow
def soak_mailbox(tag: str, signals: int) -> dict[str, Any]:
    """Takes ``signals`` signals and any number of updates, and returns them all in order."""
    updates: list[Any] = []

    def add(item: Any) -> int:
        updates.append(item)
        return len(updates)

    on_update("add", add)
    items = [wait_for_signal("item") for _ in range(signals)]
    soak_work("after", len(items))
    return {"items": items, "updates": updates}


#: How long an approval's hook waits (seconds). Its token is handed out by a step, which under the
#: soak's kills can take minutes (beat, killed every minute or so, recovers the run that sends it).
APPROVAL_TIMEOUT = 900.0


@workflow
def soak_approval(tag: str) -> dict[str, Any]:
    """Waits for a hook that the driver resumes over HTTP."""
    approval = hook("approve", timeout=APPROVAL_TIMEOUT)
    soak_publish("publish", approval.token)
    return {"payload": approval.wait()}


@workflow
def soak_race(tag: str, work: float) -> dict[str, Any]:
    """The first of a signal, a timer and a step."""
    won = first_of(go=signal("go"), late=timer("40s"), work=soak_slow.s("race", work))
    return {"won": won.key}


@workflow
def soak_fanout(tag: str, width: int) -> int:
    """A fan-out of ``width`` branches and its join."""
    return sum(parallel(*(soak_branch.s(f"branch-{i}", i) for i in range(width))))


@workflow
def soak_limits(tag: str, width: int) -> int:
    """``width`` branches of a step under a concurrency and a rate limit."""
    return len(parallel(*(soak_limited.s(f"limited-{i}", 0.3) for i in range(width))))


@workflow
def soak_chain(tag: str, i: int, last: int) -> int:
    """A continue-as-new chain of ``last + 1`` runs, a step in each."""
    soak_work("link", i)
    if i < last:
        continue_as_new(tag, i + 1, last)
    return i


@workflow
def soak_child(tag: str, seconds: float) -> str:
    """A child: a step, then a sleep."""
    soak_work("child", 1)
    sleep(seconds)
    return tag


@workflow
def soak_parent(tag: str) -> dict[str, Any]:
    """Children under each parent-close policy; the parent waits for one and ends."""
    cancelled = soak_child.options(parent_close_policy="cancel").start(f"{tag}-cancel", 900)
    requested = soak_child.options(parent_close_policy="request_cancel").start(f"{tag}-request", 900)
    abandoned = soak_child.options(parent_close_policy="abandon").start(f"{tag}-abandon", 2)
    waited = soak_child.start(f"{tag}-waited", 1)
    return {"waited": waited.result(), "cancel": cancelled.run_id, "request_cancel": requested.run_id,
            "abandon": abandoned.run_id, "default": waited.run_id}


@workflow
def soak_sleeper(tag: str) -> str:
    """Sleeps for days: only the batch cancel ends it."""
    soak_work("nap", 1)
    sleep("7d")
    return tag


@workflow
def soak_tick(tag: str) -> int:
    """The schedule's workflow."""
    return soak_work("tick", 1)


@workflow
def soak_waiter(tag: str) -> Any:
    """Waits for a signal nobody sends: it must still be waiting at the end."""
    return wait_for_signal("never")
