"""The store writes of workflow limits and debounce, applied twice (a lost response the SDK
retried): each is recognised as the same request."""

from __future__ import annotations

from typing import Any, Callable

from tests.replay.ports import memory_engine
from workflows.core.model.records import RunRecord
from workflows.memory import MemoryStore


def applied_twice(store: MemoryStore, request: str) -> None:
    """Every ``request`` is applied, its response lost, and applied again (the retry)."""

    def intercept(name: str, apply: Callable[[], Any]) -> Any:
        if name == request:
            try:
                apply()
            except Exception:  # noqa: BLE001 - the first try's outcome is what was lost
                pass
        return apply()

    store.interceptor = intercept


def test_a_retried_pass_is_recognised() -> None:
    store = memory_engine().store
    assert isinstance(store, MemoryStore)
    slot = store.acquire_slot("workflow:w", 1, "first", store.now() + 10**9)
    applied_twice(store, "pass slot")
    assert store.pass_slot("workflow:w", slot, "first", "second") is True
    assert [s.holder for s in store.slot_holders("workflow:w")] == ["second"]


def test_a_retried_enqueue_keeps_its_one_place() -> None:
    store = memory_engine().store
    assert isinstance(store, MemoryStore)
    applied_twice(store, "enqueue waiter")
    assert store.enqueue_waiter("queue:workflow:w", 100, "a") == 100
    assert [(w.number, w.holder) for w in store.slot_holders("queue:workflow:w")] == [(100, "a")]


def test_a_retried_push_sets_the_same_values() -> None:
    store = memory_engine().store
    assert isinstance(store, MemoryStore)
    run = RunRecord(run_id="r1", workflow="w", status="pending", created_at=store.now(), args='[["a"],{}]')
    assert store.create_run(run)[1]
    store.acquire_slot("debounce:w#k", 1, "r1", store.now() + 5)
    applied_twice(store, "push debounce")
    assert store.push_debounce("debounce:w#k", "r1", '[["b"],{}]', store.now() + 8) is True
    assert store.get_run("r1").args == '[["b"],{}]'
    assert [s.expires_at for s in store.slot_holders("debounce:w#k")] == [store.now() + 8]
