"""What is not an argument: how a run starts, how a step retries, how a schedule behaves.

``RetryPolicy`` is the step's own policy (``workflows.core.registry.RetryPolicy``): its fields
are ``@step``'s retry keywords.

A workflow's own parameters never collide with these: they travel apart, the way Celery's
``apply_async(args, kwargs, **options)`` and Temporal's ``RetryPolicy`` keep them::

    order.options(tags={"shop": "eu"}, idempotency_key="o-1").start(order_id, tags=["gift"])
    order.apply_async(args=[order_id], kwargs={"tags": ["gift"]}, idempotency_key="o-1")

    @step(retry_policy=RetryPolicy(retries=5, retry_delay=2.0, max_delay=60.0))
    def charge(card: str) -> str: ...

    create_schedule(report, every="1h", policy=SchedulePolicy(overlap="buffer_one", catchup_window="1d"))

The simple keywords (``wf.start(..., tags=...)``, ``@step(retries=5)``, ``create_schedule(...,
overlap=...)``) keep working beside the value objects. A start option given to ``start()`` among
the workflow's arguments is still taken as an option, with a ``DeprecationWarning``, unless the
workflow has a parameter of that name: then it is the workflow's argument.
"""

from __future__ import annotations

import inspect
import warnings
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable, Mapping

from .core.registry import RetryPolicy
from .durations import Duration

__all__ = ["RETRY_KEYWORDS", "RetryPolicy", "SchedulePolicy", "StartOptions", "split_start_options"]


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
    """

    idempotency_key: str | None = None
    tags: Mapping[str, str] | None = None
    debounce: Duration | None = None
    debounce_key: str | None = None
    debounce_max: Duration | None = None

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
