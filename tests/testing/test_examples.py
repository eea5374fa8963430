"""The project's examples, tested with the kit: no AWS, no worker, no waiting."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest

from examples import approval, children, order, signals
from workflows.errors import HookPayloadInvalid
from workflows.testing import WorkflowEnv


def test_order_retries_the_busy_gateway_and_ships(workflow_env: WorkflowEnv) -> None:
    order_id = f"o-{uuid.uuid4().hex[:8]}"
    run = workflow_env.start(order.order, order_id, 4200)
    assert run.result() == {"receipt": f"rcpt-{order_id}-4200",
                            "shipment": f"shipped {order_id} from east, west"}
    assert [(s.name, s.attempts) for s in workflow_env.steps(run)] == [("charge", 2), ("ship", 1)]


def test_an_expense_approved_after_three_days(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(approval.expense_approval, "exp-1", 1250, "ana@example.com")
    workflow_env.advance(timedelta(days=3))
    with pytest.raises(HookPayloadInvalid):  # the hook's schema is checked
        workflow_env.resume_hook(run, "approve", {"approved": "maybe"})
    workflow_env.resume_hook(run, "approve", {"approved": True, "by": "ana"})
    assert run.result() == "expense exp-1 approved by ana"


def test_an_expense_nobody_answers_is_rejected_after_seven_days(workflow_env: WorkflowEnv) -> None:
    began = workflow_env.now
    run = workflow_env.start(approval.expense_approval, "exp-2", 990, "bo@example.com")
    assert run.result() == "expense exp-2 rejected by timeout"
    assert workflow_env.now - began == timedelta(days=7)


def test_report_waits_for_one_child_per_region(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(children.report, ["eu", "us", "apac"])
    assert run.result() == {"eu": 120, "us": 300, "apac": 80}
    assert len(run.children()) == 3


def test_paginate_continues_as_new_per_page(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(children.paginate, 0, 0)
    assert run.result() == sum(range(30))
    assert len(run.chain()) == 4


def test_cart_collects_signals_until_checkout(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(signals.cart, "ana")
    workflow_env.signal(run, "cart", {"type": "add", "item": {"sku": "tea", "cents": 450, "qty": 2}})
    workflow_env.signal(run, "cart", {"type": "add", "item": {"sku": "cup", "cents": 1200}})
    workflow_env.signal(run, "cart", {"type": "checkout"})
    assert run.result() == {"customer": "ana", "items": 2, "cents": 2100}


def test_cart_closes_after_thirty_seconds_of_silence(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(signals.cart, "bo")
    workflow_env.signal(run, "cart", {"type": "add", "item": {"sku": "tea", "cents": 450}})
    assert run.result() == {"customer": "bo", "items": 1, "cents": 450}
