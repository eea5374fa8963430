"""The engine's control flow: signals raised through workflow code, never errors users handle.

What user code must not swallow derives from ``BaseException`` (``except Exception`` lets it
pass): :class:`Suspend` (the run waits), :class:`ContinueAsNew` (the run ends and a successor
starts), :class:`ReplayAborted` (a store call failed: the resume re-raises the store's error and
is retried), :class:`ReplayStopped` (the run ended, or another resume moved it on: this replay
writes nothing more) and :class:`StaleHistory` (read the run again and replay). The engine
notices code that swallows a suspension anyway and fails the run
with :class:`~workflows.errors.SuspensionSwallowed`. :class:`OutcomeRecorded` passes between a
store and the engine only.
"""

from __future__ import annotations

from typing import Any


class Suspend(BaseException):
    """Raised inside a workflow to stop the replay until an outcome arrives."""


class ReplayAborted(BaseException):
    """A store call failed during replay; the resume re-raises that error, so the run is retried.

    A ``BaseException`` so that workflow code (``except Exception``) cannot take an
    infrastructure failure for its own; the engine remembers the failure even if
    the code swallows this signal too.
    """


class ReplayStopped(BaseException):
    """The run ended, or another resume moved it on, while this replay ran: it stops writing."""


class StaleHistory(BaseException):
    """The cached history misses an outcome that must exist, or a write lost a race: read the
    run again and replay."""


class OutcomeRecorded(Exception):
    """An end meant to take an op's outcome slot (``finish_run(fence=...)``) found it recorded:
    the op finished meanwhile, so the end must take the next slot."""


class ContinueAsNew(BaseException):
    """Raised by :func:`workflows.continue_as_new` to end the run and start its successor."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.args_, self.kwargs = args, kwargs

    @property
    def args(self) -> tuple[Any, ...]:  # type: ignore[override]
        return self.args_
