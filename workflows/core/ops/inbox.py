"""A run's inbox: the signals and update requests its chain was sent and has not taken yet.

Both are kept under the chain's anchor in the signals table (``core.storage.chains``). An update
request is deleted when the run answers it, so every stored request waits. A signal stays
stored after a run took it, until the run continues as new or the items expire: the taken
ones are those the current run's history names (a ``wait_for_signal`` that received it, or a
``first_of`` race a signal won). This is an operator's view, read on demand: the engine
takes signals by replaying the history, not from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..model.embed import unembed
from ..model.records import EventRecord, RunRecord, SignalRecord
from ..model.states import EventStatus, OpKind
from ..replay.updates import REQUEST_NAME, request_order
from ..storage.chains import chain_anchor, current_run
from ..storage.timeline import run_history

if TYPE_CHECKING:
    from ..storage.ports import Store


@dataclass(frozen=True)
class Waiting:
    """A signal or an update request that waits for a run.

    Attributes:
        kind: ``"signal"`` or ``"update"``.
        name: the signal's name, or the update's (its handler's) name.
        key: the signal's key in the signals table, or the update's id.
        sent_at: when the sender stored it (the sender's clock: shown, not used for order).
        order: its place in the chain's order (the store's number; the run takes them by it).
        payload: the payload as stored (JSON, or a reference to an offloaded object).
    """

    kind: str
    name: str
    key: str
    sent_at: float
    order: int
    payload: str | None


def taken_signals(history: list[EventRecord]) -> set[str]:
    """The keys of the signals that ``history``'s ops took."""
    taken: set[str] = set()
    for event in history:
        if not event.is_outcome or not event.data:
            continue
        if event.kind == OpKind.SIGNAL.value and event.status == EventStatus.RECEIVED:
            field = "key"
        elif event.kind == OpKind.FIRST_OF.value:
            field = "signal"
        else:
            continue
        try:
            meta, _ = unembed(event.data, "payload")
        except (ValueError, AttributeError):  # data of an older format without the key: not a signal's
            continue
        if isinstance(meta, dict) and meta.get(field):
            taken.add(str(meta[field]))
    return taken


def waiting(store: Store, run_id: str) -> list[Waiting]:
    """The update requests, then the signals, waiting for ``run_id``'s chain (its current run),
    each in the store's order (the order the run takes them in).

    Raises:
        RunNotFound: no run has this id.
    """
    run = current_run(store, run_id)
    return waiting_for(store, run, run_history(store, run.run_id))


def waiting_for(store: Store, run: RunRecord, history: list[EventRecord]) -> list[Waiting]:
    """:func:`waiting` for the chain's current run ``run``, whose history the caller read."""
    taken = taken_signals(history)
    found = [_waiting(item) for item in store.stored_signals(chain_anchor(run)) if item.signal_key not in taken]
    return sorted(found, key=lambda w: (w.kind != OpKind.UPDATE, w.order, w.key))


def _waiting(item: SignalRecord) -> Waiting:
    if item.name != REQUEST_NAME:
        return Waiting("signal", item.name, item.signal_key, item.sent_at, _signal_order(item), item.payload)
    try:
        info, payload = unembed(item.payload or "{}", "payload")
    except ValueError:
        info, payload = {}, None
    update_id = str(info.get("id") or item.signal_key.split("#", 1)[1])
    return Waiting("update", str(info.get("name", "?")), update_id, item.sent_at, request_order(item)[0], payload)


def _signal_order(item: SignalRecord) -> int:
    """The number in a signal's key (``name#<number>#nonce``: core.storage.writes.signals), or its sender's
    clock for a key of another form."""
    number = item.signal_key.split("#")[1:2]
    return int(number[0]) if number and number[0].isdigit() else int(item.sent_at * 1e9)
