"""The client's side of updates (``core.replay.updates``; docs/updates.md): store a request, look for its answer.

``workflows.update_run`` stores the request (once per update id) with the wake of the chain's
current run, then polls the answer item: one GetItem of it and one of the run per poll, backing
off to :data:`MAX_POLL`.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ... import codec
from ...durations import Duration, to_seconds
from ...errors import RunNotFound, UpdateFailed, UpdateRefused, UpdateRunEnded, UpdateTimeout
from ..model.embed import embed
from ..model.names import check_name
from ..model.records import EventRecord, RunStatus, SignalRecord
from ..model.states import EventStatus
from ..replay.updates import REQUEST_NAME, check_update_id, find_answer, request_key
from ..storage.chains import MAX_HOPS, chain_anchor, current_run

if TYPE_CHECKING:
    from ..engine import Engine
    from ..storage.ports import Store

#: The longest pause between two polls for an answer.
MAX_POLL = 1.0


def send_update(engine: Engine, run_id: str, name: str, payload: Any = None,
                update_id: str | None = None) -> tuple[str, str]:
    """Store the request of update ``name`` for run ``run_id`` (once per ``update_id``) and wake the
    chain's current run; return the update id and the run whose answer to wait for first.

    A request answered already (a retry) is not stored again."""
    check_name(name, "update name")
    update_id = check_update_id(update_id) if update_id is not None else uuid.uuid4().hex
    if lookup_answer(engine.store, run_id, update_id, ended_ok=True) is not None:
        return update_id, run_id
    data = codec.dumps(payload, what=f"payload of update {name!r}", limit=engine.settings.max_payload_bytes)
    run = current_run(engine.store, run_id)
    anchor = chain_anchor(run)  # requests are kept under it, like signals: their objects too
    data = engine.payloads.offload(data, f"payload of update {name!r}", anchor)
    request = SignalRecord(run_id=anchor, signal_key=request_key(update_id), name=REQUEST_NAME,
                           payload=embed({"id": update_id, "name": name}, data), sent_at=engine.now())
    # One write stores the request and wakes the run; a run that continued meanwhile is followed to its
    # successor. A False with the run still live means the request is stored already (a retry).
    while not run.is_terminal and not engine.store.put_update(request, run.run_id):
        latest = current_run(engine.store, run.run_id)
        if latest.run_id == run.run_id and not latest.is_terminal:
            break
        run = latest
    if run.is_terminal:
        raise UpdateRunEnded(f"run {run_id} has ended ({run.status}); update {name!r} not sent")
    engine.resume_if_suspended(run.run_id)
    return update_id, run.run_id


def lookup_answer(store: Store, run_id: str, update_id: str, *, ended_ok: bool = False) -> EventRecord | None:
    """The answer to ``update_id`` from run ``run_id`` or a run its chain continued to, or None while
    the chain is live.

    Raises:
        UpdateRunEnded: the chain ended without answering (unless ``ended_ok``).
        RunNotFound: no run has this id.
    """
    run = store.find_run(run_id)
    if run is None:
        raise RunNotFound(run_id)
    for _ in range(MAX_HOPS):
        answer = find_answer(store, run.run_id, update_id)
        if answer is not None:
            return answer
        if not run.is_terminal:
            return None
        if run.status == RunStatus.CONTINUED and run.continued_to:
            run = store.find_run(run.continued_to) or current_run(store, run.run_id)
            continue
        answer = find_answer(store, run.run_id, update_id)  # answered just before it ended
        if answer is not None or ended_ok:
            return answer
        raise UpdateRunEnded(f"run {run.run_id} ended ({run.status}) before it answered update {update_id!r}")
    return None


def answer_value(answer: EventRecord) -> str | None:
    """The payload text of a completed update's answer, or its error raised."""
    if answer.status == EventStatus.COMPLETED:
        return answer.data
    if answer.status == EventStatus.REFUSED:
        raise UpdateRefused(f"refused: {answer.error} (update id {answer.name})")
    raise UpdateFailed(f"failed: {answer.error} (update id {answer.name})")


def timed_out(run_id: str, update_id: str, limit: str) -> str:
    """The message of an UpdateTimeout."""
    return (f"run {run_id} did not answer update {update_id!r} within {limit}; "
            "the request stays stored and the run may still apply it")


def wait_for_answer(store: Store, run_id: str, update_id: str, timeout: Duration | None,
                    pause: Callable[[float], None] = time.sleep, poll: float = 0.1) -> str | None:
    """The payload text of the answer to ``update_id`` (see :func:`update_run`), polling until it is
    given or ``timeout`` (None: no limit) passes."""
    limit = None if timeout is None else to_seconds(timeout, what="update timeout")
    deadline = None if limit is None else time.monotonic() + limit
    while True:
        answer = lookup_answer(store, run_id, update_id)
        if answer is not None:
            return answer_value(answer)
        if deadline is not None and time.monotonic() >= deadline:
            raise UpdateTimeout(timed_out(run_id, update_id, f"{limit}s"))
        pause(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
        poll = min(poll * 1.5, MAX_POLL)
