"""Debounced starts on the virtual clock: starts with one key within the window collapse into one
run, which starts with the last arguments once the window has passed."""

from __future__ import annotations

import pytest

from tests.testing import debounce_flows as flows
from workflows import apply_async
from workflows.core.admission.debounce import window_of
from workflows.errors import InvalidDebounce, InvalidDuration
from workflows.testing import WorkflowEnv


@pytest.fixture(autouse=True)
def _reset() -> None:
    flows.SENT.clear()


def test_starts_within_the_window_collapse_into_one_run_with_the_last_arguments(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.clock.now()
    first = workflow_env.apply_async(flows.digest, ["ann", ["a"]], debounce="5s", debounce_key="ann")
    workflow_env.advance("3s")
    second = workflow_env.apply_async(flows.digest, ["ann", ["a", "b"]], debounce="5s", debounce_key="ann")
    workflow_env.advance("3s")  # 6 s after the first start: the window was pushed to 8 s
    assert flows.SENT == []
    third = flows.digest.options(debounce="5s", debounce_key="ann").start("ann", ["a", "b", "c"])
    assert first.run_id == second.run_id == third.run_id
    workflow_env.run_until_idle()
    assert first.result() == ["a", "b", "c"]
    assert [(user, items) for user, items, _ in flows.SENT] == [("ann", ["a", "b", "c"])]
    assert flows.SENT[0][2] - began == pytest.approx(11, abs=0.5)  # the last start (6 s) + the window
    assert first.record().tags == {"debounce": "ann"}


def test_a_start_after_the_run_began_opens_a_new_window(workflow_env: WorkflowEnv) -> None:
    first = workflow_env.apply_async(flows.digest, ["bob", ["1"]], debounce="2s", debounce_key="bob")
    workflow_env.run_until_idle()
    second = workflow_env.apply_async(flows.digest, ["bob", ["2"]], debounce="2s", debounce_key="bob")
    workflow_env.run_until_idle()
    assert first.run_id != second.run_id
    assert (first.result(), second.result()) == (["1"], ["2"])


def test_keys_debounce_apart(workflow_env: WorkflowEnv) -> None:
    runs = [workflow_env.apply_async(flows.digest, [user, [user]], debounce="5s", debounce_key=user)
            for user in ("a", "b", "a")]
    workflow_env.run_until_idle()
    assert runs[0].run_id == runs[2].run_id != runs[1].run_id
    assert sorted(items[0] for _, items, _ in flows.SENT) == ["a", "b"]


def test_debounce_max_caps_the_total_wait(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.clock.now()
    handles = []
    for i in range(6):  # a start every 3 s would push a 5 s window forever
        handles.append(workflow_env.apply_async(flows.digest, ["cy", [str(i)]], debounce="5s",
                                                debounce_key="cy", debounce_max="10s"))
        workflow_env.advance("3s")
    workflow_env.run_until_idle()
    assert handles[0].run_id == handles[3].run_id  # starts at 0, 3, 6, 9 s collapse
    assert handles[4].run_id != handles[0].run_id  # at 12 s the first run had begun (capped at 10 s)
    first_sent = flows.SENT[0]
    assert first_sent[1] == ["3"] and 10 <= first_sent[2] - began < 10 + 2 * workflow_env.settings.sweep_interval


def test_a_window_whose_opener_died_before_creating_its_run_is_taken_by_the_next_start(
        workflow_env: WorkflowEnv) -> None:
    store, now = workflow_env.store, workflow_env.clock.now()
    assert store.acquire_slot(window_of("digest", "dee"), 1, "opened-then-died", now + 5) == 0
    handle = workflow_env.apply_async(flows.digest, ["dee", ["x"]], debounce="5s", debounce_key="dee")
    assert handle.run_id == "opened-then-died"
    workflow_env.run_until_idle()
    assert handle.result() == ["x"]


@pytest.mark.parametrize(("options", "error"), [
    ({"debounce_key": "k"}, InvalidDebounce),
    ({"debounce": "5s"}, InvalidDebounce),
    ({"debounce": "5s", "debounce_key": ""}, InvalidDebounce),
    ({"debounce": "5s", "debounce_key": "k" * 257}, InvalidDebounce),
    ({"debounce": "5s", "debounce_key": "line\nbreak"}, InvalidDebounce),
    ({"debounce": "5s", "debounce_key": "k", "debounce_max": "2s"}, InvalidDebounce),
    ({"debounce": "5s", "debounce_key": "k", "idempotency_key": "i"}, InvalidDebounce),
    ({"debounce": "soon", "debounce_key": "k"}, InvalidDuration),
    ({"debounce": 0, "debounce_key": "k"}, InvalidDuration),
])
def test_bad_debounce_options_are_refused_and_store_nothing(workflow_env: WorkflowEnv, options: dict,  # type: ignore[type-arg]
                                                            error: type) -> None:
    with pytest.raises(error):
        apply_async("digest", ["eve", ["e"]], **options)
    assert workflow_env.runs() == []
