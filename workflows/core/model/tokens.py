"""Hook tokens: derived from a stored nonce and a secret key, so only their hash and the
nonce are ever stored, and a replay derives the same token again."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from ...errors import ConfigurationError

TOKEN_PREFIX = "wh_"


def hash_token(token: str) -> str:
    """The stored form of a hook token (the hooks table is keyed by it)."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_nonce() -> str:
    """128 random bits from ``secrets``; stored in the history (useless without the key)."""
    return secrets.token_urlsafe(16)


def new_token() -> str:
    """A random token of the same form, tied to no hook (for tests and tools)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def derive_token(secret: str | None, run_id: str, pos: int, nonce: str) -> str:
    """``wh_`` and the URL-safe HMAC-SHA256 (256 bits) of ``run_id:pos:nonce`` under ``secret``.

    The prefix makes tokens easy to recognise (secret scanners, logs) and keeps them
    from starting with ``-``, which a command line would read as an option.

    Raises:
        ConfigurationError: no secret is configured.
    """
    if not secret:
        raise ConfigurationError("hooks need a secret key: set WORKFLOWS_HOOK_SECRET (at least 32 bytes, "
                                 "the same on every worker)")
    digest = hmac.new(secret.encode(), f"{run_id}:{pos}:{nonce}".encode(), hashlib.sha256).digest()
    return TOKEN_PREFIX + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
