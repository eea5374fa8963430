"""Hook tokens are derived from a stored nonce and the hook secret: no stored item holds one."""

from __future__ import annotations

import json
import uuid

import pytest

import workflows.client
from persistence import DynamoStore
from persistence.provision import create_tables
from tests.e2e import payload_flows
from workflows.core.engine import Engine
from workflows.core.model.records import HookRecord
from workflows.core.model.registry import get_workflow
from workflows.core.model.tokens import hash_token
from workflows.errors import ConfigurationError, HookAlreadyResumed
from workflows.memory import RecordingTransport
from workflows.settings import Settings

SECRET = "test-hook-secret-" + "k" * 32


@pytest.fixture(scope="module")
def own_settings(settings: Settings) -> Settings:
    own = settings.with_(table_prefix=f"hk{uuid.uuid4().hex[:6]}-", hook_secret=SECRET)
    create_tables(own)
    return own


def started(settings: Settings) -> tuple[Engine, str]:
    store = DynamoStore(settings)
    engine = Engine(store, RecordingTransport(), settings)
    run_id, _ = engine.create_run(get_workflow(payload_flows.guarded_approval.name), "[[],{}]")
    return engine, run_id


def stored_text(store: DynamoStore) -> str:
    """Every item of every table of this deployment, as text (a test may scan)."""
    return "\n".join(json.dumps(item.attribute_values, default=str) for model in store.m.all()
                     for item in model.scan())


def test_no_stored_item_holds_the_token_and_a_replay_derives_it_again(own_settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    engine, run_id = started(own_settings)
    engine.resume(run_id)
    [token] = payload_flows.SEEN_TOKENS[run_id]
    assert token.startswith("wh_") and len(token) >= 46
    store = engine.store
    assert token not in repr(store.read_history(run_id)) and token not in repr(store.hooks_for_run(run_id))
    assert store.get_hook(hash_token(token)) is not None
    assert token not in stored_text(store)
    engine.resume(run_id)  # a replay
    Engine(DynamoStore(own_settings), RecordingTransport(), own_settings).resume(run_id)  # another process
    assert payload_flows.SEEN_TOKENS[run_id] == [token] * 3
    monkeypatch.setattr(workflows.client, "get_engine", lambda: engine)
    assert workflows.client.resume_hook(token, {"ok": True}).run_id == run_id
    engine.resume(run_id)
    assert (store.get_run(run_id).status, store.get_run(run_id).result) == ("completed", '{"ok":true}')
    with pytest.raises(HookAlreadyResumed):
        workflows.client.resume_hook(token, {"ok": False})
    assert token not in stored_text(store)


def test_a_history_holding_the_raw_token_still_replays(own_settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    engine, run_id = started(own_settings)
    token = "wh_" + uuid.uuid4().hex
    old = HookRecord(token_hash=hash_token(token), run_id=run_id, pos=0, name="approve", status="pending",
                     created_at=engine.now(), expires_at=None)
    engine.store.create_hook(old, None, run_id, 0,
                             json.dumps({"token": token, "hash": hash_token(token), "expires_at": None}))
    engine.resume(run_id)
    assert payload_flows.SEEN_TOKENS[run_id] == [token]
    monkeypatch.setattr(workflows.client, "get_engine", lambda: engine)
    workflows.client.resume_hook(token, "yes")
    engine.resume(run_id)
    assert engine.store.get_run(run_id).result == '"yes"'


def test_a_hook_needs_the_secret(own_settings) -> None:  # type: ignore[no-untyped-def]
    engine, run_id = started(own_settings.with_(hook_secret=None))
    with pytest.raises(ConfigurationError, match="WORKFLOWS_HOOK_SECRET"):
        engine.resume(run_id)
    assert engine.store.get_run(run_id).status == "pending"  # not failed: a worker with the secret resumes it
    assert engine.store.hooks_for_run(run_id) == []
    Engine(engine.store, RecordingTransport(), own_settings).resume(run_id)
    assert len(payload_flows.SEEN_TOKENS[run_id]) == 1


def test_a_replay_under_another_secret_is_refused(own_settings) -> None:  # type: ignore[no-untyped-def]
    engine, run_id = started(own_settings)
    engine.resume(run_id)
    other = own_settings.with_(hook_secret="another-secret-" + "z" * 32)
    with pytest.raises(ConfigurationError, match="WORKFLOWS_HOOK_SECRET"):
        Engine(DynamoStore(other), RecordingTransport(), other).resume(run_id)
