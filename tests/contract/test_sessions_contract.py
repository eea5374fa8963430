"""Signed-out dashboard sessions: one item per session, seen by every store client, with its TTL."""

from __future__ import annotations

import secrets


def test_a_signed_out_session_is_ended_for_every_reader(store) -> None:  # type: ignore[no-untyped-def]
    session, other = secrets.token_hex(32), secrets.token_hex(32)
    assert not store.session_ended(session)
    store.end_session(session, until=store.now() + 3600)
    store.end_session(session, until=store.now() + 3600)  # a retry of a lost response: the same item
    assert store.session_ended(session)
    assert not store.session_ended(other)


def test_the_item_carries_its_ttl_and_is_no_idempotency_key_of_a_run(store) -> None:  # type: ignore[no-untyped-def]
    session = secrets.token_hex(32)
    until = store.now() + 7200
    store.end_session(session, until=until)
    assert store.run_for_key(session) is None  # its key has a prefix of its own
    if hasattr(store, "guards"):
        item = store.guards.get("dashboard-signed-out#" + session)
    else:
        item = store.m.Guard.get("dashboard-signed-out#" + session, consistent_read=True).attribute_values
    assert int(item["retain_until"].timestamp() if hasattr(item["retain_until"], "timestamp")
               else item["retain_until"]) == int(until)
