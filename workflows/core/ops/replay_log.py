"""``workflows.logger``: logging from workflow code that a replay does not repeat.

A workflow function runs again from the start on every resume (after a hop, a sleep, a
recovery), so a plain ``logging`` call in its body logs again each time. The adapter drops a
record while the function replays what an earlier resume already ran: while the next op has
a recorded outcome, or an earlier resume already reached it (the run's cursor is past it, or
the run waits there). Code past that point runs for the first time and logs. A resume that
dies before recording its next op runs that stretch again, so a line can (rarely) be logged
twice: at least once, never once per replay.

Records carry ``run_id``, ``workflow`` and ``op`` (the next op position) in ``extra``. Outside a
workflow function the adapter logs as its logger does; in a step body it adds ``run_id`` and
``op`` (the step's position).
"""

from __future__ import annotations

import logging
from typing import Any, MutableMapping

from ..execution.attempts import current_step
from ..replay.context import WorkflowContext, current_workflow


def replaying(ctx: WorkflowContext) -> bool:
    """Whether the function of ``ctx`` is re-running code an earlier resume already ran."""
    pos, run = ctx.pos, ctx.run
    return pos in ctx.history.outcomes or pos < run.cursor or (pos == run.cursor and bool(run.waiting))


class ReplaySafeLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """A logger adapter for workflow code: records are dropped while the function replays.

    ``workflows.logger`` wraps the ``workflows.workflow`` logger; wrap your own with
    ``ReplaySafeLogger(logging.getLogger(__name__))``.
    """

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__(logger, {})

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        """Log unless the current workflow function is replaying."""
        ctx = current_workflow()
        if ctx is not None and replaying(ctx):
            return
        super().log(level, msg, *args, **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        """Add the run's ids to the record's ``extra`` (the caller's own ``extra`` keys win)."""
        ctx = current_workflow()
        ids: dict[str, Any] = {}
        if ctx is not None:
            ids = {"run_id": ctx.run.run_id, "workflow": ctx.run.workflow, "op": ctx.pos}
        else:
            step = current_step()
            if step is not None:
                ids = {"run_id": step.run_id, "op": step.pos}
        kwargs["extra"] = {**ids, **(kwargs.get("extra") or {})}
        return msg, kwargs


#: The replay-safe logger of workflow code (logger name ``workflows.workflow``).
logger = ReplaySafeLogger(logging.getLogger("workflows.workflow"))
