"""A batch is checked where it enters: a time out of range, a signal name that breaks the rules of
names or more tags than a run can carry is refused at start, with nothing stored (before, each was
accepted and then failed on every run, or broke every listing of batches)."""

from __future__ import annotations

import pytest

from workflows import RunFilter, TimeRange, batch_cancel, batch_signal, batch_tag, list_batches, list_runs
from workflows.errors import InvalidName, InvalidTags, SerializationError
from workflows.testing import WorkflowEnv


@pytest.mark.parametrize("until", [-1e308, -1.0, 1e308, 253_402_300_800.0])
def test_a_time_out_of_range_is_refused(workflow_env: WorkflowEnv, until: float) -> None:
    with pytest.raises(SerializationError, match="until must be epoch seconds from 0"):
        batch_cancel(RunFilter(workflow="anything", created=TimeRange(until=until)))
    with pytest.raises(SerializationError, match="since must be epoch seconds from 0"):
        list_runs(created=TimeRange(since=until))
    assert list(list_batches()) == []


def test_a_signal_name_that_breaks_the_rules_is_refused(workflow_env: WorkflowEnv) -> None:
    with pytest.raises(InvalidName, match="signal name 'g o' is not a valid name"):
        batch_signal(RunFilter(workflow="anything"), "g o")
    assert list(list_batches()) == []


def test_more_tags_than_a_run_carries_are_refused(workflow_env: WorkflowEnv) -> None:
    with pytest.raises(InvalidTags, match="at most 16 tags, got 40"):
        batch_tag(RunFilter(workflow="anything"), {f"k{i}": "v" for i in range(40)})
    batch_tag(RunFilter(workflow="anything"), {f"k{i}": None for i in range(40)})  # removals only: fine
    assert len(list(list_batches())) == 1
