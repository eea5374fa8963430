"""Smoke: a sequential workflow runs to completion on real worker processes."""

from __future__ import annotations

import pytest

from tests.e2e import flows

pytestmark = pytest.mark.e2e


def test_sequential_steps_complete(cluster) -> None:
    run = flows.sequence.start(5)
    assert run.result(timeout=60) == sum(range(5))
    steps = run.steps()
    assert [s["name"] for s in steps] == ["add"] * 5
    assert all(s["status"] == "completed" and s["attempts"] == 1 for s in steps)
