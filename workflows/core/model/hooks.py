"""Why a hook token is refused: one rule, used by the client and every store."""

from __future__ import annotations

from ...errors import HookAlreadyResumed, HookClosed, HookError, HookExpired, HookNotFound
from .records import HookRecord
from .states import HookStatus


def refusal(hook: HookRecord | None, now: float) -> HookError | HookNotFound | None:
    """Why ``hook`` cannot be completed at ``now`` (None: it can)."""
    if hook is None:
        return HookNotFound()
    if hook.status == HookStatus.RESUMED:
        return HookAlreadyResumed("this hook token was already used")
    if hook.status == HookStatus.CLOSED:
        return HookClosed(f"the run of hook {hook.name!r} has ended")
    if hook.status == HookStatus.EXPIRED or (hook.expires_at is not None and now >= hook.expires_at):
        return HookExpired(f"hook {hook.name!r} expired")
    return None
