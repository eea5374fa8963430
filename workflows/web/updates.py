"""The run page's update form: send an update, wait a little for the answer, show what came back."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..client import update_run
from ..errors import UpdateError, UpdateFailed, UpdateRefused, UpdateRunEnded, UpdateTimeout

#: How long the page waits for the run's answer (the request stays stored after it).
UPDATE_WAIT = 10.0
#: How each update error is shown: its outcome's word.
OUTCOMES: tuple[tuple[type[UpdateError | UpdateTimeout], str], ...] = (
    (UpdateRefused, "refused"), (UpdateFailed, "failed"), (UpdateTimeout, "not answered yet"),
    (UpdateRunEnded, "run ended"),
)


@dataclass(frozen=True)
class UpdateOutcome:
    """What the page shows: the outcome's word and the answer (JSON text) or the error's message."""

    outcome: str
    text: str
    update_id: str


def send_and_wait(run_id: str, name: str, payload: Any, update_id: str) -> UpdateOutcome:
    """Send update ``name`` (once per ``update_id``) and wait up to :data:`UPDATE_WAIT` for its answer.

    Raises:
        RunNotFound, InvalidName, SerializationError: as ``update_run`` (the page refuses them).
    """
    try:
        answer = update_run(run_id, name, payload, update_id=update_id, timeout=UPDATE_WAIT)
    except (UpdateError, UpdateTimeout) as exc:  # (an UpdateTimeout is a Timeout, not an UpdateError)
        outcome = next(word for kind, word in OUTCOMES if isinstance(exc, kind))
        return UpdateOutcome(outcome, str(exc), update_id)
    return UpdateOutcome("answered", json.dumps(answer, indent=2, sort_keys=True), update_id)
