"""Plain records that the store hands to the engine (no PynamoDB types leak out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, TypeVar

TERMINAL = frozenset({"completed", "failed", "cancelled", "timed_out", "continued"})

OUTCOME_SUB = 999  # history sub-slot of an op's outcome; attempts use 1..998


def event_seq(pos: int, sub: int = OUTCOME_SUB) -> int:
    """Return the history sort key of op ``pos`` (``sub`` 1..998: attempt records)."""
    return pos * 1000 + sub


@dataclass
class RunRecord:
    """One workflow run as stored."""

    run_id: str
    workflow: str
    status: str
    created_at: float
    updated_at: float = 0.0
    args: str = "[[],{}]"
    ended_at: float | None = None
    result: str | None = None
    error: str | None = None
    cursor: int = -1
    waiting: dict[str, Any] | None = None
    wake_seq: int = 0
    lease_expires_at: float | None = None
    recoveries: int = 0
    cancel_requested: bool = False
    deadline: float | None = None
    idempotency_key: str | None = None
    parent_run_id: str | None = None
    parent_pos: int | None = None
    continued_from: str | None = None
    continued_to: str | None = None
    schedule_id: str | None = None
    fire_time: float | None = None

    @property
    def is_terminal(self) -> bool:
        """Whether the run has ended."""
        return self.status in TERMINAL


@dataclass
class EventRecord:
    """One history record: an op's outcome (sub 999) or a failed attempt."""

    run_id: str
    seq: int
    kind: str
    status: str
    at: float
    name: str | None = None
    data: str | None = None
    error: str | None = None
    attempt: int | None = None
    started_at: float | None = None

    @property
    def pos(self) -> int:
        """The op position this record belongs to."""
        return self.seq // 1000

    @property
    def is_outcome(self) -> bool:
        """Whether this is the op's final outcome (not an attempt record)."""
        return self.seq % 1000 == OUTCOME_SUB


@dataclass
class HookRecord:
    """A hook, found by the hash of its token."""

    token_hash: str
    run_id: str
    pos: int
    name: str
    status: str
    created_at: float
    expires_at: float | None = None
    schema: str | None = None
    payload: str | None = None
    resumed_at: float | None = None


@dataclass
class TimerRecord:
    """A durable timer: sleep, hook or signal timeout, retry backoff, deadline."""

    timer_id: str
    kind: str
    run_id: str
    due_at: float
    pos: int | None = None
    data: str | None = None


@dataclass
class SignalRecord:
    """A signal sent to a run, ordered by ``signal_key``."""

    run_id: str
    signal_key: str
    name: str
    payload: str | None
    sent_at: float


@dataclass
class BranchRecord:
    """The outcome of one branch of a fan-out."""

    index: int
    data: str | None
    error: str | None


T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    """One page of a listing; ``next_cursor`` is None on the last page."""

    items: list[T] = field(default_factory=list)
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> T:
        return self.items[index]
