"""Flow control of a sent step: a concurrency slot and a rate token, taken in the worker right
before an attempt runs, held across the fleet in the Store (see docs/flow-control.md).

A step that gets no slot or no token never holds the thread: it stores a ``retry`` timer for
the same attempt (with the run's lease over the wait, one transaction: ``schedule_retry``) and
returns. The timer re-sends the attempt as a possible repeat. The slot is renewed while the
attempt runs and released when it ends, or, for an attempt that timed out while its body runs
on (``overrun``), when that body returns; a holder that died loses it when its lease passes.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from typing import TYPE_CHECKING, Callable, Iterator

from ..model.embed import embed
from ..model.limits import StepLimits, key_value
from ..model.records import StepMessage, TimerKind, TimerRecord
from ..model.registry import StepDef
from ..storage.rules import new_request
from .attempts import retry_timer_id
from .heartbeat import HEARTBEATS
from .overrun import BodyEnd, watching

if TYPE_CHECKING:
    from ..engine import Engine

log = logging.getLogger("workflows.flow")

#: A waiter for a slot tries again after this many sweep intervals, randomised by +-50%.
SLOT_WAIT_SWEEPS = 1.0
#: The shortest wait for a slot, in seconds (a fast sweep in tests must not make waiters spin).
MIN_SLOT_WAIT = 0.2


def holder_of(message: StepMessage) -> str:
    """Who holds a slot: one attempt of one step (or branch) of one run."""
    branch = "" if message.branch is None else message.branch.index
    return f"{message.run_id}#{message.pos}#{branch}#{message.attempt}"


def limit_names(engine: Engine, step: StepDef, limits: StepLimits, args_json: str) -> tuple[str, str]:
    """The names of the step's concurrency limit and rate bucket for these arguments.

    A key is read from the decoded arguments wherever they are kept: a reference to the payload
    bucket is resolved first, as the attempt itself does (the attempt then finds them cached).
    """
    if limits.concurrency_key is None and limits.rate_key is None:
        return f"step:{step.name}", f"rate:{step.name}"  # no key: the arguments are not read
    args, kwargs = engine.payloads.decode(args_json)

    def name(kind: str, key: str | None) -> str:
        base = f"{kind}:{step.name}"
        return base if key is None else f"{base}#{key_value(step.fn, key, args, kwargs)}"

    return name("step", limits.concurrency_key), name("rate", limits.rate_key)


@contextlib.contextmanager
def admission(engine: Engine, step: StepDef, message: StepMessage) -> Iterator[bool]:
    """Admit one attempt of ``step``: yields True while it holds its slot and token, or False when
    it was set to wait (a timer will send it again; the caller returns at once)."""
    limits = step.limits
    if limits is None:
        yield True
        return
    store, holder, lease = engine.store, holder_of(message), engine.settings.lease_seconds
    concurrency_limit, bucket = limit_names(engine, step, limits, message.args)
    # Two copies of one attempt (a message delivered twice) have one holder: each taking of the
    # slot is marked with its own token, so one copy never renews or frees the other's.
    slot, token = None, new_request()
    if limits.concurrency is not None:
        until = engine.now() + lease
        slot = store.acquire_slot(concurrency_limit, limits.concurrency, holder, until, token=token)
        if slot is not None and engine.now() > until - lease / 2:
            # Taking it stalled this worker for half a lease: the slot may have passed to
            # another holder already. Give it back rather than run beside that one.
            store.release_slot(concurrency_limit, slot, holder, token=token)
            slot = None
        if slot is None:
            _wait(engine, step, message, slot_wait(engine), "slot")
            yield False
            return
    if limits.rate is not None:
        try:
            wait = store.take_token(bucket, limits.rate, limits.burst, holder)
        except BaseException:
            if slot is not None:  # not left held until its lease passes
                store.release_slot(concurrency_limit, slot, holder, token=token)
            raise
        if wait > 0:
            if slot is not None:
                store.release_slot(concurrency_limit, slot, holder, token=token)
            _wait(engine, step, message, wait, "rate")
            yield False
            return
    if slot is None:
        yield True
        return
    renewal = contextlib.ExitStack()
    renewal.enter_context(_renewing(engine, concurrency_limit, slot, holder, token))

    def release() -> None:
        renewal.close()
        store.release_slot(concurrency_limit, slot, holder, token=token)

    overruns: list[BodyEnd] = []
    try:
        with watching() as overruns:
            yield True
    finally:
        if overruns:  # a timed-out body runs on: it keeps the slot (renewed) until it returns
            log.info("step %s timed out; %s keeps its slot of %s until its body returns", step.name, holder,
                     concurrency_limit)
            _after_all(overruns, release)
        else:
            release()


def slot_wait(engine: Engine) -> float:
    """How long a step that found no free slot waits before trying again (randomised, so
    waiters do not come back together; see docs/flow-control.md on fairness)."""
    base = max(MIN_SLOT_WAIT, engine.settings.sweep_interval * SLOT_WAIT_SWEEPS)
    return base * random.uniform(0.5, 1.5)


def _wait(engine: Engine, step: StepDef, message: StepMessage, seconds: float, reason: str) -> None:
    """Store the timer that sends this attempt again in ``seconds``, with the run's lease over
    the wait (nothing is stored for a run that has ended)."""
    data = embed({"step": step.name, "attempt": message.attempt, "queue": step.queue, "priority": message.priority,
                  "branch": None if message.branch is None else message.branch.to_dict(), "waiting": reason},
                 message.args)
    timer = TimerRecord(timer_id=retry_timer_id(message, message.attempt), kind=TimerKind.RETRY.value,
                        run_id=message.run_id, due_at=engine.now() + seconds, pos=message.pos, data=data)
    log.debug("step %s of run %s at %d waits %.2fs for a %s", step.name, message.run_id, message.pos, seconds, reason)
    engine.store.schedule_retry(timer, seconds)


def _after_all(ends: list[BodyEnd], action: Callable[[], None]) -> None:
    """Call ``action`` once every body of ``ends`` has returned (on the thread of the last one)."""
    left = [len(ends)]
    lock = threading.Lock()

    def one_ended() -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            action()

    for end in ends:
        end.then(one_ended)


def _renewing(engine: Engine, limit: str, slot: int, holder: str,
              token: str) -> contextlib.AbstractContextManager[None]:
    """Renew the slot's lease (this taking of it) while the attempt runs (as the run's lease is renewed)."""
    lease = engine.settings.lease_seconds

    def renew() -> bool:
        return engine.store.renew_slot(limit, slot, holder, engine.now() + lease, token=token)

    return HEARTBEATS.every(lease / 3, renew, f"slot {slot} of {limit} held by {holder}")
