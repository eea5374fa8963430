"""Cost per run: attributes the requests made while the engine works on a run to that run.

An observer that sets the run of ``workflows.core.storage.metering`` around a resume, a step attempt
and a due timer's firing; the store and the transport count their requests against it, and
the run's next write carries the counts. It reads and writes nothing itself.
"""

from __future__ import annotations

from typing import ContextManager

from ..core.model.records import TimerRecord
from ..core.replay.observer import NullObserver, StepAttempt
from ..core.storage.metering import attributed


class RequestAttribution(NullObserver):
    """Attributes requests to the run being resumed, whose step runs, or whose timer fires."""

    def resume(self, run_id: str, recovering: bool) -> ContextManager[None]:
        return attributed(run_id)

    def attempt(self, op: StepAttempt) -> ContextManager[None]:
        return attributed(op.run_id)

    def timer(self, timer: TimerRecord, lag: float) -> ContextManager[None]:
        return attributed(timer.run_id)
