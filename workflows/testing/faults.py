"""Injected step failures: a step's first attempts raise a given error, then its body runs."""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

from ..core.model import registry


@dataclasses.dataclass
class FailureInjection:
    """Failures injected into one step: the next ``times`` attempts (every attempt if None)
    raise ``error`` instead of running the body; ``raised`` counts them."""

    step: str
    times: int | None
    error: BaseException
    raised: int = 0
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    def take(self) -> bool:
        """Whether this attempt fails (and count it)."""
        with self._lock:
            if self.times is not None and self.raised >= self.times:
                return False
            self.raised += 1
            return True


def inject_failures(step: Any, times: int | None,
                    error: BaseException | type[BaseException] | None) -> FailureInjection:
    """Make the registered step ``step`` (a name or a ``@step``) fail its next ``times`` attempts.

    The registry keeps the replacement until the enclosing ``registry.scope()`` ends.

    Raises:
        UnknownStep: no step has this name.
    """
    definition = registry.get_step(getattr(step, "name", step))
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 0):
        raise ValueError(f"times must be an int >= 0 or None, got {times!r}")
    if error is None:
        error = RuntimeError(f"injected failure of step {definition.name!r}")
    elif isinstance(error, type):
        error = error(f"injected failure of step {definition.name!r}")
    injection = FailureInjection(definition.name, times, error)
    body = definition.fn

    @functools.wraps(body)
    def failing(*args: Any, **kwargs: Any) -> Any:
        if injection.take():
            raise injection.error
        return body(*args, **kwargs)

    registry.replace_step(dataclasses.replace(definition, fn=failing))
    return injection
