"""Child runs: detached starts and parent-close policies (docs/guide.md, "Child workflows").

A child's start is an op of its parent: its record names the child and how it is linked
(:class:`ChildLink`). A linked child's end writes how it ended into its parent's history with
the parent's wake (``Engine._child_end``), so the parent never reads the child's items. A
*detached* child is not linked: it is created with no parent, so its end touches nothing of the
parent, and the parent cannot wait for it (``ChildDetached``); it outlives the parent.

When a parent ends (any end, a continue-as-new included), each linked child is closed by its
policy: ``cancel`` ends it at once (a step it still runs records nothing; an executor running
its inline steps stops at its next lease renewal), ``request_cancel`` asks it to cancel (it ends
at its next suspension point, after the step it runs, which sees ``cancel_requested()``),
``abandon`` leaves it running. Without a policy a child is asked to cancel when its parent is
cancelled or times out, and left running otherwise (the rule before policies).

The parent's end writes a ``parent_close`` timer, due at once, in the write that ends it when
it has children to close. The process that ended it closes them and deletes the timer; if it
dies first, beat fires the timer, which reads the ended parent's history (its own items, kept
for the retention after its end) and closes them. Closing twice is harmless: a cancel of an
ended run does nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...durations import Duration
from ...errors import InvalidChildOptions
from ..model.records import OpKind, RunStatus, TimerKind, TimerRecord

if TYPE_CHECKING:
    from ..engine import Engine
    from .history_cache import RunHistory

CANCEL, REQUEST_CANCEL, ABANDON = "cancel", "request_cancel", "abandon"
#: The parent-close policies a child start takes.
POLICIES = (CANCEL, REQUEST_CANCEL, ABANDON)
#: Ends of a parent that ask its children without a policy to cancel.
_DEFAULT_CLOSING = frozenset({RunStatus.CANCELLED.value, RunStatus.TIMED_OUT.value})


def check_child_options(detached: Any, policy: Any) -> tuple[bool, str | None]:
    """A child start's ``detached`` and ``parent_close_policy``, checked.

    Raises:
        InvalidChildOptions: ``detached`` is not a bool, the policy is unknown, or a detached child
            has a policy other than ``abandon`` (a detached child is never closed by its parent).
    """
    if not isinstance(detached, bool):
        raise InvalidChildOptions(f"detached must be True or False, got {detached!r}")
    if policy is not None and policy not in POLICIES:
        raise InvalidChildOptions(f"parent_close_policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    if detached and policy not in (None, ABANDON):
        raise InvalidChildOptions(f"a detached child outlives its parent: parent_close_policy={policy!r} "
                                  "does not apply to it")
    return detached, None if detached else policy


@dataclass(frozen=True)
class ChildStart:
    """The start options of a child run that the core acts on (``StartOptions``' fields of these names).

    Attributes:
        delay: start it this long from the parent's now (a duration).
        start_at: start it at this aware datetime.
        detached: start it detached.
        parent_close_policy: what its parent's end does to it.
    """

    delay: Duration | None = None
    start_at: datetime | None = None
    detached: bool = False
    parent_close_policy: str | None = None


@dataclass(frozen=True)
class ChildLink:
    """A child a run started, as its start's record holds it.

    Attributes:
        run_id: the child's run id.
        policy: its parent-close policy, None for the default rule.
        detached: started detached (no link: never closed, never waited for).
    """

    run_id: str
    policy: str | None = None
    detached: bool = False

    def to_data(self) -> str:
        """The start record's data."""
        data: dict[str, Any] = {"run_id": self.run_id}
        if self.policy is not None:
            data["policy"] = self.policy
        if self.detached:
            data["detached"] = True
        return json.dumps(data)

    @classmethod
    def from_data(cls, data: str | None) -> ChildLink:
        """The link a start record holds (records written before policies hold only the id)."""
        info = json.loads(data or "{}")
        return cls(str(info["run_id"]), info.get("policy"), bool(info.get("detached")))

    def describe(self) -> str:
        """The child as ``runs show`` lists it: its id, and how it is linked if not by default."""
        how = "detached" if self.detached else self.policy
        return self.run_id if how is None else f"{self.run_id} ({how})"

    def closing(self, status: str) -> str | None:
        """What a parent's end with ``status`` does to this child: CANCEL, REQUEST_CANCEL or None."""
        if self.detached or self.policy == ABANDON:
            return None
        if self.policy is None:
            return REQUEST_CANCEL if status in _DEFAULT_CLOSING else None
        return self.policy


def to_close(children: list[ChildLink], status: str) -> list[tuple[str, str]]:
    """The children a parent's end with ``status`` closes, and how, in start order."""
    return [(child.run_id, how) for child in children if (how := child.closing(status)) is not None]


def links_of(history: RunHistory) -> list[ChildLink]:
    """The children a run started, from its history, in start order."""
    return [ChildLink.from_data(e.data) for _, e in sorted(history.outcomes.items()) if e.kind == OpKind.CHILD]


def close_timer_id(run_id: str) -> str:
    """The id of a parent's ``parent_close`` timer."""
    return f"{run_id}#close"


def close_timer(run_id: str, status: str, now: float) -> TimerRecord:
    """The timer an ending parent writes when it has children to close: due at once."""
    return TimerRecord(timer_id=close_timer_id(run_id), kind=TimerKind.PARENT_CLOSE.value, run_id=run_id, due_at=now,
                       data=json.dumps({"status": status}))


def close_children(engine: Engine, closing: list[tuple[str, str]]) -> None:
    """Close each child as its policy says (idempotent: an ended child is left as it is)."""
    for child_id, how in closing:
        woken = engine.request_cancel(child_id)
        if how == CANCEL and woken is not None and not woken.is_terminal:
            engine.cancel_now(woken)  # at once; a live executor's claim makes it stop at its renewal


def fire_close(engine: Engine, timer: TimerRecord) -> None:
    """A ``parent_close`` timer: close the ended parent's children (its process died before it did)."""
    status = json.loads(timer.data or "{}").get("status", "")
    close_children(engine, to_close(links_of(engine.cache.load(timer.run_id)), status))
