"""Hooks: found by the hash of their token, resumed once by a conditional update."""

from __future__ import annotations

import functools
from typing import Any

from pynamodb.exceptions import DoesNotExist

from workflows.core.hooks import refusal
from workflows.core.records import HookRecord
from workflows.errors import HookClosed, HookExpired

from .base import LIVE_STATUSES, StoreBase, check_item_size, new_request


def _hook_record(item: Any) -> HookRecord:
    return HookRecord(token_hash=item.token_hash, run_id=item.run_id, pos=int(item.pos), name=item.name,
                      status=item.status, created_at=item.created_at, expires_at=item.expires_at,
                      schema=item.schema, payload=item.payload, resumed_at=item.resumed_at)


class HookStore(StoreBase):
    """Hook items; the raw token is never stored here, only its hash."""

    def hook_item(self, hook: HookRecord) -> Any:
        """Return the model item of ``hook``."""
        return self.m.Hook(hook.token_hash, run_id=hook.run_id, pos=hook.pos, name=hook.name, status=hook.status,
                           created_at=hook.created_at, expires_at=hook.expires_at, schema=hook.schema)

    def get_hook(self, token_hash: str) -> HookRecord | None:
        """Return the hook with this token hash, or None."""
        try:
            with self.errors("read hook"):
                return _hook_record(self.m.Hook.get(token_hash, consistent_read=True))
        except DoesNotExist:
            return None

    def resume_hook(self, token_hash: str, payload: str) -> HookRecord:
        """Resume a pending, unexpired hook exactly once, and wake its run, in one transaction.

        The wake (``wake_seq`` bumped, a short lease if the run has none) makes the run
        resume even if the caller dies right after; a retry of this very request (its
        response lost) is recognised and succeeds.

        Raises:
            HookNotFound, HookExpired, HookClosed, HookAlreadyResumed: why it was refused
            (HookClosed also when the hook is pending but its run has ended).
        """
        check_item_size({"payload": payload})
        hook = self.get_hook(token_hash)
        now = self.now()
        refused = refusal(hook, now)
        if refused is not None or hook is None:
            raise refused or HookExpired("hook expired")
        Hook, Run, req = self.m.Hook, self.m.Run, new_request()
        cond = (Hook.status == "pending") & (Hook.expires_at.does_not_exist() | (Hook.expires_at > now))
        actions = [Hook.status.set("resumed"), Hook.payload.set(payload), Hook.resumed_at.set(now), Hook.req.set(req)]

        def build(tx: Any) -> None:
            tx.update(Hook(token_hash), actions=actions, condition=cond & Hook.token_hash.exists())
            tx.update(Run(hook.run_id), actions=self.wake_actions(), condition=Run.status.is_in(*LIVE_STATUSES))

        reasons = self.transact_reasons("resume hook", build)
        after = self.get_hook(token_hash)
        ours = after is not None and after.status == "resumed" and self.carries("read hook", Hook, token_hash, req)
        if reasons is None or ours:
            assert after is not None
            return after
        if reasons[0] is None:  # the hook was pending: its run has ended
            raise HookClosed(f"the run of hook {hook.name!r} has ended")
        raise refusal(after, now) or HookExpired("hook expired")

    def expire_hook(self, token_hash: str) -> bool:
        """Mark a pending hook expired; False if it was resumed or closed first (a retry of
        this very request, its response lost, counts as done)."""
        Hook, req = self.m.Hook, new_request()
        return self.conditional("expire hook", lambda: Hook(token_hash).update(
            actions=[Hook.status.set("expired"), Hook.req.set(req)], condition=Hook.status == "pending"),
            own=lambda: self.carries("read hook", self.m.Hook, token_hash, req))

    def hooks_for_run(self, run_id: str) -> list[HookRecord]:
        """Return a run's hooks in op order (index Query, paged)."""
        with self.errors("list hooks"):
            keys = [item.token_hash for item in self.m.Hook.by_run.query(run_id)]
        with self.errors("read hooks"):
            items = {i.token_hash: _hook_record(i) for i in self.m.Hook.batch_get(keys)} if keys else {}
        return sorted(items.values(), key=lambda h: h.pos)

    def close_hooks(self, run_id: str) -> int:
        """Close every pending hook of an ended run; return how many were closed."""
        Hook, closed = self.m.Hook, 0

        def close(token_hash: str) -> None:
            Hook(token_hash).update(actions=[Hook.status.set("closed")], condition=Hook.status == "pending")

        for hook in self.hooks_for_run(run_id):
            if hook.status == "pending" and self.conditional("close hook", functools.partial(close, hook.token_hash)):
                closed += 1
        return closed
