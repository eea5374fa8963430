"""Deterministic interleaving: simulated tasks run as greenlets, one at a time, switching
only at port calls, in the order a seeded scheduler picks.

Greenlets rather than threads: a switch costs a microsecond instead of a thread
hand-off, and nothing runs unless the scheduler switches to it. Engine state that
Python keeps per thread (the in-place session) is kept per actor instead (:class:`ActorLocalInPlace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from greenlet import getcurrent, greenlet

from ..core.replay.in_place import InPlace


class Crash(BaseException):
    """The simulated process died here (never caught by engine code)."""


@dataclass(frozen=True)
class Work:
    """What an actor works on: a run (``""``: none), the message it took, and when it began."""

    run_id: str = ""
    envelope: Any = None
    started: float = 0.0


IDLE = Work()


class Actor:
    """One simulated activity (a task, a beat tick, a client call) of one process."""

    def __init__(self, name: str, process: str, body: Callable[[], None], baton: Baton, work: Work = IDLE) -> None:
        self.name, self.process, self.body, self.baton = name, process, body, baton
        self.run_id, self.envelope, self.started = work.run_id, work.envelope, work.started
        started = work.started
        self.done = False
        self.crashed = False
        self.error: BaseException | None = None
        self.kill = False
        self.waiting_at = "start"
        self.last_call = started  # simulated time this actor last got control back at a port call
        self.longest_gap = 0.0  # the longest simulated time between two of its port calls
        self.ready_at = started  # a step body it runs keeps it busy until then (simulated time)
        self.greenlet = greenlet(self._run)

    def _run(self) -> None:
        try:
            if self.kill:
                raise Crash()
            self.body()
        except Crash:
            self.crashed = True
        except Exception as exc:  # a task that raised: the broker acks it (Celery semantics)
            self.error = exc
        finally:
            self.done = True

    def step(self) -> None:
        """Let the actor run until its next port call (or its end)."""
        self.baton.current = self
        try:
            self.greenlet.switch()
        finally:
            self.baton.current = None


class Baton:
    """Hands control between the scheduler and one actor at a time."""

    def __init__(self) -> None:
        self.current: Actor | None = None

    def actor(self) -> Actor | None:
        """The actor running now (None for the scheduler or a thread the simulator does not drive)."""
        current = self.current
        return current if current is not None and current.greenlet is getcurrent() else None

    def pause(self, where: str) -> None:
        """Called by an actor at a port call: give control back until scheduled again."""
        actor = self.actor()
        if actor is None:
            return  # a thread the simulator does not schedule (e.g. a lease heartbeat)
        actor.waiting_at = where
        actor.greenlet.parent.switch()
        if actor.kill:
            raise Crash()


class ActorLocalInPlace:
    """The in-place state of a simulated process, one per actor (actors share a thread)."""

    def __init__(self) -> None:
        self._per_actor: dict[Any, InPlace] = {}

    def _own(self) -> InPlace:
        return self._per_actor.setdefault(getcurrent(), InPlace())

    def session(self, seconds: float) -> Any:
        return self._own().session(seconds)

    def admits(self, *args: Any) -> bool:
        return self._own().admits(*args)
