"""``@workflow(concurrency=N, concurrency_key=...)``: what is kept and what is refused at decoration time."""

from __future__ import annotations

import pytest

from workflows import workflow
from workflows.core.model.limits import WorkflowLimits
from workflows.core.model.registry import get_workflow, scope
from workflows.errors import RegistrationError


def test_a_limited_workflow_keeps_its_limit() -> None:
    def sync(customer: str, since: str = "") -> None: ...

    with scope():
        workflow(concurrency=3, concurrency_key="customer", name="wf_limit_kept")(sync)
        assert get_workflow("wf_limit_kept").limits == WorkflowLimits(3, "customer")
        workflow(name="wf_limit_none")(sync)
        assert get_workflow("wf_limit_none").limits is None


@pytest.mark.parametrize(("options", "message"), [
    ({"concurrency": 0}, "from 1 to 1000"),
    ({"concurrency": 1001}, "from 1 to 1000"),
    ({"concurrency": True}, "from 1 to 1000"),
    ({"concurrency": "2"}, "from 1 to 1000"),
    ({"concurrency": 1, "concurrency_key": "client"}, "not a parameter"),
    ({"concurrency_key": "customer"}, "needs concurrency"),
])
def test_bad_limits_are_refused(options: dict, message: str) -> None:  # type: ignore[type-arg]
    def sync(customer: str) -> None: ...

    with scope(), pytest.raises(RegistrationError, match=message):
        workflow(name="wf_limit_bad", **options)(sync)
