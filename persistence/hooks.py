"""Hooks: found by the hash of their token, completed once by a conditional update."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from workflows.core.model.records import HookRecord
from workflows.core.storage.aws_actions import aws_actions
from workflows.core.storage.writes.items import hook_record

from .base import StoreBase, plain


class HookStore(StoreBase):
    """Hook items; the raw token is never stored here, only its hash."""

    @aws_actions("dynamodb:GetItem@hooks")
    def get_hook(self, token_hash: str) -> HookRecord | None:
        """Return the hook with this token hash, or None."""
        try:
            with self.errors("read hook"):
                return hook_record(plain(self.m.Hook.get(token_hash, consistent_read=True)))
        except DoesNotExist:
            return None

    @aws_actions("dynamodb:Query@hooks/index", "dynamodb:BatchGetItem@hooks")
    def hooks_for_run(self, run_id: str) -> list[HookRecord]:
        """Return a run's hooks in op order (index Query, paged)."""
        with self.errors("list hooks"):
            keys = [item.token_hash for item in self.m.Hook.by_run.query(run_id)]
        with self.errors("read hooks"):
            items = {i.token_hash: hook_record(plain(i)) for i in self.m.Hook.batch_get(keys)} if keys else {}
        return sorted(items.values(), key=lambda h: h.pos)

