"""A per-process cache of run histories, so a resume reads only what it has not seen."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..model.records import MAX_ATTEMPT_SUB, EventRecord

if TYPE_CHECKING:
    from ..storage.ports import Store


@dataclass
class RunHistory:
    """The outcomes (by op position) and failed-attempt counts (the largest attempt number
    recorded, which keeps growing past the 998 attempt sub-positions) of one run."""

    outcomes: dict[int, EventRecord] = field(default_factory=dict)
    attempts: dict[int, int] = field(default_factory=dict)
    last_seq: int = -1
    complete_below: int = 0  # every position below this has an outcome
    #: How the child started at each position ended (sub 0, written by the child's end: it may come
    #: after later records, so a missing one is read by key, never assumed absent).
    child_ends: dict[int, EventRecord] = field(default_factory=dict)

    def add(self, event: EventRecord, *, read_in_order: bool = True) -> None:
        """Add a record.

        ``read_in_order``: the record came from a query that returned everything
        before it, so ``last_seq`` may move past it. A record this process wrote
        moves ``last_seq`` only when no earlier outcome is missing.
        """
        seq = event.seq
        if event.is_child_end:
            self.child_ends[event.pos] = event
        elif event.is_outcome:
            self.outcomes[event.pos] = event
            while self.complete_below in self.outcomes:
                self.complete_below += 1
        else:
            self.attempts[event.pos] = max(self.attempts.get(event.pos, 0), event.attempt or 0)
            if seq % 1000 == MAX_ATTEMPT_SUB:
                seq -= 1  # the last attempt sub-position is rewritten by later attempts: read it again
        if read_in_order or self.complete_below > event.pos:
            self.last_seq = max(self.last_seq, seq)

    def copy(self) -> RunHistory:
        """Return a copy that a replay may extend without touching the cache."""
        return RunHistory(dict(self.outcomes), dict(self.attempts), self.last_seq, self.complete_below,
                          dict(self.child_ends))


class HistoryCache:
    """LRU of run histories, shared by the threads of a worker process."""

    def __init__(self, store: Store, size: int = 2000) -> None:
        self.store, self.size = store, size
        self._runs: OrderedDict[str, RunHistory] = OrderedDict()
        self._lock = threading.Lock()
        self.queries = 0

    def _entry(self, run_id: str) -> RunHistory:
        with self._lock:
            entry = self._runs.get(run_id)
            if entry is None:
                entry = self._runs[run_id] = RunHistory()
                if len(self._runs) > self.size:
                    self._runs.popitem(last=False)
            else:
                self._runs.move_to_end(run_id)
            return entry

    def load(self, run_id: str, *, known_through: int | None = None) -> RunHistory:
        """Return the run's history, querying only records after the cached ones.

        ``known_through``: the caller just recorded the outcome at this position
        and the run cannot have outcomes past it, so if every earlier position is
        cached no query is needed.
        """
        entry = self._entry(run_id)
        if known_through is None or entry.complete_below <= known_through:
            self.queries += 1
            for event in self.store.read_history(run_id, after_seq=entry.last_seq):
                entry.add(event)
        return entry.copy()

    def remember(self, event: EventRecord) -> None:
        """Add a record this process wrote."""
        self._entry(event.run_id).add(event, read_in_order=False)

    def forget(self, run_id: str) -> None:
        """Drop a run (it ended)."""
        with self._lock:
            self._runs.pop(run_id, None)
