"""Every state and kind the engine stores, as enums: one module, one meaning per word.

Each is a ``str`` enum: a member equals its stored string (``RunStatus.COMPLETED == "completed"``)
and is written as that string, so items stored before these types read the same. Code compares a
state with a member, never with a string literal (``tests/architecture/test_states.py``).
"""

from __future__ import annotations

import enum


class _Word(str, enum.Enum):
    """A stored word: prints, formats and serialises as its value."""

    def __str__(self) -> str:
        return str(self.value)


class RunStatus(_Word):
    """The states of a run."""

    PENDING = "pending"
    DELAYED = "delayed"  # created with a later start time: a ``start`` timer starts it (core.admission.delayed)
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    CONTINUED = "continued"


#: Statuses of a run that has ended; nothing is written to it afterwards.
TERMINAL = frozenset(s.value for s in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED,
                                       RunStatus.TIMED_OUT, RunStatus.CONTINUED))
#: Statuses of a run that may still act.
LIVE = frozenset(s.value for s in RunStatus) - TERMINAL


class OpKind(_Word):
    """What a durable call (an op) of a workflow is; recorded with its outcome."""

    STEP = "step"
    SLEEP = "sleep"
    HOOK = "hook"
    HOOK_WAIT = "hook_wait"
    SIGNAL = "signal"
    CHILD = "child"
    CHILD_RESULT = "child_result"
    PARALLEL = "parallel"
    ATTEMPT = "attempt"  # a failed attempt of a step (not an outcome)
    END = "end"  # the run was ended (cancelled, timed out...) before this op had an outcome
    TAGS = "tags"  # set_tags: the run's tags after the call
    PATCH = "patch"  # a ``patched(id)`` marker: this run took the new path of a change
    CHILD_END = "child_end"  # how a child (its chain's last run) ended, written by that end (not an outcome)
    VALUE = "value"  # a value taken once and replayed: ``now()``, ``uuid4()``, ``random()`` (core.replay.deterministic)
    EVENT = "event"  # set_event(key, value): the value set (the latest is also kept per key, core.ops.events)
    STREAM = "stream"  # write_stream(value): the entry appended (also kept as a stream item, core.ops.events)
    UPDATE = "update"  # an update handled between two ops: its request (the answer is kept apart, core.replay.updates)
    FIRST_OF = "first_of"  # first_of(...): the race's winner and its value (core.ops.first)


class TimerKind(_Word):
    """What a durable timer does when it comes due."""

    SLEEP = "sleep"
    HOOK_TIMEOUT = "hook_timeout"
    SIGNAL_TIMEOUT = "signal_timeout"
    RETRY = "retry"  # send a step's next attempt
    WAKE = "wake"  # an inline step's backoff passed: wake the run
    DEADLINE = "deadline"  # the run's max_duration
    START = "start"  # a delayed run's start time: wake it to start (core.admission.delayed)
    PARENT_CLOSE = "parent_close"  # an ended parent's children to close by their policy (core.replay.children)


class EventStatus(_Word):
    """How an op (or a record kept beside it) came out: the ``status`` of a history record."""

    STARTED = "started"  # a child was started at the op (its end is a ``child_end`` record)
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"  # an ``end`` record, or a child that ended cancelled
    TIMED_OUT = "timed_out"  # a signal's or a hook's wait timed out, or a child that ran out of time
    CONTINUED = "continued"
    RECEIVED = "received"  # a signal was taken
    FIRED = "fired"  # a sleep's timer came due
    CREATED = "created"  # a hook was created
    RESUMED = "resumed"  # a hook's wait took its payload
    SET = "set"  # set_event / set_tags: the value set
    LATEST = "latest"  # an event key's latest value, kept apart from the op's record
    APPENDED = "appended"  # write_stream: an entry appended
    WON = "won"  # first_of: the candidate that won
    RECORDED = "recorded"  # a value taken once and replayed (now(), uuid4(), random())
    REFUSED = "refused"  # an update its validator refused


class HookStatus(_Word):
    """The states of a hook: ``pending`` until it is resumed, expires, or its run ends (closed)."""

    PENDING = "pending"
    RESUMED = "resumed"
    CLOSED = "closed"
    EXPIRED = "expired"


class ScheduleState(_Word):
    """The states of a schedule."""

    ACTIVE = "active"
    PAUSED = "paused"


class BatchState(_Word):
    """A batch's states: ``running`` until its last page is done, then ``completed``; ``stopped``
    when an operator stopped it first; ``failed`` when its chunks kept failing (``MAX_STALLS``)."""

    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    FAILED = "failed"


class CandidateKind(_Word):
    """What a ``first_of`` candidate is."""

    STEP = "step"
    TIMER = "timer"
    SIGNAL = "signal"
    HOOK = "hook"
    CHILD = "child"
