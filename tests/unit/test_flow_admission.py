"""The admission of a limited step (core/flow.py) on the memory ports."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.replay.ports import memory_engine
from tests.testing import flow_flows
from tests.waiting import wait_for
from workflows import codec
from workflows.core.flow import admission
from workflows.core.records import StepMessage
from workflows.core.steps import admitted_attempt
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


@pytest.mark.parametrize("name", ["flow_overrun_sync", "flow_overrun_async"])
def test_a_timed_out_attempt_keeps_its_slot_until_its_body_returns(name: str) -> None:
    """Python cannot stop a timed-out body (an async one may ignore its cancel): its slot stays
    held, so a retry cannot run beside it, until the body returns (issue 23, item 4)."""
    engine = memory_engine()
    step = getattr(flow_flows, name).definition
    limit = f"step:{name}"
    flow_flows.BODY_MAY_RETURN.clear()
    flow_flows.BODY_RETURNED.clear()
    first = StepMessage(name, "run-1", 0, 1, codec.dumps([[1], {}]))
    try:
        outcome = admitted_attempt(engine, step, first, "wf")
        assert outcome is not None and outcome.status == "retry" and "timeout" in (outcome.error or "")
        assert not flow_flows.BODY_RETURNED.is_set()
        assert [s.holder for s in engine.store.slot_holders(limit)] == ["run-1#0##1"]  # kept, body runs on
        with admission(engine, step, StepMessage(name, "run-1", 0, 2, first.args)) as retry:
            assert not retry  # the retry waits for the slot
    finally:
        flow_flows.BODY_MAY_RETURN.set()
    assert flow_flows.BODY_RETURNED.wait(10)
    # released by the body's thread once it has returned
    wait_for(lambda: not engine.store.slot_holders(limit), 10, poll=0.01, what="the slot is released")
