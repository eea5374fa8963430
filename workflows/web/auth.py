"""The dashboard's credential: sessions, CSRF tokens and constant-time checks.

One secret, ``WORKFLOWS_DASHBOARD_TOKEN``, guards the dashboard. A person types it into
the login form once; the answer is a session cookie that holds a random session id, its
issue time and an HMAC of both keyed by the token (never the token itself). Scripts may
send ``Authorization: Bearer <token>`` instead. Every form that changes something carries
a CSRF token, an HMAC of the session id; a request authenticated by the header needs none,
since a browser never adds that header to a cross-site request by itself.

Every comparison of a secret uses :func:`hmac.compare_digest`. Changing the token ends
every session. Signing out ends one session on the server too: the SHA-256 of its id is
stored (``SessionStore.end_session``) until the session would have expired, and every web
process refuses a cookie whose session is stored there (see docs/dashboard.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

SESSION_COOKIE = "workflows_dashboard"
SESSION_SECONDS = 12 * 3600


def _mac(key: str, message: str) -> str:
    digest = hmac.new(key.encode(), message.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True)
class Credentials:
    """Checks the dashboard token and issues and verifies sessions and CSRF tokens."""

    token: str
    session_seconds: float = SESSION_SECONDS

    def token_matches(self, given: str | None) -> bool:
        """Whether ``given`` is the dashboard token (constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def bearer_matches(self, authorization: str | None) -> bool:
        """Whether an ``Authorization`` header carries the token as a bearer credential."""
        scheme, _, value = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(value.strip())

    def new_session(self, now: float | None = None) -> str:
        """A session cookie value: ``<id>.<issued>.<mac>``."""
        session_id = secrets.token_urlsafe(18)
        issued = str(int(time.time() if now is None else now))
        return f"{session_id}.{issued}.{_mac(self.token, f'session:{session_id}.{issued}')}"

    def session_id(self, cookie: str | None, now: float | None = None) -> str | None:
        """The id of a valid, unexpired session cookie; None for anything else."""
        parts = (cookie or "").split(".")
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        session_id, issued, mac = parts
        if not hmac.compare_digest(mac.encode(), _mac(self.token, f"session:{session_id}.{issued}").encode()):
            return None
        age = (time.time() if now is None else now) - int(issued)
        return session_id if 0 <= age <= self.session_seconds else None

    def expiry(self, cookie: str) -> float:
        """When a valid session cookie expires (epoch seconds)."""
        return int(cookie.split(".")[1]) + self.session_seconds

    def csrf_token(self, session_id: str) -> str:
        """The CSRF token of a session: forms carry it, actions check it."""
        return _mac(self.token, f"csrf:{session_id}")

    def csrf_matches(self, session_id: str, given: str | None) -> bool:
        """Whether a submitted CSRF token belongs to the session (constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.csrf_token(session_id).encode())


def session_hash(session_id: str) -> str:
    """The name a session is stored under when it is signed out (never the id itself)."""
    return hashlib.sha256(session_id.encode()).hexdigest()
