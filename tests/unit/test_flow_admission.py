"""The admission of a limited step (core/execution/flow.py) on the memory ports."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.replay.ports import memory_engine
from tests.testing import flow_flows
from tests.waiting import wait_for
from workflows import codec
from workflows.core.execution.flow import admission
from workflows.core.model.records import StepMessage
from workflows.core.ops.steps import admitted_attempt
from workflows.errors import Throttled
from workflows.memory import ManualClock, MemoryStore


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


def test_a_stalled_copy_of_an_attempt_never_frees_the_slot_its_second_copy_took() -> None:
    """A message delivered twice: the first copy stalls past its slot's lease and the second copy
    (the same holder) takes the slot. The first copy's release must not free the second's taking,
    or another attempt would run beside the second (simulator seed 3362)."""
    engine = memory_engine()
    clock = engine.clock
    assert isinstance(clock, ManualClock)
    step, limit = flow_flows.flow_both.definition, "step:flow_both"
    first, second = admission(engine, step, message()), admission(engine, step, message())
    assert first.__enter__()
    clock.advance(engine.settings.lease_seconds + 1)  # the first copy stalls: its slot's lease passes
    assert second.__enter__()  # the second copy of the same attempt takes the slot
    first.__exit__(None, None, None)  # the first copy's body returns: it gives back its own taking only
    assert [s.holder for s in engine.store.slot_holders(limit)] == ["run-1#0##1"]
    with admission(engine, step, message(2)) as other:
        assert not other  # the second copy still holds the slot: another attempt waits
    second.__exit__(None, None, None)
    assert engine.store.slot_holders(limit) == []
