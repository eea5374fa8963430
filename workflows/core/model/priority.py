"""Priority: the level a run's messages and a step's messages are served at under a backlog.

SQS has no message priority, so a level is a queue: a message of level ``high`` goes to the
queue ``<queue>-high``, of ``normal`` to ``<queue>`` itself, of ``low`` to ``<queue>-low``
(:func:`queue_for`). A worker consumes the three queues of each of its queues and serves the
higher ones first when it has fewer free slots than messages waiting (``workflows.celery.sqs``).

A run's level is fixed when it starts (the start option ``priority=``, else its workflow's
``@workflow(priority=...)``, else ``normal``) and stored on the run record (``None`` for
normal), so recovery and every later resume are sent at the same level. A step's messages go
at the step's own ``@step(priority=...)``, else at its run's level.
"""

from __future__ import annotations

from typing import Any

from ...errors import InvalidPriority

HIGH, NORMAL, LOW = "high", "normal", "low"
#: The levels, highest first.
LEVELS = (HIGH, NORMAL, LOW)
#: The suffix of a level's queue (normal has none: its queue is the queue itself).
SUFFIXES = {HIGH: "-high", NORMAL: "", LOW: "-low"}
#: The longest suffix a queue name gets (queue names must leave room for it).
MAX_SUFFIX = max(len(s) for s in SUFFIXES.values())


def check_priority(value: Any, what: str) -> str | None:
    """The level ``value`` names, as stored: ``None`` for normal, else ``"high"`` or ``"low"``.

    Raises:
        InvalidPriority: ``value`` is not one of :data:`LEVELS`.
    """
    if value not in LEVELS or not isinstance(value, str):
        raise InvalidPriority(f"{what} {value!r} is not a priority: use one of {', '.join(repr(v) for v in LEVELS)}")
    return None if value == NORMAL else value


def run_priority(given: str | None, declared: str | None) -> str | None:
    """A new run's stored level: the start option ``given`` (checked), else the workflow's ``declared``."""
    return declared if given is None else check_priority(given, "start option priority")


def step_priority(declared: str | None, run_level: str | None) -> str | None:
    """The level a step's message goes at: the step's ``declared`` level, else its run's."""
    return declared if declared is not None else run_level


def queue_for(queue: str, level: str | None) -> str:
    """The queue a message of ``level`` bound for ``queue`` goes to."""
    return queue + SUFFIXES[level or NORMAL]


def queues_of(queue: str) -> list[str]:
    """The queues of every level of ``queue``, highest first."""
    return [queue_for(queue, level) for level in LEVELS]


def rank_of(queue: str) -> tuple[str, int]:
    """The queue whose level queue ``queue`` is, and its rank (0 highest): by its suffix, so a queue
    name of one's own must not end in ``-high`` or ``-low``."""
    for rank, level in enumerate(LEVELS):
        suffix = SUFFIXES[level]
        if suffix and queue.endswith(suffix):
            return queue[:-len(suffix)], rank
    return queue, LEVELS.index(NORMAL)


def with_levels(queues: list[str]) -> list[str]:
    """``queues`` and the level queues of each (a level queue given stays as it is), without repeats."""
    return list(dict.fromkeys(q for queue in queues
                              for q in ([queue] if rank_of(queue)[0] != queue else queues_of(queue))))
