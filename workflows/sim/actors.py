"""Deterministic interleaving: simulated tasks run in threads, one at a time, switching
only at port calls, in the order a seeded scheduler picks."""

from __future__ import annotations

import threading
from typing import Callable


class Crash(BaseException):
    """The simulated process died here (never caught by engine code)."""


class Actor:
    """One simulated activity (a task, a beat tick, a client call) of one process."""

    def __init__(self, name: str, process: str, body: Callable[[], None], baton: Baton) -> None:
        self.name, self.process, self.body, self.baton = name, process, body, baton
        self.go = threading.Event()
        self.done = False
        self.crashed = False
        self.error: BaseException | None = None
        self.kill = False
        self.waiting_at = "start"
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"sim-{name}")
        self.thread.start()

    def _run(self) -> None:
        self.baton.bind(self)
        self.go.wait()
        self.go.clear()
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
            self.baton.back.set()

    def step(self) -> None:
        """Let the actor run until its next port call (or its end)."""
        self.baton.back.clear()
        self.baton.current = self
        self.go.set()
        self.baton.back.wait()
        self.baton.current = None


class Baton:
    """Hands control between the scheduler and one actor at a time."""

    def __init__(self) -> None:
        self.back = threading.Event()
        self.current: Actor | None = None
        self._local = threading.local()

    def actor(self) -> Actor | None:
        """The actor whose thread this is (None for the scheduler or a helper thread)."""
        return getattr(self._local, "actor", None)

    def bind(self, actor: Actor) -> None:
        self._local.actor = actor

    def pause(self, where: str) -> None:
        """Called by an actor at a port call: give control back until scheduled again."""
        actor = self.actor()
        if actor is None or actor is not self.current:
            return  # a thread the simulator does not schedule (e.g. a lease heartbeat)
        actor.waiting_at = where
        self.back.set()
        actor.go.wait()
        actor.go.clear()
        if actor.kill:
            raise Crash()
