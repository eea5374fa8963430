"""Hook tokens: recognisable, unguessable, derived from a nonce and the secret, and never
read as a command-line option; the secret is a setting that is never shown."""

from __future__ import annotations

import base64

import pytest

from workflows.core.model.tokens import TOKEN_PREFIX, derive_token, hash_token, new_nonce
from workflows.errors import ConfigurationError
from workflows.settings import Settings

SECRET = "s" * 32


def test_token_has_prefix_and_256_bits_that_depend_on_run_pos_nonce_and_secret() -> None:
    nonces = {new_nonce() for _ in range(1000)}
    assert len(nonces) == 1000 and all(len(base64.urlsafe_b64decode(n + "==")) == 16 for n in nonces)
    tokens = {derive_token(SECRET, "run", 0, nonce) for nonce in nonces}
    assert len(tokens) == 1000
    for token in tokens:
        assert token.startswith(TOKEN_PREFIX) and not token.startswith("-")
        raw = base64.urlsafe_b64decode(token[len(TOKEN_PREFIX):] + "=")
        assert len(raw) == 32
    token = derive_token(SECRET, "run", 0, "n")
    assert token == derive_token(SECRET, "run", 0, "n")
    assert len({token, derive_token(SECRET, "run", 1, "n"), derive_token(SECRET, "run2", 0, "n"),
                derive_token(SECRET, "run", 0, "m"), derive_token("t" * 32, "run", 0, "n")}) == 5


def test_no_secret_no_token() -> None:
    for secret in (None, ""):
        with pytest.raises(ConfigurationError, match="WORKFLOWS_HOOK_SECRET"):
            derive_token(secret, "run", 0, "n")


def test_lookup_hash_is_sha256_hex_and_not_the_token() -> None:
    token = derive_token(SECRET, "run", 0, new_nonce())
    digest = hash_token(token)
    assert len(digest) == 64 and int(digest, 16) >= 0 and token not in digest


def test_the_secret_setting_is_read_checked_and_never_shown() -> None:
    secret = "a-very-secret-value-" + "x" * 20
    settings = Settings.from_env({"WORKFLOWS_HOOK_SECRET": secret})
    assert settings.hook_secret == secret
    assert secret not in repr(settings) and secret not in str(settings)
    assert Settings.from_env({"WORKFLOWS_HOOK_SECRET": ""}).hook_secret is None
    with pytest.raises(ConfigurationError, match="WORKFLOWS_HOOK_SECRET must be at least 32 bytes"):
        Settings.from_env({"WORKFLOWS_HOOK_SECRET": "short"})
