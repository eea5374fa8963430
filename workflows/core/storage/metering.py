"""Requests per run: each process counts the AWS requests it makes for a run, in memory.

An adapter counts each request (``count_dynamodb``, ``count_sqs``) against the run named by
the current context (``attributed``: set around a resume, a step attempt, a worker task or a
timer's firing); a request outside any such context is not attributed. The counts wait here
until this process writes that run's item anyway: the store takes them (``flush``) and adds
them to the item in the same write, so counting costs no request, and puts them back if the
write did not apply. Nothing here changes a write's condition or order.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator

#: DynamoDB operations that read or write items, as botocore names them.
DDB_READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
DDB_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
#: Runs with counts waiting in one process, at most; the least recently counted are dropped.
MAX_PENDING_RUNS = 10_000

_current: ContextVar[str | None] = ContextVar("workflows_metered_run", default=None)


@dataclass
class Tally:
    """Requests counted for one run: DynamoDB reads and writes, SQS sends."""

    ddb_reads: int = 0
    ddb_writes: int = 0
    sqs_sends: int = 0

    def __bool__(self) -> bool:
        return bool(self.ddb_reads or self.ddb_writes or self.sqs_sends)

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts to these."""
        self.ddb_reads += other.ddb_reads
        self.ddb_writes += other.ddb_writes
        self.sqs_sends += other.sqs_sends


class Meter:
    """The counts of one process, per run, until a write of the run carries them (thread-safe)."""

    def __init__(self, max_runs: int = MAX_PENDING_RUNS) -> None:
        self.max_runs = max_runs
        self._pending: OrderedDict[str, Tally] = OrderedDict()
        self._lock = threading.Lock()
        #: Counts dropped because too many runs had counts waiting (never written).
        self.dropped = Tally()

    def count(self, run_id: str, tally: Tally) -> None:
        """Add ``tally`` to the counts waiting for ``run_id``."""
        with self._lock:
            waiting = self._pending.pop(run_id, None) or Tally()
            waiting.add(tally)
            self._pending[run_id] = waiting
            while len(self._pending) > self.max_runs:
                self.dropped.add(self._pending.popitem(last=False)[1])

    def take(self, run_id: str) -> Tally:
        """Remove and return the counts waiting for ``run_id`` (empty if none)."""
        with self._lock:
            return self._pending.pop(run_id, None) or Tally()

    def waiting(self, run_id: str) -> Tally:
        """A copy of the counts waiting for ``run_id``."""
        with self._lock:
            found = self._pending.get(run_id)
            return Tally(found.ddb_reads, found.ddb_writes, found.sqs_sends) if found else Tally()


#: This process's meter.
meter = Meter()


@contextlib.contextmanager
def attributed(run_id: str) -> Iterator[None]:
    """Attribute the requests made in this context to ``run_id``."""
    token = _current.set(run_id)
    try:
        yield
    finally:
        _current.reset(token)


def current_run() -> str | None:
    """The run this context's requests are attributed to, if any."""
    return _current.get()


def count_dynamodb(operation: str) -> None:
    """Count one DynamoDB request (botocore's operation name) for the current run, if any."""
    run_id = _current.get()
    if run_id is None:
        return
    if operation in DDB_WRITES:
        meter.count(run_id, Tally(ddb_writes=1))
    elif operation in DDB_READS:
        meter.count(run_id, Tally(ddb_reads=1))


def count_sqs() -> None:
    """Count one SQS send for the current run, if any."""
    run_id = _current.get()
    if run_id is not None:
        meter.count(run_id, Tally(sqs_sends=1))


class Flush:
    """Counts taken for one write of a run's item; set ``applied`` once the write applied."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally
        self.applied = False


@contextlib.contextmanager
def flush(run_id: str) -> Iterator[Flush]:
    """Take the counts waiting for ``run_id`` for a write of its item; they are put back
    unless the write sets ``applied`` (its condition failed, or it raised)."""
    taken = Flush(meter.take(run_id))
    try:
        yield taken
    finally:
        if taken.tally and not taken.applied:
            meter.count(run_id, taken.tally)
