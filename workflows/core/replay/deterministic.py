"""``now()``, ``uuid4()`` and ``random()``: values a workflow takes once and gets again on every replay.

Inside a workflow function each call is an op of its own (kind ``value``, named after the
helper): the first run past the history takes the value (the engine's clock, a fresh UUID, a
fresh float) and records it with one conditional write; a replay returns the recorded value and
writes nothing. Two resumes racing at the same op agree: the one that loses the write returns
the winner's value. Outside a workflow function (in a step, a client, a test) the helpers are
the standard library's, so code shared by steps and workflows can call them anywhere.

One record per call, never batched: a value may leave the workflow in the very next op (an
inline step's arguments, a child's), so it must be durable before the code goes on.
"""

from __future__ import annotations

import json
import random as _random
import uuid
from datetime import datetime, timezone
from typing import Any, Callable

from ..model.control import StaleHistory
from ..model.records import OpKind
from .context import WorkflowContext, current_workflow

_system_random = _random.SystemRandom()


def now() -> datetime:
    """The current time as an aware UTC datetime; inside a workflow, recorded once and the same on replay
    (the engine's clock: the testing kit's virtual one under ``WorkflowEnv``)."""
    ctx = current_workflow()
    if ctx is None:
        return datetime.now(timezone.utc)
    return datetime.fromtimestamp(_taken(ctx, "now", ctx.now), timezone.utc)


def uuid4() -> uuid.UUID:
    """A random UUID; inside a workflow, recorded once and the same on replay."""
    ctx = current_workflow()
    if ctx is None:
        return uuid.uuid4()
    return uuid.UUID(hex=_taken(ctx, "uuid4", lambda: uuid.uuid4().hex))


def random() -> float:
    """A random float in [0.0, 1.0); inside a workflow, recorded once and the same on replay."""
    ctx = current_workflow()
    if ctx is None:
        return _random.random()
    return float(_taken(ctx, "random", _system_random.random))


def _taken(ctx: WorkflowContext, name: str, take: Callable[[], Any]) -> Any:
    """The value of op ``value name`` at the next position: recorded, or taken now and recorded."""
    pos, event = ctx.next_op(OpKind.VALUE, name)
    if event is None:
        event = ctx.record(pos, OpKind.VALUE, "recorded", name=name, data=json.dumps(take()))
        if (event.kind, event.name) != (OpKind.VALUE.value, name):
            raise ctx.halt(StaleHistory(pos))  # a resume of other code took the position first: replay
    return json.loads(event.data or "null")


__all__ = ["now", "random", "uuid4"]
