"""Step bodies that outlive their attempt.

Python cannot stop a thread: a sync body past its ``timeout`` keeps running in the background
while its attempt fails with ``StepTimeout`` (and may be retried). An async body is cancelled,
but it may ignore the cancel. Whoever must not let go of something while the body runs (a
concurrency slot: ``core.execution.flow``) watches the attempt with :func:`watching`; the timeout path
reports each body that runs on with :func:`outlived`, and the watcher acts when the body
really returns (:meth:`BodyEnd.then`).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import weakref
from typing import Callable, Iterator

log = logging.getLogger("workflows.steps")

_watchers: contextvars.ContextVar[list[BodyEnd] | None] = contextvars.ContextVar("workflows_overruns", default=None)
#: The bodies of this process that outlived their attempt and have not returned yet.
_running: weakref.WeakSet[BodyEnd] = weakref.WeakSet()
_returned = threading.Condition()
#: Who ran the attempt whose body outlives it (the testing kit's driver marks its deliveries).
_owner: contextvars.ContextVar[object | None] = contextvars.ContextVar("workflows_overrun_owner", default=None)


class BodyEnd:
    """The end of one body that outlived its attempt: set once, by the body's own thread or task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ended = False
        self.owner: object | None = None  # see ``owned_by``
        self._callbacks: list[Callable[[], None]] = []

    @property
    def ended(self) -> bool:
        """Whether the body has returned (or raised)."""
        with self._lock:
            return self._ended

    def finish(self) -> None:
        """The body returned: call every callback (on this thread), once."""
        with self._lock:
            if self._ended:
                return
            self._ended, callbacks, self._callbacks = True, self._callbacks, []
        with _returned:
            _running.discard(self)
            _returned.notify_all()
        for callback in callbacks:
            _call(callback)

    def then(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the body returns: at once (on this thread) if it has."""
        with self._lock:
            if not self._ended:
                self._callbacks.append(callback)
                return
        _call(callback)


@contextlib.contextmanager
def watching() -> Iterator[list[BodyEnd]]:
    """Collect the bodies of attempts run in the block that outlive their attempt."""
    found: list[BodyEnd] = []
    token = _watchers.set(found)
    try:
        yield found
    finally:
        _watchers.reset(token)


def outlived(end: BodyEnd) -> None:
    """Report a body that runs on past its attempt's timeout to whoever watches this attempt;
    its runner calls ``end.finish()`` when the body returns."""
    with _returned:
        if not end.ended:
            end.owner = _owner.get()
            _running.add(end)
    found = _watchers.get()
    if found is not None:
        found.append(end)


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # the body's thread must not die of it; what the callback frees has a lease
        log.warning("the callback after an overrunning step body failed", exc_info=True)


@contextlib.contextmanager
def owned_by(owner: object) -> Iterator[None]:
    """Mark the bodies of attempts run in the block that outlive them as ``owner``'s."""
    token = _owner.set(owner)
    try:
        yield
    finally:
        _owner.reset(token)


def wait_for_overruns(owner: object, timeout: float | None = None) -> bool:
    """Wait until every body of ``owner`` (see :func:`owned_by`) that outlived its attempt has returned
    (at most ``timeout`` seconds); False if one still runs. The testing kit waits so before it moves its
    virtual clock: time does not pass in the kit while a step body runs, so what the body holds (a
    concurrency slot) is not taken from it by virtual time passing."""
    with _returned:
        return _returned.wait_for(lambda: not any(end.owner is owner for end in _running), timeout)
