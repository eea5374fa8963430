"""Step bodies that outlive their timeout, in the simulator.

Python cannot stop a thread: a sync step body past its ``timeout`` runs on while its attempt
fails with ``StepTimeout``. The simulator models that with its own actors (no real thread,
no wall-clock wait): an attempt of a step with a timeout either finishes in time or, drawn by
the seed, times out at once while its body goes on as a separate actor of the same process
(which dies with the process). Where the engine watches such bodies (``core.execution.overrun``: a
concurrency slot is kept until the body returns), the model reports each one as the real
``call_with_timeout`` does, and ends it when the body returns.
"""

from __future__ import annotations

import contextvars
import importlib
from typing import TYPE_CHECKING, Any, Callable

from ..core.execution import attempts
from ..errors import StepTimeout
from .actors import Crash

if TYPE_CHECKING:
    from .world import World

OVERRUNS = 0.5  # the share of attempts with a timeout whose body outlives it


def _overrun_port() -> Any:
    """``core.execution.overrun`` where the engine has it (None otherwise)."""
    try:
        return importlib.import_module("workflows.core.execution.overrun")
    except ImportError:
        return None


def install(world: World) -> Callable[[], None]:
    """Model bodies that outlive their timeout in ``world``; return what undoes it."""
    real = attempts.call_with_timeout
    port = _overrun_port()

    def call_with_timeout(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any],
                          timeout: float | None, name: str) -> Any:
        actor = world.baton.actor()
        if timeout is None or actor is None or attempts.is_async_callable(fn) or world.rng.random() >= OVERRUNS:
            return real(fn, args, kwargs, timeout, name) if timeout is None or actor is None else fn(*args, **kwargs)
        end = port.BodyEnd() if port is not None else None
        context = contextvars.copy_context()

        def body() -> None:
            try:
                context.run(fn, *args, **kwargs)
            except Crash:
                raise  # the process died: its thread too
            except Exception:  # noqa: S110 -- a body's outcome after its timeout is discarded
                pass
            if end is not None:
                end.finish()

        world.spawn_overrun(actor, body)
        if end is not None:
            port.outlived(end)
        raise StepTimeout(f"step {name!r} ran longer than its timeout of {timeout:g}s")

    attempts.call_with_timeout = call_with_timeout  # type: ignore[assignment]

    def undo() -> None:
        attempts.call_with_timeout = real  # type: ignore[assignment]
    return undo
