"""The dashboard's signed-out sessions: one item each in the idempotency table, until the session's expiry."""

from __future__ import annotations

from ..plans import Put, plan
from .base import WritesBase

#: The key prefix of a signed-out session's item (a user's idempotency key would need the SHA-256
#: of an unknown random session id to meet one).
SIGNED_OUT_PREFIX = "dashboard-signed-out#"


class SessionWrites(WritesBase):
    """``end_session`` and ``session_ended`` (see the SessionStore port)."""

    def end_session(self, session_hash: str, until: float) -> None:
        """Mark a session signed out until ``until`` (its expiry, when TTL removes the item). One
        PutItem; a retry of it (its response lost) writes the same item again."""
        self.commit(plan("sign out a dashboard session", Put("idempotency", {
            "key": SIGNED_OUT_PREFIX + session_hash, "run_id": "-", "created_at": self.now(), "retain_until": until})))

    def session_ended(self, session_hash: str) -> bool:
        """Whether a session was signed out (one consistent GetItem)."""
        key = (SIGNED_OUT_PREFIX + session_hash,)
        return self.read_item("idempotency", key, "read a dashboard session") is not None
