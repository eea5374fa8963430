"""Flow-control options of a step: a global concurrency limit and a global rate limit,
each optionally per key (the value of one of the step's arguments). See docs/flow-control.md."""

from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from ...errors import RegistrationError

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d*(?:\.\d+)?)\s*(s|sec|second|m|min|minute|h|hour)\s*$")
_PER = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0, "h": 3600.0, "hour": 3600.0}


@dataclass(frozen=True)
class StepLimits:
    """How a step is limited across the whole fleet.

    Attributes:
        concurrency: at most this many attempts run at once (per key value, with ``concurrency_key``).
        concurrency_key: the argument whose value the concurrency limit is counted per.
        rate: attempts started per second, at most (per key value, with ``rate_key``).
        burst: tokens the rate bucket holds (a burst after an idle spell); 1 by default.
        rate_key: the argument whose value the rate limit is counted per.
    """

    concurrency: int | None = None
    concurrency_key: str | None = None
    rate: float | None = None
    burst: float = 1.0
    rate_key: str | None = None


def parse_rate(value: Any) -> float:
    """Attempts per second from ``"20/s"``, ``"100/m"``, ``"5/10s"``, ``"1/h"`` or a number (per second).

    Raises:
        RegistrationError: not a positive, finite rate.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        per_second = float(value)
    elif isinstance(value, str) and (match := _RATE.match(value.lower())):
        count, span, unit = match.groups()
        seconds = (float(span) if span else 1.0) * _PER[unit]
        per_second = float(count) / seconds if seconds > 0 else math.inf
    else:
        raise RegistrationError(f"@step rate must be like '20/s', '100/m', '5/10s' or a number per second, "
                                f"got {value!r}")
    if not math.isfinite(per_second) or per_second <= 0:
        raise RegistrationError(f"@step rate must be positive, got {value!r}")
    return per_second


def step_limits(fn: Callable[..., Any], options: dict[str, Any]) -> StepLimits | None:
    """Validate the flow-control options of ``@step`` on ``fn``; None when it has none."""
    concurrency, rate = options.get("concurrency"), options.get("rate")
    concurrency_key, rate_key = options.get("concurrency_key"), options.get("rate_key")
    if concurrency is None and rate is None:
        if concurrency_key is not None or rate_key is not None or options.get("burst") is not None:
            raise RegistrationError("@step concurrency_key needs concurrency=, rate_key and burst need rate=")
        return None
    if concurrency is not None and (not isinstance(concurrency, int) or isinstance(concurrency, bool)
                                    or not 1 <= concurrency <= 1000):
        raise RegistrationError(f"@step concurrency must be an int from 1 to 1000, got {concurrency!r}")
    if concurrency is None and concurrency_key is not None:
        raise RegistrationError("@step concurrency_key needs concurrency=")
    per_second = None if rate is None else parse_rate(rate)
    if rate is None and (rate_key is not None or options.get("burst") is not None):
        raise RegistrationError("@step rate_key and burst need rate=")
    burst = options.get("burst", 1)
    if not isinstance(burst, (int, float)) or isinstance(burst, bool) or not 1 <= burst <= 1e6:
        raise RegistrationError(f"@step burst must be a number from 1 to 1000000, got {burst!r}")
    for name, key in (("concurrency_key", concurrency_key), ("rate_key", rate_key)):
        if key is not None and key not in _parameters(fn):
            raise RegistrationError(f"@step {name} {key!r} is not a parameter of {getattr(fn, '__name__', fn)!r}")
    if options.get("inline"):
        raise RegistrationError("@step with concurrency or rate cannot be inline: a limited step waits off "
                                "the thread, so it must be dispatched")
    return StepLimits(concurrency, concurrency_key, per_second, float(burst), rate_key)


@dataclass(frozen=True)
class WorkflowLimits:
    """How many runs of a workflow may be live at once (per value of ``concurrency_key``)."""

    concurrency: int
    concurrency_key: str | None = None


def workflow_limits(fn: Callable[..., Any], options: dict[str, Any]) -> WorkflowLimits | None:
    """Validate ``@workflow(concurrency=N, concurrency_key="arg")`` on ``fn``; None without a limit.

    Raises:
        RegistrationError: N is not an int from 1 to 1000, the key is not a parameter of ``fn``,
            or a key is given without a limit.
    """
    concurrency, key = options.get("concurrency"), options.get("concurrency_key")
    if concurrency is None:
        if key is not None:
            raise RegistrationError("@workflow concurrency_key needs concurrency=")
        return None
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not 1 <= concurrency <= 1000:
        raise RegistrationError(f"@workflow concurrency must be an int from 1 to 1000, got {concurrency!r}")
    if key is not None and key not in _parameters(fn):
        raise RegistrationError(f"@workflow concurrency_key {key!r} is not a parameter of "
                                f"{getattr(fn, '__name__', fn)!r}")
    return WorkflowLimits(concurrency, key)


def key_value(fn: Callable[..., Any], name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    """The value of argument ``name`` of a call of ``fn``, as a limit key (JSON unless a string)."""
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    value = bound.arguments[name]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


def _parameters(fn: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()
