"""Hook tokens: recognisable, unguessable, and never read as a command-line option."""

from __future__ import annotations

import base64

from workflows.core.waits import TOKEN_PREFIX, hash_token, new_token


def test_token_has_prefix_and_256_random_bits() -> None:
    tokens = {new_token() for _ in range(1000)}
    assert len(tokens) == 1000
    for token in tokens:
        assert token.startswith(TOKEN_PREFIX) and not token.startswith("-")
        raw = base64.urlsafe_b64decode(token[len(TOKEN_PREFIX):] + "=")
        assert len(raw) == 32


def test_lookup_hash_is_sha256_hex_and_not_the_token() -> None:
    token = new_token()
    digest = hash_token(token)
    assert len(digest) == 64 and int(digest, 16) >= 0 and token not in digest
