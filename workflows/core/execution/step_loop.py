"""The event loop that async step bodies run on: one per process, in a daemon thread.

A worker task thread (Celery's threads or prefork pool, an inline step in a resume)
hands the step's coroutine to this loop and blocks until it ends, so every async step
of a process shares one loop: its I/O is multiplexed there, and clients bound to a loop
(connection pools, HTTP sessions) can be reused by every step. How many steps run at
once is still bounded by the worker's pool (one task thread waits per running step);
see docs/guide.md, "Async".

A step's timeout cancels its task (``CancelledError`` at its current ``await``) and the
attempt fails at once with ``StepTimeout``; the task's end, which may come later (a body may
ignore the cancel), is reported to whoever watches the attempt (``overrun``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
import os
import threading
from typing import Any, Callable

from ...errors import StepTimeout
from .overrun import BodyEnd, outlived


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine (also through ``functools.wraps`` wrappers and partials)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(inspect.unwrap(fn))


class StepLoop:
    """A lazily started event loop in a daemon thread, started again in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid: int | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        """The running loop of this process (started on first use)."""
        with self._lock:
            if self._loop is None or self._pid != os.getpid():  # a prefork child has no loop thread
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=self._serve, args=(loop, ready), daemon=True,
                                          name="workflows-step-loop")
                thread.start()
                ready.wait()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    @staticmethod
    def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    def run(self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], timeout: float | None,
            name: str) -> Any:
        """Run ``fn(*args, **kwargs)`` (a coroutine function) on the loop and wait for its value.

        It runs in a copy of the caller's context (so ``current_step()`` works in the body).

        Raises:
            StepTimeout: it ran longer than ``timeout`` seconds (its task is cancelled).
        """
        outcome: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def start() -> None:  # on the loop, in the caller's context: the task inherits it
            task = asyncio.ensure_future(_attempt(fn, args, kwargs, timeout, name))
            task.add_done_callback(functools.partial(_hand_over, outcome))

        self.loop().call_soon_threadsafe(start, context=contextvars.copy_context())
        return outcome.result()


async def _attempt(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], timeout: float | None,
                   name: str) -> Any:
    body = asyncio.ensure_future(_call(fn, args, kwargs))
    if timeout is None:
        return await body
    done, _ = await asyncio.wait({body}, timeout=timeout)
    if not done:
        body.cancel()  # not awaited: a body that ignores the cancel must not hold the attempt
        body.add_done_callback(_retrieve)
        end = BodyEnd()
        outlived(end)  # its watcher acts when the task has ended (off the loop: it may write to the store)
        body.add_done_callback(lambda _: threading.Thread(target=end.finish, daemon=True).start())
        raise StepTimeout(f"step {name!r} ran longer than its timeout of {timeout:g}s (its task was cancelled)")
    return body.result()


async def _call(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    value = fn(*args, **kwargs)
    return await value if inspect.isawaitable(value) else value


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # mark it retrieved: the attempt has already failed with StepTimeout


def _hand_over(outcome: concurrent.futures.Future[Any], task: asyncio.Future[Any]) -> None:
    if task.cancelled():
        outcome.set_exception(RuntimeError("the step's task was cancelled"))  # an error of the attempt: retried
    elif task.exception() is not None:
        outcome.set_exception(task.exception())  # type: ignore[arg-type]
    else:
        outcome.set_result(task.result())


#: The process's step loop.
STEP_LOOP = StepLoop()


def run_async_step(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], timeout: float | None,
                   name: str) -> Any:
    """Run an async step body on the process's step loop; see :meth:`StepLoop.run`."""
    return STEP_LOOP.run(fn, args, kwargs, timeout, name)
