"""The writes of hooks: creation with the op's outcome, its completion (which wakes the run), expiry, closing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ....errors import HookClosed, HookExpired, StorageError
from ...model.hooks import refusal
from ...model.records import EventRecord, HookRecord, RunRecord, TimerRecord, event_seq
from ...model.states import EventStatus, HookStatus, OpKind
from ..plans import A, Check, Put, Set, Update, plan
from ..rules import check_item_size, new_request
from .base import LIVE_COND, WritesBase, carries
from .items import COMPLETED_AT, hook_item


class HookWrites(WritesBase):
    """Hook items, found by their token's hash (see the HookStore port)."""

    if TYPE_CHECKING:
        def find_run(self, run_id: str) -> RunRecord | None: ...

        def get_outcome(self, run_id: str, pos: int) -> EventRecord | None: ...

        def get_hook(self, token_hash: str) -> HookRecord | None: ...

        def hooks_for_run(self, run_id: str) -> list[HookRecord]: ...

    def create_hook(self, hook: HookRecord, timer: TimerRecord | None, run_id: str, pos: int,
                    data: str) -> EventRecord | None:
        """Store the hook, its expiry timer and the op's outcome in one transaction while the run
        is live; the recorded outcome (this call's or a concurrent replay's), or None if it ended."""
        event = EventRecord(run_id=run_id, seq=event_seq(pos), kind=OpKind.HOOK, status=EventStatus.CREATED,
                            at=self.now(), name=hook.name, data=data)
        expiry = [] if timer is None else [Put("timers", self.timer_item(timer))]
        if self.commit(plan("create hook", Put("hooks", hook_item(hook), A("token_hash").missing()), *expiry,
                            Put("history", self.event_item(event), A("seq").missing()),
                            Check("runs", (run_id,), LIVE_COND))):
            return event
        existing = self.get_outcome(run_id, pos)
        if existing is None:
            run = self.find_run(run_id)
            if run is None or run.is_terminal:
                return None
            raise StorageError(f"hook of run {run_id} at {pos} could not be created")
        return existing

    def complete_hook(self, token_hash: str, payload: str) -> HookRecord:
        """Complete a pending, unexpired hook exactly once and wake its run, in one transaction.

        Raises:
            HookNotFound, HookExpired, HookClosed, HookAlreadyResumed: why it was refused.
        """
        check_item_size({"payload": payload})
        hook, now = self.get_hook(token_hash), self.now()
        refused = refusal(hook, now)
        if refused is not None or hook is None:
            raise refused or HookExpired("hook expired")
        req = new_request()
        cond = A("token_hash").exists() & (A("status") == HookStatus.PENDING) & (
            A("expires_at").missing() | (A("expires_at") > now))
        done = self.commit(plan("complete hook", Update("hooks", (token_hash,), (
            Set("status", HookStatus.RESUMED), Set("payload", payload), Set(COMPLETED_AT, now), Set("req", req)), cond),
            Update("runs", (hook.run_id,), self.wake_actions(), LIVE_COND), token=req,
            own=carries("hooks", (token_hash,), req)))
        after = self.get_hook(token_hash)
        if done.applied and after is not None:
            return after
        if done.reasons and done.reasons[0] is None:  # the hook was pending: its run has ended
            raise HookClosed(f"the run of hook {hook.name!r} has ended")
        raise refusal(after, now) or HookExpired("hook expired")

    def expire_hook(self, token_hash: str) -> bool:
        """Mark a pending hook expired; False if it was completed or closed first (a retry is True)."""
        req = new_request()
        return self.commit(plan("expire hook", Update("hooks", (token_hash,), (Set("status", HookStatus.EXPIRED),
                                                                              Set("req", req)),
                                                      A("status") == HookStatus.PENDING),
                                own=carries("hooks", (token_hash,), req))).applied

    def close_hooks(self, run_id: str) -> int:
        """Close every pending hook of an ended run; return how many."""
        return sum(1 for hook in self.hooks_for_run(run_id) if hook.status == HookStatus.PENDING and self.commit(plan(
            "close hook", Update("hooks", (hook.token_hash,), (Set("status", HookStatus.CLOSED),),
                                 A("status") == HookStatus.PENDING))).applied)
