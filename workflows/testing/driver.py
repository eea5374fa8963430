"""What workers and beat would do, done in process: deliver queued messages, fire what is due,
and move the virtual clock to the next due moment."""

from __future__ import annotations

import functools

from workflows.core.background.firing import fire_due_schedules

from ..batches import drive_due_batches
from ..core.background.sweeper import fire_due_timers, reconcile
from ..core.engine import Engine
from ..core.execution.overrun import owned_by, wait_for_overruns
from ..core.model.records import StepMessage
from ..core.ops.steps import execute_step, run_worker_task
from ..core.storage.retention import keep_alive_period, keep_runs_alive, sweep_retention
from ..errors import Stalled
from ..memory import ManualClock, MemoryStore
from ..memory.expiry import expire_items
from .transport import Message, QueueTransport

#: Rounds of delivering and firing at one moment before the kit gives up (a run that never settles).
MAX_ROUNDS = 10_000
#: Real seconds the kit waits for a timed-out step body that runs on before it moves its clock.
OVERRUN_WAIT = 60.0


class Driver:
    """Delivers the messages of one engine on the in-memory ports and fires its timers.

    With ``deleting`` (the default), time does to the stores what AWS does: each move of the
    clock deletes the items whose TTL passed and the objects the payload bucket's lifecycle
    rule expires, at their earliest moment (docs/retention.md).
    """

    def __init__(self, engine: Engine, store: MemoryStore, transport: QueueTransport, clock: ManualClock,
                 *, deleting: bool = True) -> None:
        self.engine, self.store, self.transport, self.clock = engine, store, transport, clock
        self.deleting = deleting

    def deliver(self) -> int:
        """Deliver every queued message (and those they queue), oldest first; return how many."""
        delivered = 0
        while (message := self.transport.take()) is not None:
            delivered += 1
            if delivered > MAX_ROUNDS:
                raise Stalled(f"more than {MAX_ROUNDS} messages at one moment: a run never suspends")
            with owned_by(self):  # a body that outlives its attempt is this driver's to wait for
                run_worker_task(self.engine, functools.partial(self._run_task, message))
        return delivered

    def _run_task(self, message: Message) -> None:
        """The body of the worker task that a message starts."""
        if isinstance(message, StepMessage):
            execute_step(self.engine, message, redelivered=message.resent)
        else:
            self.engine.receive_resume(message, first_delivery=True)

    def tick(self) -> int:
        """One beat tick at the current time: due timers, due schedules, expired leases, a chunk of
        each due batch, and (in a deleting world) the retention sweep, which stamps ended runs'
        items with their TTL."""
        busy = fire_due_timers(self.engine) + fire_due_schedules(self.engine) + reconcile(self.engine)
        busy += drive_due_batches(self.engine)
        if self.deleting:
            sweep_retention(self.engine)
        return busy

    def settle(self) -> None:
        """Deliver and fire until nothing is queued and nothing is due now."""
        for _ in range(MAX_ROUNDS):
            if not self.deliver() and not self.tick() and not self.transport.queue:
                return
        raise Stalled(f"nothing settled after {MAX_ROUNDS} rounds at one moment")

    def next_due(self, *, schedules: bool) -> float | None:
        """When the next timer (and schedule, if asked) comes due; a timer still due now that
        did not fire is an error (its firing fails: see the log)."""
        due = self.store.next_due_at(schedules=schedules)
        if due is not None and due <= self.clock.now():
            raise Stalled("a timer or schedule stays due after it was fired: its firing failed (see the log)")
        return due

    def jump_to(self, moment: float) -> None:
        """Move the virtual clock forward to ``moment`` (never back). In a deleting world, beat's
        keep-alive pass runs on the way as often as beat starts one (live runs' items are renewed
        before TTL deletes them, as on AWS). A step body that timed out and runs on in real time
        returns first: virtual time does not pass while a body runs, so the concurrency slot
        it keeps is not taken from it (``core.execution.overrun``)."""
        if moment > self.clock.now() and not wait_for_overruns(self, OVERRUN_WAIT):
            raise Stalled(f"a timed-out step body still runs after {OVERRUN_WAIT:g}s of real time: the kit does not "
                          "move its clock while one runs (it keeps its concurrency slot until it returns)")
        period = keep_alive_period(self.engine.settings)
        while moment > self.clock.now():
            step = min(moment, self.clock.now() + period) if self.deleting else moment
            self.clock.advance(step - self.clock.now())
            if self.deleting:
                if step < moment:
                    keep_runs_alive(self.engine)
                self.delete_expired()

    def delete_expired(self) -> None:
        """Delete what TTL and the lifecycle rule would have deleted by now."""
        now = self.clock.now()
        expire_items(self.store, now)
        self.store.blob_objects.expire(now, self.engine.settings.payload_expiry)
