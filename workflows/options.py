"""What is not an argument: how a run starts, how a step retries, how a schedule behaves.

``RetryPolicy`` is the step's own policy (``workflows.core.model.registry.RetryPolicy``): its fields
are ``@step``'s retry keywords.

A workflow's own parameters never collide with these: they travel apart, the way Celery's
``apply_async(args, kwargs, **options)`` and Temporal's ``RetryPolicy`` keep them::

    order.options(tags={"shop": "eu"}, idempotency_key="o-1").start(order_id, tags=["gift"])
    order.apply_async(args=[order_id], kwargs={"tags": ["gift"]}, idempotency_key="o-1")

    @step(retry_policy=RetryPolicy(retries=5, retry_delay=2.0, max_delay=60.0))
    def charge(card: str) -> str: ...

    create_schedule(report, timetable=Timetable(every="1h"), policy=SchedulePolicy(overlap="buffer_one"))

    list_runs(status="failed", created=TimeRange(since=yesterday))

The simple keywords (``wf.start(..., tags=...)``, ``@step(retries=5)``, ``create_schedule(...,
every="1h", overlap=...)``) keep working beside the value objects; a value object and one of the
keywords it stands for in one call is an error. A start option given to ``start()`` among
the workflow's arguments is still taken as an option, with a ``DeprecationWarning``, unless the
workflow has a parameter of that name: then it is the workflow's argument.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any, Callable, Mapping, TypeVar

from .core.model.records import TimeRange
from .core.model.registry import RetryPolicy
from .durations import Duration
from .errors import InvalidArguments, InvalidInput

__all__ = ["RETRY_KEYWORDS", "RetryPolicy", "SchedulePolicy", "StartOptions", "TimeRange", "Timetable",
           "bundle", "created_within", "split_start_options", "unknown_keywords"]

V = TypeVar("V")


@dataclass(frozen=True)
class StartOptions:
    """How a run starts, apart from its arguments.

    Attributes:
        idempotency_key: the same key always names one run (a second start returns it).
        tags: the run's search tags (``list_runs(tag=...)``, docs/tags.md).
        debounce: a window (``"5s"``): starts with one ``debounce_key`` within it collapse into one
            run, which starts with the last arguments once the window has passed (docs/flow-control.md).
        debounce_key: the key starts are collapsed by (needs ``debounce``).
        debounce_max: the longest a debounced run waits in all (needs ``debounce``).
        priority: the level the run is served at, ``"high"``, ``"normal"`` or ``"low"`` (default: the
            workflow's ``@workflow(priority=...)``, else normal); its steps inherit it (docs/guide.md).
        delay: start the run this long from now (``"10m"``, seconds or a timedelta), like Celery's
            ``countdown``: it is stored at once as ``delayed`` and starts then (docs/guide.md).
        start_at: start the run at this aware datetime, like Celery's ``eta`` (not with ``delay``).
        detached: inside a workflow, start the child detached: it outlives its parent, which neither
            waits for it nor touches it when it ends (docs/guide.md, "Child workflows").
        parent_close_policy: inside a workflow, what the parent's end does to the child: ``"cancel"``
            (end it at once), ``"request_cancel"`` (ask it to cancel, after the step it runs) or
            ``"abandon"`` (leave it running); default: cancel it if the parent is cancelled or times out.
    """

    idempotency_key: str | None = None
    tags: Mapping[str, str] | None = None
    debounce: Duration | None = None
    debounce_key: str | None = None
    debounce_max: Duration | None = None
    priority: str | None = None
    delay: Duration | None = None
    start_at: datetime | None = None
    detached: bool = False
    parent_close_policy: str | None = None

    def replace(self, **changes: Any) -> StartOptions:
        """These options with ``changes`` applied (unknown names are a TypeError)."""
        return StartOptions(**{**asdict(self), **changes})


#: The names of the start options.
START_OPTIONS = frozenset(f.name for f in fields(StartOptions))


def split_start_options(fn: Callable[..., Any], kwargs: dict[str, Any],
                        given: StartOptions | None = None) -> tuple[dict[str, Any], StartOptions]:
    """Take the start options out of a ``start()`` call's keywords (the old way of passing them).

    A keyword naming a start option is the workflow's own argument when ``fn`` has a parameter
    of that name; otherwise it is the option, with a ``DeprecationWarning``.

    Returns:
        The workflow's keyword arguments, and the options (``given`` with the old keywords applied).
    """
    named = {name for name, p in inspect.signature(fn).parameters.items()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    legacy = {name: kwargs[name] for name in START_OPTIONS & kwargs.keys() - named}
    options = given or StartOptions()
    if not legacy:
        return kwargs, options
    warnings.warn(f"start options among a workflow's arguments ({', '.join(f'{k}=' for k in sorted(legacy))}) are "
                  "deprecated: "
                  f"use wf.options({', '.join(f'{k}=...' for k in sorted(legacy))}).start(...) or "
                  "wf.apply_async(args, kwargs, **options)", DeprecationWarning, stacklevel=3)
    return {k: v for k, v in kwargs.items() if k not in legacy}, options.replace(**legacy)


#: ``@step(retry_policy=RetryPolicy(...))`` stands for these simple keywords (the policy's fields).
RETRY_KEYWORDS = frozenset(f.name for f in fields(RetryPolicy))


@dataclass(frozen=True)
class SchedulePolicy:
    """How a schedule behaves when fires meet (``create_schedule(..., policy=SchedulePolicy(...))``).

    Attributes:
        overlap: what a fire does while the previous fire's run still runs: ``skip``, ``buffer_one``,
            ``buffer_all``, ``cancel_other``, ``terminate_other`` or ``allow_all`` (docs/schedules.md).
        catchup_window: how late a fire may still start after beat downtime (a duration).
        jitter: delay each fire by a deterministic random amount below this (a duration).
        paused: create the schedule paused.
    """

    overlap: str = "skip"
    catchup_window: Duration | None = None
    jitter: Duration | None = None
    paused: bool = False

    def as_keywords(self) -> dict[str, Any]:
        """The same policy as ``create_schedule``'s simple keywords."""
        return asdict(self)


@dataclass(frozen=True)
class Timetable:
    """When a schedule fires (``create_schedule(..., timetable=Timetable(cron="0 9 * * *"))``).

    Attributes:
        cron: a five-field cron expression (or ``@daily`` ...), read in ``timezone``.
        every: an interval: seconds, ``"5m"`` or a timedelta (fires at ``start_at + k * every``).
            Exactly one of ``cron`` and ``every`` is set.
        timezone: the IANA time zone the cron expression is read in.
        start_at: the first instant a fire may happen (an aware datetime); the anchor of ``every``.
        end_at: the last instant a fire may happen (an aware datetime).
    """

    cron: str | None = None
    every: Duration | None = None
    timezone: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None


@dataclass(frozen=True)
class RunFilter:
    """The runs a batch operation selects, with the filters of ``list_runs``
    (``workflows.batch_cancel(RunFilter(status="suspended", workflow=order))``).

    Attributes:
        status: a run status, or None.
        workflow: a workflow name or object, or None.
        tag: ``"key=value"`` or ``(key, value)``, or None; does not combine with ``status``.
        created: a :class:`TimeRange` of creation times, or None. A batch selects only runs
            created before it was started, whatever ``created.until`` says.
    """

    status: Any = None
    workflow: Any = None
    tag: str | tuple[str, str] | None = None
    created: TimeRange | None = None


def bundle(kind: type[V], given: V | None, keywords: Mapping[str, Any], name: str,
           error: type[InvalidInput] = InvalidArguments) -> V:
    """The value object of a call: ``given``, or one built from the simple ``keywords`` it stands for.

    Args:
        kind: the value object's class (a dataclass).
        given: the value object the caller passed, if any.
        keywords: the call's simple keywords among ``kind``'s fields.
        name: the parameter that takes the value object (for messages).
        error: the error to raise (the caller's own kind of bad input).

    Raises:
        InvalidArguments: (or ``error``) ``given`` is not a ``kind``, or comes with keywords it stands for.
    """
    if given is None:
        return kind(**keywords)
    if not isinstance(given, kind):
        raise error(f"{name} must be a {kind.__name__}, got {type(given).__name__}")
    if keywords:
        raise error(f"give {name}={kind.__name__}(...) or {', '.join(f'{k}=' for k in sorted(keywords))}, "
                               "not both")
    return given


def unknown_keywords(keywords: Mapping[str, Any], known: frozenset[str], function: str) -> None:
    """Refuse keywords that are no option of ``function``.

    Raises:
        InvalidArguments: naming the unknown keywords and the known ones.
    """
    unknown = sorted(keywords.keys() - known)
    if unknown:
        raise InvalidArguments(f"{function}() got unknown keyword(s) {', '.join(unknown)}; "
                               f"its options are {', '.join(sorted(known))}")


#: The keywords ``created=TimeRange(...)`` replaces in the listing functions (one release).
TIME_RANGE_KEYWORDS = frozenset(f.name for f in fields(TimeRange))


def created_within(created: TimeRange | None, deprecated: Mapping[str, Any], function: str) -> TimeRange:
    """The creation-time range of a listing call: ``created``, or one built from the deprecated
    ``since=`` / ``until=`` keywords (with a ``DeprecationWarning``).

    Raises:
        InvalidArguments: an unknown keyword; ``created`` is not a TimeRange or comes with the keywords.
    """
    unknown_keywords(deprecated, TIME_RANGE_KEYWORDS, function)
    if deprecated:
        shown = ", ".join(f"{k}=..." for k in sorted(deprecated))
        warnings.warn(f"{function}({shown}) is deprecated: use {function}(created=TimeRange({shown}))",
                      DeprecationWarning, stacklevel=3)
    return bundle(TimeRange, created, deprecated, "created")
