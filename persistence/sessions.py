"""Signed-out dashboard sessions: one item each in the idempotency table, until the session's expiry."""

from __future__ import annotations

from datetime import datetime, timezone

from pynamodb.exceptions import DoesNotExist

from .base import StoreBase

#: The key prefix of a signed-out session's item (a user's idempotency key would need the
#: SHA-256 of an unknown random session id to meet one).
SIGNED_OUT_PREFIX = "dashboard-signed-out#"


class SessionStore(StoreBase):
    """``end_session`` and ``session_ended``: the dashboard's sign-out, seen by every web process."""

    def end_session(self, session_hash: str, until: float) -> None:
        """Mark a session signed out until ``until`` (its expiry), when DynamoDB's TTL removes the
        item. One PutItem; a retry of it (its response lost) writes the same item again."""
        item = self.m.Guard(SIGNED_OUT_PREFIX + session_hash, run_id="-", created_at=self.now(),
                            retain_until=datetime.fromtimestamp(until, timezone.utc))
        with self.errors("sign out a dashboard session"):
            item.save()

    def session_ended(self, session_hash: str) -> bool:
        """Whether a session was signed out (one consistent GetItem)."""
        try:
            with self.errors("read a dashboard session"):
                self.m.Guard.get(SIGNED_OUT_PREFIX + session_hash, consistent_read=True)
        except DoesNotExist:
            return False
        return True
