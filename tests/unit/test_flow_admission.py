"""The admission of a limited step (core/flow.py) on the memory ports."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.replay.ports import memory_engine
from tests.testing import flow_flows
from workflows import codec
from workflows.core.flow import admission
from workflows.core.records import StepMessage
from workflows.errors import Throttled
from workflows.memory import MemoryStore


def message(attempt: int = 1) -> StepMessage:
    return StepMessage("flow_both", "run-1", 0, attempt, codec.dumps([[1], {}]))


def throttle(name: str) -> Callable[[str, Callable[[], Any]], Any]:
    def interceptor(request: str, apply: Callable[[], Any]) -> Any:
        if request == name:
            raise Throttled(f"{request}: throttled")
        return apply()
    return interceptor


def test_a_slot_taken_before_a_failed_token_read_is_given_back() -> None:
    engine = memory_engine()
    store = engine.store
    assert isinstance(store, MemoryStore)
    step = flow_flows.flow_both.definition
    store.interceptor = throttle("read bucket")
    with pytest.raises(Throttled), admission(engine, step, message()):
        pytest.fail("admitted without a token")
    store.interceptor = None
    assert store.slot_holders("step:flow_both") == []  # not held until its lease passes


def test_an_admitted_attempt_holds_its_slot_until_it_ends() -> None:
    engine = memory_engine()
    step = flow_flows.flow_both.definition
    with admission(engine, step, message()) as admitted:
        assert admitted
        assert [s.holder for s in engine.store.slot_holders("step:flow_both")] == ["run-1#0##1"]
        with admission(engine, step, message(2)) as second:  # another attempt: no slot, it waits
            assert not second
    assert engine.store.slot_holders("step:flow_both") == []
