"""Run tags: rules at start, set_tags inside a workflow (replay-safe, written once), listing by tag."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from tests.unit import tag_flows as flows
from workflows import InvalidTags, RunFailed, list_runs
from workflows.core.storage.tags import MAX_TAGS, parse_filter
from workflows.testing import WorkflowEnv


def ids(**query: Any) -> list[str]:
    return [r.run_id for r in list_runs(**query)]


def count_requests(env: WorkflowEnv, name: str, apply_twice: bool = False) -> list[str]:
    """Count the store's requests called ``name`` (applying each twice: a lost response the SDK retried)."""
    seen: list[str] = []

    def intercept(request: str, apply: Callable[[], Any]) -> Any:
        if request == name:
            seen.append(request)
            if apply_twice:
                apply()
        return apply()

    env.store.interceptor = intercept
    return seen


def test_set_tags_is_written_once_and_replays_write_nothing(workflow_env: WorkflowEnv) -> None:
    writes = count_requests(workflow_env, "set tags")
    run = workflow_env.apply_async(flows.tag_order, ["o-1"], tags={"customer": "c-1"})
    assert ids(tag="customer=c-1") == [run.run_id]
    assert run.result() == {"stage": "paid", "order": "o-1"}
    assert len(writes) == 2  # the resumes after the step and the sleep replayed the first set_tags
    assert run.record().tags == {"stage": "paid", "order": "o-1"}
    assert ids(tag="stage=paid") == ids(tag=("order", "o-1")) == [run.run_id]
    assert ids(tag="stage=started") == ids(tag="customer=c-1") == []
    assert [e.kind for e in run.history()].count("tags") == 2


def test_a_set_tags_whose_response_was_lost_is_recorded_once(workflow_env: WorkflowEnv) -> None:
    writes = count_requests(workflow_env, "set tags", apply_twice=True)
    run = workflow_env.start(flows.tag_order, "o-2")
    assert run.result() == {"stage": "paid", "order": "o-2"}
    assert len(writes) == 2 and ids(tag="stage=paid") == [run.run_id]


def test_a_continued_run_s_successor_starts_with_its_tags(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.apply_async(flows.tag_rounds, [0], tags={"team": "a"})
    assert run.result() == 2
    chain = run.chain()
    assert [h.record().tags for h in chain] == [{"team": "a", "round": str(n)} for n in range(3)]
    assert sorted(ids(tag="team=a")) == sorted(h.run_id for h in chain)  # one instant: the order is the ids'
    assert ids(tag="round=0") == [chain[0].run_id]
    assert ids(tag="round=2", workflow=flows.tag_rounds) == [chain[-1].run_id]


@pytest.mark.parametrize(("tags", "message"), [
    ({"": "x"}, "tag key ''"),
    ({"a=b": "x"}, "tag key 'a=b'"),
    ({"k" * 65: "x"}, "1..64 characters"),
    ({"k": 1}, "tag 'k' must have a string value"),
    ({"k": "v" * 257}, "at most 256"),
    ({"k": "line\nbreak"}, "printable"),
    ({f"k{i}": "v" for i in range(MAX_TAGS + 1)}, f"at most {MAX_TAGS} tags"),
    (["k", "v"], "mapping"),
])
def test_bad_tags_at_start_store_nothing(workflow_env: WorkflowEnv, tags: Any, message: str) -> None:
    with pytest.raises(InvalidTags, match=message):
        workflow_env.apply_async(flows.tag_order, ["o-3"], tags=tags)
    assert workflow_env.store.runs.items == {}


def test_bad_tags_inside_a_workflow_fail_the_run_naming_them(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.tag_bad, 7)
    with pytest.raises(RunFailed, match="InvalidTags: tag 'stage' must have a string value"):
        run.result()


def test_tag_filters_are_key_equals_value_and_not_combined_with_status(workflow_env: WorkflowEnv) -> None:
    assert parse_filter("k=a=b") == ("k", "a=b")
    for bad in ("novalue", "=v", 3):
        with pytest.raises(InvalidTags):
            list_runs(tag=bad)
    with pytest.raises(InvalidTags, match="status"):
        list_runs(tag="k=v", status="completed")
