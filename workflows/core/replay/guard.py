"""Store calls made during a replay: a failure stops the replay instead of reaching workflow code."""

from __future__ import annotations

import functools
from typing import Any, Callable, ContextManager


class GuardedStore:
    """Delegates to a store, running every method call inside ``guard`` (the context's
    :meth:`~workflows.core.replay.context.WorkflowContext.infrastructure`), after ``before`` (called with the
    method's name, inside ``guard`` too)."""

    def __init__(self, store: Any, guard: Callable[[], ContextManager[None]],
                 before: Callable[[str], None] | None = None) -> None:
        self._store, self._guard, self._before = store, guard, before

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            with self._guard():
                if self._before is not None:
                    self._before(name)
                return attr(*args, **kwargs)

        setattr(self, name, call)  # looked up once per replay
        return call
