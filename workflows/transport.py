"""What the engine needs from a message transport; Celery implements it in ``tasks``."""

from __future__ import annotations

from typing import Any, Protocol

from persistence import RunRecord


class Transport(Protocol):
    """Sends the two kinds of message the engine uses."""

    def send_step(self, step: str, run_id: str, pos: int, attempt: int, args: str,
                  branch: dict[str, Any] | None = None, queue: str | None = None, *,
                  resent: bool = False) -> None:
        """Queue one attempt of a step (``branch``: join id, index and width of a fan-out;
        ``resent``: recovery sends it again, so its outcome may exist already)."""

    def send_resume(self, run_id: str, *, recovering: bool = False, fresh: RunRecord | None = None) -> None:
        """Queue a resume of a run (``fresh``: the run as just created, so that the first
        delivery of its first resume needs no read of the run or of its empty history)."""

    def runs_here(self, step: str, queue: str | None) -> bool:
        """Whether this process consumes the queue a step's messages go to (and is not stopping)."""

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        """Set aside a message that can never be processed (e.g. for an unknown run)."""


_transport: Transport | None = None


def set_transport(transport: Transport) -> None:
    """Install the transport (the Celery module does this when imported)."""
    global _transport
    _transport = transport


def get_transport() -> Transport:
    """Return the installed transport, importing the Celery one by default."""
    if _transport is None:
        from . import app  # noqa: F401 - builds the Celery app, which installs its transport
    assert _transport is not None
    return _transport
