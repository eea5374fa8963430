"""The updates example of the guide (``examples/updates.py``), with the kit."""

from __future__ import annotations

import pytest

from examples import updates
from workflows import UpdateRefused
from workflows.testing import WorkflowEnv


def test_a_client_fills_the_cart_by_updates(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(updates.shopping_cart, "ana")
    assert run.update("add", {"sku": "tea", "qty": 2}) == 900
    assert run.update("add", {"sku": "cup"}, update_id="ana-cup") == 2100
    assert run.update("add", {"sku": "cup"}, update_id="ana-cup") == 2100  # a retry: applied once
    with pytest.raises(UpdateRefused, match="unknown sku 'pot'"):
        run.update("add", {"sku": "pot"})
    workflow_env.signal(run, "checkout")
    assert run.result() == {"items": {"tea": 2, "cup": 1}, "cents": 2100, "receipt": "rcpt-ana-2100"}
