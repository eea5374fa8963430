"""``@workflow`` and ``@step``: typed, validated at decoration time, bare or called."""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, ParamSpec, Sequence, TypeVar, overload

from .core.model import registry
from .core.model.limits import step_limits, workflow_limits
from .core.model.names import check_name, check_queue
from .core.model.priority import check_priority
from .core.replay.children import ChildStart
from .durations import Duration, to_seconds
from .errors import InvalidDebounce, InvalidSchedule, RegistrationError
from .options import RETRY_KEYWORDS, RetryPolicy, StartOptions, split_start_options

if TYPE_CHECKING:
    from .client import RunHandle
    from .core.replay.context import WorkflowContext

P = ParamSpec("P")
R = TypeVar("R")

_STEP_OPTIONS = {"name", "retries", "retry_delay", "backoff", "max_delay", "jitter", "timeout", "queue", "inline",
                 "priority", "errors", "concurrency", "concurrency_key", "rate", "rate_key", "burst"}
_WORKFLOW_OPTIONS = {"name", "max_duration", "queue", "priority", "schedule", "schedule_timezone", "schedule_overlap",
                     "concurrency", "concurrency_key"}


@dataclass(frozen=True)
class StepCall:
    """A step with its arguments, not yet called: a branch of :func:`parallel`."""

    step: Step[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


@functools.cache
def _replay_hooks() -> tuple[Any, Any, Any]:
    """What a step call asks of the engine, imported once (the engine imports this module;
    an import per call costs more than the call of a recorded step)."""
    from .core.ops.async_workflow import StepAwaitable, current_driver
    from .core.replay.context import current_workflow

    return current_workflow, current_driver, StepAwaitable


class Step(Generic[P, R]):
    """A durable step. Inside a workflow a call is recorded; outside it is a plain call."""

    def __init__(self, definition: registry.StepDef) -> None:
        self.definition = definition
        self.name = definition.name
        functools.update_wrapper(self, definition.fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        current_workflow, current_driver, StepAwaitable = _replay_hooks()
        ctx = current_workflow()
        if ctx is None:
            return self.definition.fn(*args, **kwargs)  # type: ignore[no-any-return]
        driver = current_driver()
        if driver is None:
            return self.call_in_workflow(ctx, args, kwargs)  # type: ignore[no-any-return]
        if self.is_async:  # an async step in an async workflow: the call runs when awaited
            return StepAwaitable(driver, self, args, dict(kwargs))  # type: ignore[return-value]
        with driver.outside():  # a sync step in an async workflow: a plain call, as in a sync one
            return self.call_in_workflow(ctx, args, kwargs)  # type: ignore[no-any-return]

    @property
    def is_async(self) -> bool:
        """Whether the step's body is an ``async def`` (in an async workflow its call is awaited)."""
        from .core.execution.step_loop import is_async_callable

        return is_async_callable(self.definition.fn)

    def call_in_workflow(self, ctx: WorkflowContext, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The durable call of this step in the workflow ``ctx`` runs: its recorded result, or a run of it."""
        # The registered definition, as workers run it (the testing kit may have replaced it).
        definition = registry.find_step(self.name) or self.definition
        from .core.ops.steps import call_step  # the durable calls load with the first workflow that runs

        return call_step(ctx, definition, args, kwargs)

    def s(self, *args: P.args, **kwargs: P.kwargs) -> StepCall:
        """Return a signature of this step for :func:`parallel`."""
        return StepCall(self, args, dict(kwargs))

    def map(self, items: Iterable[Any], *, return_exceptions: bool = False, min_successful: int | None = None,
            tolerated_failures: int | None = None) -> Any:
        """Run this step once per item, in parallel; results in item order (in an async
        workflow: an awaitable of them). With completion criteria, a FanOutResult (see :func:`parallel`)."""
        from .core.ops.calls import parallel

        return parallel(*(StepCall(self, (item,), {}) for item in items), return_exceptions=return_exceptions,
                        min_successful=min_successful, tolerated_failures=tolerated_failures)

    def __repr__(self) -> str:
        return f"<step {self.name}>"


class Workflow(Generic[P, R]):
    """A durable workflow: ``start()`` it; a plain call runs the function directly."""

    def __init__(self, definition: registry.WorkflowDef) -> None:
        self.definition = definition
        self.name = definition.name
        functools.update_wrapper(self, definition.fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.definition.fn(*args, **kwargs)  # type: ignore[no-any-return]

    def start(self, *args: Any, **kwargs: Any) -> RunHandle:
        """Start a run with these arguments; its options go through :meth:`options` or
        :meth:`apply_async`. (A start option among ``kwargs`` that names no parameter of the
        workflow is still taken as the option, with a ``DeprecationWarning``.)

        Inside a workflow this starts a linked child run; ``.result()`` on the
        returned handle then waits for it durably.
        """
        kwargs, options = split_start_options(self.definition.fn, kwargs)
        return self.start_with(args, kwargs, options)

    def options(self, **options: Any) -> BoundStart:
        """These start options (:class:`~workflows.options.StartOptions`: ``idempotency_key``,
        ``tags``, ``debounce``, ``debounce_key``, ``debounce_max``, ``priority``, ``delay``, ``start_at``;
        inside a workflow ``detached`` and ``parent_close_policy``) for a ``.start(*args, **kwargs)``."""
        return BoundStart(self, StartOptions(**options))

    def apply_async(self, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None,
                    **options: Any) -> RunHandle:
        """Start a run with ``args`` and ``kwargs`` and these start options, the way Celery's
        ``apply_async`` keeps them apart."""
        return self.start_with(tuple(args), dict(kwargs or {}), StartOptions(**options))

    def start_with(self, args: tuple[Any, ...], kwargs: dict[str, Any], options: StartOptions) -> RunHandle:
        """Start a run with ``args``, ``kwargs`` and ``options`` (what every other start calls)."""
        from .client import start_with_options
        from .core.replay.context import current_workflow

        ctx = current_workflow()
        if ctx is None:
            return start_with_options(self.definition, args, kwargs, options)
        if options.debounce is not None or options.debounce_key is not None or options.debounce_max is not None:
            raise InvalidDebounce("a child run cannot be debounced (start it from outside a workflow)")
        start = ChildStart(options.delay, options.start_at, options.detached, options.parent_close_policy)
        from .core.ops.waits import start_child  # the durable calls load with the first workflow that runs

        # inside a workflow the handle is a ChildHandle, whose result() waits durably
        return start_child(ctx, self.definition, args, kwargs, start)  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"<workflow {self.name}>"


class BoundStart:
    """A workflow with start options, waiting for its arguments: ``wf.options(...).start(*args, **kwargs)``."""

    def __init__(self, workflow: Workflow[Any, Any], options: StartOptions) -> None:
        self.workflow, self.start_options = workflow, options

    def options(self, **more: Any) -> BoundStart:
        """These options with ``more`` added."""
        return BoundStart(self.workflow, self.start_options.replace(**more))

    def start(self, *args: Any, **kwargs: Any) -> RunHandle:
        """Start a run with these arguments (every keyword is the workflow's own)."""
        return self.workflow.start_with(args, kwargs, self.start_options)

    def __repr__(self) -> str:
        return f"<workflow {self.workflow.name} with {self.start_options}>"


def _check_options(kind: str, options: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(options) - allowed
    if unknown:
        raise RegistrationError(f"unknown @{kind} option(s): {', '.join(sorted(unknown))}")
    if options.get("name") is not None:
        check_name(options["name"], f"@{kind} name")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _build_step(fn: Callable[..., Any], options: dict[str, Any]) -> Step[Any, Any]:
    if not callable(fn):
        raise RegistrationError(f"@step needs a function, got {fn!r}")
    if is_celery_task(fn):
        from .celery.task_steps import from_task

        return from_task(fn, **options)
    definition = step_definition(fn, options)
    registry.add_step(definition)
    return Step(definition)


def is_celery_task(obj: Any) -> bool:
    """Whether ``obj`` is a Celery task (checked without importing Celery)."""
    if "celery" not in sys.modules:  # no Celery loaded, so no task
        return False
    from celery.app.task import Task

    try:
        return isinstance(obj, Task)  # a task's lazy proxy reports the task's class
    except Exception:  # a proxy that cannot be evaluated is not a usable task
        return False


def _expand_retry(options: dict[str, Any]) -> dict[str, Any]:
    """``retry_policy=RetryPolicy(...)`` as the simple retry keywords it stands for."""
    if "retry_policy" not in options:
        return options
    policy, rest = options["retry_policy"], {k: v for k, v in options.items() if k != "retry_policy"}
    if not isinstance(policy, RetryPolicy):
        raise RegistrationError(f"@step retry_policy must be a RetryPolicy, got {policy!r}")
    both = sorted(RETRY_KEYWORDS & rest.keys())
    if both:
        raise RegistrationError(f"@step takes retry_policy=RetryPolicy(...) or {', '.join(both)}=, not both")
    return {**rest, **{name: getattr(policy, name) for name in RETRY_KEYWORDS}}


def step_definition(fn: Callable[..., Any], options: dict[str, Any], task: Any = None) -> registry.StepDef:
    """Validate ``@step`` options for ``fn`` and build its definition (not yet registered)."""
    options = _expand_retry(options)
    _check_options("step", options, _STEP_OPTIONS)
    retries = options.get("retries", 3)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise RegistrationError(f"@step retries must be an int >= 0, got {retries!r}")
    backoff = options.get("backoff", 2.0)
    if not _is_number(backoff) or backoff < 1:
        raise RegistrationError(f"@step backoff must be a finite number >= 1, got {backoff!r}")
    jitter = options.get("jitter", 0.1)
    if not _is_number(jitter) or not 0 <= jitter < 1:
        raise RegistrationError(f"@step jitter must be a number in [0, 1), got {jitter!r}")
    inline = options.get("inline", False)
    if not isinstance(inline, bool):
        raise RegistrationError(f"@step inline must be True or False, got {inline!r}")
    policy = registry.RetryPolicy(
        retries=retries, backoff=float(backoff), jitter=float(jitter),
        retry_delay=to_seconds(options.get("retry_delay", 1.0), what="retry_delay"),
        max_delay=to_seconds(options.get("max_delay", 300.0), what="max_delay"),
    )
    timeout = options.get("timeout")
    name = check_name(options.get("name") or fn.__name__, "@step name")
    if task is None and options.get("queue") is not None:  # a task's own queue is its Celery app's business
        check_queue(options["queue"], "@step queue")
    elif task is not None and options.get("queue") is not None and not isinstance(options["queue"], str):
        raise RegistrationError(f"@step queue must be a string, got {options['queue']!r}")
    _declare_errors(options.get("errors"))
    return registry.StepDef(
        name=name, fn=fn, retry=policy,
        timeout=None if timeout is None else to_seconds(timeout, what="timeout", allow_zero=False),
        queue=options.get("queue"), inline=inline, task=task, limits=step_limits(fn, options),
        priority=_priority(options, "@step priority"),
    )


def _declare_errors(errors: Any) -> None:
    """Declare the exception classes of ``@step(errors=[...])`` (``core.model.failures.declare_error``)."""
    if errors is None:
        return
    if isinstance(errors, type) or not isinstance(errors, (list, tuple)):
        raise RegistrationError(f"@step errors must be a list of exception classes, got {errors!r}")
    from .core.model.failures import declare_error

    for cls in errors:
        declare_error(cls)


def _priority(options: dict[str, Any], what: str) -> str | None:
    """The ``priority=`` option as stored (None: not given, or normal); see ``workflows.core.model.priority``."""
    return None if options.get("priority") is None else check_priority(options["priority"], what)


def _build_workflow(fn: Callable[..., Any], options: dict[str, Any]) -> Workflow[Any, Any]:
    _check_options("workflow", options, _WORKFLOW_OPTIONS)
    if not callable(fn):
        raise RegistrationError(f"@workflow needs a function, got {fn!r}")
    name = check_name(options.get("name") or getattr(fn, "__name__", None), "@workflow name")
    if options.get("queue") is not None:
        check_queue(options["queue"], "@workflow queue")
    max_duration = options.get("max_duration")
    schedule = options.get("schedule")
    if schedule is None and any(options.get(k) is not None for k in ("schedule_timezone", "schedule_overlap")):
        raise RegistrationError("@workflow schedule_timezone and schedule_overlap need schedule=")
    if schedule is not None:
        from beat.cron import ScheduleSpec

        from .schedules import OVERLAP_POLICIES

        ScheduleSpec.build(cron=schedule, timezone=options.get("schedule_timezone") or "UTC")
        overlap = options.get("schedule_overlap")
        if overlap is not None and overlap not in OVERLAP_POLICIES:
            raise InvalidSchedule(f"invalid schedule_overlap {overlap!r}: one of {', '.join(OVERLAP_POLICIES)}")
    definition = registry.WorkflowDef(
        name=name, fn=fn, queue=options.get("queue"), schedule=schedule,
        max_duration=None if max_duration is None else to_seconds(max_duration, what="max_duration",
                                                                     allow_zero=False),
        options={k: options[k] for k in ("schedule_timezone", "schedule_overlap") if k in options},
        limits=workflow_limits(fn, options), priority=_priority(options, "@workflow priority"),
    )
    registry.add_workflow(definition)
    return Workflow(definition)


class StepDecorator:
    """Mark a function as a durable step (bare ``@step`` or ``@step(retries=5, ...)``).

    Options: ``retries`` (default 3), ``retry_delay`` (1 s), ``backoff`` (2.0),
    ``max_delay`` (300 s), ``jitter`` (0.1) or all five as ``retry_policy=RetryPolicy(...)``,
    ``timeout`` (per attempt), ``queue``, ``inline`` (run inside the workflow's task: no broker
    hop), ``name``, ``errors`` (exception classes workflows catch by type: see
    :func:`workflows.declare_error`), ``priority`` (``"high"``, ``"normal"``, ``"low"``: the level its messages go at;
    its run's level when not given, docs/guide.md "Priority"); flow control across the fleet
    (docs/flow-control.md): ``concurrency`` (at most N attempts at once), ``concurrency_key`` (an
    argument: N per value of it), ``rate`` ("20/s", "100/m"), ``rate_key``, ``burst``.
    On a Celery task (``@step`` above ``@app.task``) it is :meth:`from_task`.
    """

    @overload
    def __call__(self, fn: Callable[P, R], /) -> Step[P, R]: ...
    @overload
    def __call__(self, /, *, name: str | None = ..., retry_policy: RetryPolicy = ..., retries: int = ...,
                 retry_delay: Duration = ...,
                 backoff: float = ..., max_delay: Duration = ..., jitter: float = ...,
                 timeout: Duration | None = ..., queue: str | None = ..., priority: str | None = ...,
                 inline: bool = ..., errors: list[type[Exception]] | None = ...,
                 concurrency: int | None = ..., concurrency_key: str | None = ...,
                 rate: str | float | None = ..., rate_key: str | None = ...,
                 burst: float | None = ...) -> Callable[[Callable[P, R]], Step[P, R]]: ...

    def __call__(self, fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
        if fn is not None:
            return _build_step(fn, options)
        return lambda f: _build_step(f, options)

    def from_task(self, task: Any, /, **options: Any) -> Step[..., Any]:
        """A durable step made from an existing Celery task, which stays as it is.

        The step keeps the task's name (the step's name too, unless ``name=``), its
        queue and the app's ``task_routes``; ``queue=`` overrides them. Other options
        are those of ``@step``. See docs/celery.md.
        """
        from .celery.task_steps import from_task

        return from_task(task, **options)

    def __repr__(self) -> str:
        return "<workflows.step>"


step = StepDecorator()


@overload
def workflow(fn: Callable[P, R], /) -> Workflow[P, R]: ...
@overload
def workflow(*, name: str | None = ..., max_duration: Duration | None = ..., queue: str | None = ...,
             priority: str | None = ..., schedule: str | None = ..., schedule_timezone: str | None = ...,
             schedule_overlap: str | None = ..., concurrency: int | None = ...,
             concurrency_key: str | None = ...) -> Callable[[Callable[P, R]], Workflow[P, R]]: ...


def workflow(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Mark a function as a durable workflow (bare or ``@workflow(name=..., max_duration="7d")``).

    ``concurrency=N`` (and ``concurrency_key="arg"``): at most N live runs at once (per value of
    that argument); further runs wait in start order (docs/flow-control.md). ``priority="high"``
    (or ``"low"``): the level its runs are served at unless a start says otherwise (docs/guide.md)."""
    if fn is not None:
        return _build_workflow(fn, options)
    return lambda f: _build_workflow(f, options)
