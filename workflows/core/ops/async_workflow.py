"""Async workflow functions: their coroutine driven by hand over the synchronous replay.

The replay engine runs a workflow function once per resume and suspends it by raising
``Suspend``. An ``async def`` workflow returns a coroutine; :func:`call_workflow`
drives it with ``send``/``throw`` in the resuming thread, with no event loop running it.
Inside it, a durable call that waits (an async step's call, ``sleep``, ``wait_for_signal``,
``hook(...).wait()``, ``child.result()``, ``parallel``) returns a :class:`DurableAwaitable`
whose op runs when it is awaited, through the same context code as in a sync workflow:
a recorded outcome returns at once, an unrecorded one raises ``Suspend`` out of the
coroutine. So op positions, replay and non-determinism detection are those of a sync
workflow making the same calls in the same order.

``asyncio.gather`` of step calls is one durable fan-out: a step call's awaitable is
future-like, so ``gather`` takes it as it is and yields its gathering future to the
driver, which runs every gathered call as one ``parallel`` op (in call order, each
branch's result or ``StepFailed`` handed back to ``gather``). While the coroutine runs,
the thread's running loop is a :class:`ReplayLoop` whose only service is making futures:
anything that schedules work on a loop (``asyncio.sleep``, tasks, I/O) fails the run
with ``NonDurableAwait``, and so does a coroutine that yields anything else to the driver.

``asyncio.wait_for`` is replaced, once, by :func:`wait_for`: inside an async workflow it races
the call and a durable timer (what the standard one did up to Python 3.11, whose successor needs
an asyncio task); anywhere else it is the standard one.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Generator, Iterator, NoReturn, cast

from ...errors import NonDurableAwait, NotAwaited
from ..model.control import Suspend
from .fanout import parallel
from .first import TimerCandidate, race

if TYPE_CHECKING:
    from ...decorators import Step, StepCall
    from ..replay.context import WorkflowContext

_driver: contextvars.ContextVar[Driver | None] = contextvars.ContextVar("async_workflow", default=None)


def current_driver() -> Driver | None:
    """The driver of the async workflow function running in this thread, if any."""
    return _driver.get()


def awaitable(what: str, op: Callable[[], Any], candidate: Any = None) -> Any:
    """In an async workflow, ``op`` deferred until awaited; in a sync one, ``op()`` at once.

    ``candidate``: what the call is in a race (``core.ops.first``), when ``asyncio.wait`` or
    ``asyncio.wait_for`` waits on it; None if it cannot race."""
    driver = _driver.get()
    return op() if driver is None else DurableAwaitable(driver, what, op, candidate)


def call_workflow(ctx: WorkflowContext, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Call a workflow function; drive it to its end (or its suspension) if it is a coroutine."""
    value = fn(*args, **kwargs)
    if not inspect.iscoroutine(value):
        return value
    return Driver(ctx).run(value)


_STANDARD_WAIT_FOR = asyncio.wait_for


async def wait_for(aw: Any, timeout: float | None) -> Any:
    """``asyncio.wait_for``: in an async workflow, a race of ``aw`` (a durable call) and a durable
    timer of ``timeout`` seconds, the same on every Python version; elsewhere the standard one.

    Raises:
        TimeoutError: the timer won (the call is given up: ``DurableAwaitable.cancel``).
    """
    if _driver.get() is None:
        return await _STANDARD_WAIT_FOR(aw, timeout)
    if timeout is None:
        return await aw
    loop = asyncio.get_running_loop()
    call = asyncio.ensure_future(aw, loop=loop)  # a durable call is future-like; anything else is refused
    waiter = loop.create_future()
    release = functools.partial(asyncio.tasks._release_waiter, waiter)  # type: ignore[attr-defined]
    timer = loop.call_later(max(0.0, float(timeout)), asyncio.tasks._release_waiter,  # type: ignore[attr-defined]
                            waiter)
    call.add_done_callback(release)
    try:
        await waiter  # the driver races the call and the timer (``Driver._race``)
    finally:
        timer.cancel()
    if call.done():
        return call.result()
    call.remove_done_callback(release)
    call.cancel()
    raise TimeoutError


asyncio.wait_for = wait_for  # type: ignore[assignment]


class DurableAwaitable:
    """A durable call of an async workflow: its op runs when it is awaited (once). Future-like, so
    ``asyncio.gather`` (of step calls), ``asyncio.wait`` and ``asyncio.wait_for`` take it as it is."""

    _asyncio_future_blocking = False  # what asyncio.isfuture() looks for

    def __init__(self, driver: Driver, what: str, op: Callable[[], Any], candidate: Any = None) -> None:
        self.driver, self.what, self.op, self.candidate = driver, what, op, candidate
        self.awaited = False
        self._outcome: tuple[Any, BaseException | None] | None = None
        self._callbacks: list[Callable[[Any], None]] = []
        driver.created.append(self)

    def __await__(self) -> Generator[Any, None, Any]:
        self.awaited = True
        if self._outcome is None:
            with self.driver.outside():
                self._run()
        return self.result()
        yield  # a generator that never yields: the op completes or raises at once

    def _run(self) -> None:
        try:
            value = self.op()
        except Exception as exc:  # the call failed: whoever waits on it (a gather, a wait) is told too
            self.settle(None, exc)
        else:
            self.settle(value, None)

    def settle(self, value: Any, error: BaseException | None) -> None:
        """Set the call's outcome and tell whoever waits on it (a ``gather``, a ``wait``)."""
        self._outcome = (value, error)
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def __repr__(self) -> str:
        return f"<durable {self.what}>"

    # -- the future protocol, as far as asyncio.gather, wait and wait_for use it ----------
    def get_loop(self) -> ReplayLoop:
        return self.driver.loop

    def add_done_callback(self, fn: Callable[[Any], None], *, context: Any = None) -> None:
        # Called when the driver settles the call, never at once: gather counts a done
        # child only after it has built its outer future.
        self.awaited = True
        self._callbacks.append(fn)

    def remove_done_callback(self, fn: Callable[[Any], None]) -> int:
        before = len(self._callbacks)
        self._callbacks = [c for c in self._callbacks if c != fn]
        return before - len(self._callbacks)

    def done(self) -> bool:
        return self._outcome is not None

    def cancelled(self) -> bool:
        return self._outcome is not None and isinstance(self._outcome[1], asyncio.CancelledError)

    def cancel(self, msg: Any = None) -> bool:
        """A race's loser, given up (``asyncio.wait_for`` cancels it): its op is never run by this
        awaitable. What it waited for is settled as without the race (``core.ops.first``)."""
        if self._outcome is not None:
            return False
        self.settle(None, asyncio.CancelledError(msg))
        return True

    def result(self) -> Any:
        if self._outcome is None:
            raise asyncio.InvalidStateError(f"{self.what} has not run yet")
        value, error = self._outcome
        if error is not None:
            raise error
        return value

    def exception(self) -> BaseException | None:
        if self._outcome is None:
            raise asyncio.InvalidStateError(f"{self.what} has not run yet")
        return self._outcome[1]


class StepAwaitable(DurableAwaitable):
    """An async step's call in an async workflow (``asyncio.gather`` of them is one fan-out)."""

    def __init__(self, driver: Driver, step: Step[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        # It is its own race candidate: it has what a StepCall has (step, args, kwargs).
        super().__init__(driver, f"step {step.name!r}", lambda: step.call_in_workflow(driver.ctx, args, kwargs))
        self.step, self.args, self.kwargs = step, args, kwargs
        self.candidate = self


class TimerHandle:
    """What the replay loop's ``call_later`` returns: a timer of ``asyncio.wait(timeout=)`` or
    ``asyncio.wait_for``, raced durably by the driver (never run on a loop)."""

    def __init__(self, delay: float, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.delay, self.callback, self.args = delay, callback, args
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled

    def fire(self) -> None:
        """The timer won its race: run its callback (it releases the waiter)."""
        if not self._cancelled:
            self.callback(*self.args)


class ReplayLoop:
    """The running loop while an async workflow is driven: it makes futures and nothing else.

    One for the process: what it refuses fails the run of the driver current in the
    caller's context (greenlets of one thread may interleave several drivers).
    """

    def get_debug(self) -> bool:
        return False

    def is_running(self) -> bool:
        return True

    def is_closed(self) -> bool:
        return False

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)  # type: ignore[arg-type]

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        """An unretrieved error of a future: the run's outcome already says what failed."""

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any, context: Any = None) -> TimerHandle:
        """A timeout of ``asyncio.wait`` or ``asyncio.wait_for`` (its callback releases their waiter): a
        durable timer in the race. Any other use (``asyncio.sleep``: use ``workflows.sleep``) is refused."""
        driver = _driver.get()
        if driver is None or callback is not getattr(asyncio.tasks, "_release_waiter", None):
            _refuse("the event loop's call_later() (asyncio I/O, timers or threads)")
        assert driver is not None
        handle = TimerHandle(max(0.0, float(delay)), callback, args)
        driver.timers.append(handle)
        return handle

    def create_task(self, coro: Any, **_: Any) -> NoReturn:
        described = _describe(coro)
        if inspect.iscoroutine(coro):
            coro.close()  # never run: no "never awaited" warning for it
        _refuse(f"a task of {described} (asyncio.gather and tasks in a workflow take step calls only)")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            _refuse(f"the event loop's {name}() (asyncio I/O, timers or threads)")

        return refuse


REPLAY_LOOP = ReplayLoop()


def _refuse(awaited: str) -> NoReturn:
    driver = _driver.get()
    if driver is None:
        raise NonDurableAwait(awaited)
    driver.fail(awaited)


class Driver:
    """Drives one async workflow function's coroutine through one replay."""

    def __init__(self, ctx: WorkflowContext) -> None:
        self.ctx = ctx
        self.loop = REPLAY_LOOP
        self.created: list[DurableAwaitable] = []
        self.timers: list[TimerHandle] = []  # timeouts of asyncio.wait / wait_for (see ReplayLoop.call_later)
        self.outer: asyncio.AbstractEventLoop | None = None  # the thread's running loop before this one

    @contextlib.contextmanager
    def outside(self) -> Iterator[None]:
        """Run an op as outside the workflow's coroutine: an inline step's body may run its own loop."""
        asyncio._set_running_loop(self.outer)
        try:
            yield
        finally:
            asyncio._set_running_loop(self.loop)  # type: ignore[arg-type]

    def fail(self, awaited: str) -> NoReturn:
        """Fail the run: workflow code awaited something that is not a durable call."""
        if self.ctx.fatal is None:
            self.ctx.fatal = NonDurableAwait(awaited)
        raise self.ctx.halt(Suspend())

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` until it returns (its value) or raises (a suspension, its error)."""
        token = _driver.set(self)
        outer = asyncio._get_running_loop()
        self.outer = None if outer is REPLAY_LOOP else outer  # REPLAY_LOOP: left by an interleaved driver
        asyncio._set_running_loop(self.loop)  # type: ignore[arg-type]
        try:
            error: BaseException | None = None
            while True:
                try:
                    yielded = coro.send(None) if error is None else coro.throw(error)
                except StopIteration as stop:
                    self._check_awaited()
                    return stop.value
                error = None
                try:
                    with self.outside():
                        self._answer(yielded)
                except BaseException as exc:  # raised where the coroutine awaits
                    error = exc
        finally:
            asyncio._set_running_loop(self.outer)
            _driver.reset(token)
            coro.close()

    def _answer(self, yielded: Any) -> None:
        """Act on what the coroutine yielded: a gather of step calls runs as one fan-out; the
        waiter of ``asyncio.wait`` or ``wait_for`` (a plain future) as one race (``first_of``)."""
        children = getattr(yielded, "_children", None)
        if isinstance(yielded, asyncio.Future) and not children and not yielded.done():
            self._race(yielded)
            return
        if not (isinstance(yielded, asyncio.Future) and children
                and all(isinstance(c, StepAwaitable) for c in children)):
            self.fail(_describe(yielded))
        calls = [c for c in dict.fromkeys(children) if not c.done()]
        if calls:
            # A step call has what parallel reads of a StepCall: step, args, kwargs.
            results = parallel(self.ctx, cast("tuple[StepCall, ...]", tuple(calls)), return_exceptions=True)
            for call, result in zip(calls, results, strict=True):
                if isinstance(result, BaseException):
                    call.settle(None, result)
                else:
                    call.settle(result, None)
        for child in dict.fromkeys(children):
            if child._callbacks and child._outcome is not None:  # done before the gather: tell it now
                child.settle(*child._outcome)

    def _race(self, waiter: asyncio.Future[Any]) -> None:
        """Race the calls an ``asyncio.wait``/``wait_for`` waits on (those with a done callback and no
        outcome) and its timeout, as one ``first_of`` op; settle the winner, which releases ``waiter``."""
        racing = [a for a in self.created if a._callbacks and a._outcome is None]
        timers = [t for t in self.timers if not t.cancelled()]
        if not racing and not timers or any(a.candidate is None for a in racing):
            self.fail(f"{_describe(waiter)} (asyncio.wait and wait_for race step calls, sleep(), hook waits, "
                      "wait_for_signal() without a timeout and child results)")
        candidates = (*(a.candidate for a in racing), *(TimerCandidate(t.delay) for t in timers))
        won, error = race(self.ctx, candidates, {})
        if won.index < len(racing):
            racing[won.index].settle(won.value, error)
        else:
            timers[won.index - len(racing)].fire()
        if not waiter.done():  # the winner was not what this waiter waits for: nothing else can release it
            self.fail(f"{_describe(waiter)}, which no durable call releases")

    def _check_awaited(self) -> None:
        missing = [a.what for a in self.created if not a.awaited]
        if missing:
            self.ctx.fatal = self.ctx.fatal or NotAwaited(missing)
            raise self.ctx.halt(Suspend())


def _describe(obj: Any) -> str:
    if obj is None:
        return "a bare yield (asyncio.sleep(0)?)"
    if inspect.iscoroutine(obj):
        return f"the coroutine {obj.__qualname__}()"
    return repr(obj)
