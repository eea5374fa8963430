"""Debounced starts: ``wf.options(debounce="5s", debounce_key="k").start(...)`` (docs/flow-control.md).

The first start with a key opens a window: it takes the window item (slot number 0 of
``debounce:<workflow>#<key>`` in the flow table, expiring at the window's end) for a new run id,
then creates that run, tagged with the key. A start while the window is open pushes its
arguments into that run and moves the window's end to ``now + debounce`` (at most ``debounce_max``
after the run was created), in one transaction; every caller gets the same run. The run waits
until the window's end, then starts with the last arguments (``workflows.core.admission.debounce``). A
start after the end opens the next window. Every write is conditional: concurrent starts agree on
one run per window, and a retried write is recognised (``acquire_slot`` and ``create_run`` by
request id; a push repeats harmlessly).
"""

from __future__ import annotations

import reprlib
import uuid
from dataclasses import dataclass
from typing import Any

from .core.admission.debounce import DEBOUNCE_TAG, WINDOW_SLOT_NUMBER, window_of
from .core.engine import Engine
from .core.model.registry import WorkflowDef
from .core.storage.tags import MAX_VALUE_LENGTH, check_tag
from .durations import Duration, to_seconds
from .errors import InvalidDebounce, InvalidTags, StorageError

#: Rounds of reading the window and writing it before a start gives up (every lost round means
#: another start changed the window: it only repeats under heavy contention).
MAX_ROUNDS = 16


@dataclass(frozen=True)
class Debounce:
    """A start's debounce options: the window in seconds, the key, and the longest total wait."""

    window: float
    key: str
    longest: float | None = None


def debounce_options(debounce: Duration | None, key: Any, longest: Duration | None,
                     idempotency_key: str | None) -> Debounce | None:
    """Check a start's debounce options; None when the start is not debounced.

    Raises:
        InvalidDebounce: a key or cap without a window, a missing or bad key, a cap shorter than the
            window, or ``idempotency_key`` with a debounce (a debounced start has its own key).
        InvalidDuration: a window or cap that is not a duration.
    """
    if debounce is None:
        if key is not None or longest is not None:
            raise InvalidDebounce("debounce_key and debounce_max need debounce= (the window, e.g. '5s')")
        return None
    window = to_seconds(debounce, what="debounce", allow_zero=False)
    if not isinstance(key, str) or not key or len(key) > MAX_VALUE_LENGTH:
        raise InvalidDebounce(f"debounce needs debounce_key, a non-empty string of at most {MAX_VALUE_LENGTH} "
                              f"characters, got {reprlib.repr(key)}")
    try:
        check_tag(DEBOUNCE_TAG, key)  # the run carries it as a tag
    except InvalidTags as exc:
        raise InvalidDebounce(f"debounce_key {reprlib.repr(key)} cannot be a tag value: {exc}") from None
    cap = None if longest is None else to_seconds(longest, what="debounce_max", allow_zero=False)
    if cap is not None and cap < window:
        raise InvalidDebounce(f"debounce_max ({cap:g}s) must be at least the debounce window ({window:g}s)")
    if idempotency_key is not None:
        raise InvalidDebounce("a debounced start takes no idempotency_key: starts with one debounce_key "
                              "within the window already share one run")
    return Debounce(window, key, cap)


def start_debounced(engine: Engine, definition: WorkflowDef, args: str, options: Debounce,
                    **fields: Any) -> str:
    """Start a run of ``definition`` with ``args`` (codec text, not yet offloaded) debounced by
    ``options``, or collapse into the run whose window is open; return its run id. A large ``args``
    is written to the prefix of the run it goes to (core/storage/payloads.py), before that run's write.

    Raises:
        StorageError: the window kept changing under this start for ``MAX_ROUNDS`` rounds.
    """
    store, window = engine.store, window_of(definition.name, options.key)
    fields["tags"] = {**(fields.get("tags") or {}), DEBOUNCE_TAG: options.key}
    for _ in range(MAX_ROUNDS):
        now = engine.now()
        open_for = next((s.holder for s in store.slot_holders(window)
                         if s.number == WINDOW_SLOT_NUMBER and s.holder and (s.expires_at or 0) > now), None)
        if open_for is None:
            run_id = str(uuid.uuid4())
            if store.acquire_slot(window, 1, run_id, now + options.window) is None:
                continue  # another start opened it first: collapse into its run
            if engine.create_run(definition, _offload(engine, definition, args, run_id), run_id=run_id,
                                 **fields)[1]:
                return run_id
            continue
        run = store.find_run(open_for)
        if run is None:  # its opener has not created it yet, or died before: whoever creates it wins
            if engine.create_run(definition, _offload(engine, definition, args, open_for), run_id=open_for,
                                 **fields)[1]:
                return open_for
            continue
        ends = now + options.window
        if options.longest is not None:
            ends = min(ends, run.created_at + options.longest)
        if store.push_debounce(window, open_for, _offload(engine, definition, args, open_for), ends):
            return open_for
    raise StorageError(f"debounced start of {definition.name!r} (key {options.key!r}): the window kept "
                       f"changing for {MAX_ROUNDS} rounds; try again")


def _offload(engine: Engine, definition: WorkflowDef, args: str, run_id: str) -> str:
    return engine.payloads.offload(args, f"arguments of workflow {definition.name!r}", run_id)
