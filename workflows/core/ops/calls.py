"""The durable calls a workflow makes: sleep, hook, wait_for_signal, first_of, parallel, continue_as_new,
set_tags, set_event, write_stream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...durations import Duration
from ...errors import NotInWorkflow
from ..execution.attempts import current_step
from ..model.control import ContinueAsNew
from ..replay.context import WorkflowContext, current_workflow
from ..storage.tags import set_tags as durable_set_tags
from .async_workflow import awaitable
from .completion import Criteria
from .events import set_event as durable_set_event
from .events import write_stream as durable_write_stream
from .fanout import parallel as fan_out
from .first import first_of as race
from .first import signal, timer
from .waits import hook as durable_hook
from .waits import sleep as durable_sleep
from .waits import wait_for_signal as durable_wait

if TYPE_CHECKING:
    from ...decorators import StepCall
    from .waits import HookHandle


def _timer(duration: Duration) -> Any:
    return timer(duration)


def _signal(name: str) -> Any:
    return signal(name)


def _context(call: str) -> WorkflowContext:
    ctx = current_workflow()
    if ctx is None:
        raise NotInWorkflow(f"{call}() can only be called inside a @workflow function")
    return ctx


def sleep(duration: Duration) -> Any:
    """Sleep durably: ``"90s"``, ``"2h"``, ``"1d"``, seconds (fractions kept) or a timedelta.

    In an async workflow it returns an awaitable: ``await sleep("1h")``.
    """
    ctx = _context("sleep")
    return awaitable("sleep", lambda: durable_sleep(ctx, duration), _timer(duration))


def hook(name: str, timeout: Duration | None = None, schema: Any = None) -> HookHandle:
    """Create a durable hook; give ``.token`` to the outside world, then ``.wait()`` for its payload.

    Args:
        name: a label for the hook (shown in the CLI).
        timeout: after it the hook expires and ``wait()`` raises WaitTimeout.
        schema: a pydantic model; ``resume_hook`` rejects payloads that do not match it.
    """
    return durable_hook(_context("hook"), name, timeout, schema)


def wait_for_signal(name: str, timeout: Duration | None = None) -> Any:
    """Return the next signal ``name`` sent to this run (in send order), waiting durably.

    In an async workflow it returns an awaitable: ``await wait_for_signal(name)``.

    Raises:
        WaitTimeout: no signal arrived within ``timeout``.
    """
    ctx = _context("wait_for_signal")
    return awaitable(f"wait_for_signal({name!r})", lambda: durable_wait(ctx, name, timeout),
                     _signal(name) if timeout is None else None)


def first_of(*candidates: Any, **named: Any) -> Any:
    """Wait for whichever candidate happens first; return a :class:`~workflows.core.ops.first.First`
    (``key``, ``index``, ``kind``, ``value``). The winner is recorded once: replays never race again.

    Candidates: ``signal(name)``, ``timer(duration)``, a hook's handle, a step call
    (``step.s(...)``) or a child's handle, positional (keyed by position) or by keyword.
    In an async workflow it returns an awaitable: ``await first_of(...)``.

    Raises:
        StepFailed (or its declared type), ChildFailed, WaitTimeout: the winner was a step that
            failed, a child that did not complete, or a hook that expired.
    """
    ctx = _context("first_of")
    return awaitable("first_of", lambda: race(ctx, candidates, named))


def parallel(*calls: StepCall, return_exceptions: bool = False, min_successful: int | None = None,
             tolerated_failures: int | None = None) -> Any:
    """Run steps in parallel (``step.s(...)`` signatures); results come back in call order
    (a list; in an async workflow an awaitable of it).

    With completion criteria the fan-out ends early and returns a :class:`FanOutResult` of
    the branches that counted (see docs/guide.md, "Completion criteria"):

    Args:
        min_successful: complete as soon as this many branches succeeded.
        tolerated_failures: fail as soon as more branches than this failed (without
            ``min_successful``, complete once every branch ended).

    Raises:
        ParallelError: a branch failed after its retries (unless ``return_exceptions``,
            which puts a StepFailed in that branch's place instead).
        FanOutFailed: with criteria, more branches failed than tolerated.
    """
    ctx = _context("parallel")
    criteria = Criteria.of(len(calls), min_successful, tolerated_failures, return_exceptions)
    return awaitable("parallel", lambda: fan_out(ctx, calls, return_exceptions, criteria))


def continue_as_new(*args: Any, **kwargs: Any) -> None:
    """End this run as ``continued`` and start a linked successor with these arguments."""
    _context("continue_as_new")
    raise ContinueAsNew(args, kwargs)


def set_tags(tags: dict[str, str | None] | None = None, **more: str | None) -> dict[str, str]:
    """Change this run's tags (search attributes); a None value removes a tag. Returns the tags after.

    A durable op: recorded once, so a replay writes nothing again.

    Raises:
        InvalidTags: a key or value breaks the rules, or the run would carry too many tags.
    """
    return durable_set_tags(_context("set_tags"), {**(tags or {}), **more})


def set_event(key: str, value: Any) -> None:
    """Publish ``value`` (JSON data) as event ``key`` of this run; clients read the latest value
    with ``get_event(run_id, key)``. A durable op: recorded once, so a replay writes nothing again.

    Raises:
        InvalidEventKey: the key breaks the rules (``workflows.core.ops.events``).
        SerializationError / PayloadTooLarge: the value is not JSON data, or too large.
    """
    durable_set_event(_context("set_event"), key, value)


def write_stream(value: Any) -> int:
    """Append ``value`` (JSON data) to this run's progress stream; return its offset (0, 1, ...).
    Clients read it with ``read_stream(run_id, offset)``. A durable op: recorded once.

    Raises:
        StreamFull: the stream holds its maximum of entries or bytes (``workflows.core.ops.events``).
        SerializationError / PayloadTooLarge: the value is not JSON data, or too large.
    """
    return durable_write_stream(_context("write_stream"), value)


def cancel_requested() -> bool:
    """Inside a step: whether cancellation of its run was requested (one read)."""
    info = current_step()
    if info is None:
        ctx = current_workflow()
        return bool(ctx and ctx.run.cancel_requested)
    run = info.engine.store.find_run(info.run_id)
    return run is None or run.cancel_requested or run.is_terminal
