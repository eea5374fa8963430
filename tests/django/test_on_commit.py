"""The example's view starts an order's run in ``transaction.on_commit``, with the order's id as its
idempotency key (examples/django_shop/shop/orders.py).

Each test runs Django in a ``manage.py shell -c`` process against the session's local AWS server
(no worker: the runs stay queued) and then reads, from this process, the runs tagged with the
order and the order's row. The start happens in the shell process, before it exits, so what
is stored when it has exited is all it started.
"""

from __future__ import annotations

import uuid

from tests.django.conftest import order_row, shell
from workflows import list_runs

VIEW = """
from django.test import Client
client = Client()
def post(order_id):
    answer = client.post("/orders", {"id": order_id, "sku": "mug", "quantity": 2, "cents": 1800},
                         content_type="application/json")
    return f"{answer.status_code}:{answer.json()['run']}"
"""


def runs_of(order_id: str) -> list[str]:
    return [run.run_id for run in list_runs(tag=f"order={order_id}")]


def test_a_committed_order_starts_exactly_one_run(shop_env) -> None:  # type: ignore[no-untyped-def]
    order_id = str(uuid.uuid4())
    status, run_id = shell(shop_env, VIEW + f"print(post({order_id!r}))").split(":")
    assert status == "201"
    assert runs_of(order_id) == [run_id]
    run = list_runs(tag=f"order={order_id}")[0]
    assert (run.workflow, run.idempotency_key) == ("fulfil_order", f"order-{order_id}")
    assert order_row(shop_env, order_id)["status"] == "new"  # type: ignore[index]


def test_a_rolled_back_order_starts_none(shop_env) -> None:  # type: ignore[no-untyped-def]
    """The order is placed inside a transaction that then rolls back (a later line of the same
    import fails): its on_commit callback is dropped with it. An order committed by the same
    process right after starts its run, so the start itself works there."""
    abandoned, kept = str(uuid.uuid4()), str(uuid.uuid4())
    out = shell(shop_env, f"""
from django.db import transaction
from shop.orders import place_order
class Abandoned(Exception):
    pass
try:
    with transaction.atomic():
        order, created, started = place_order({abandoned!r}, "mug", 1, 900)
        raise Abandoned
except Abandoned:
    pass
_, _, kept = place_order({kept!r}, "mug", 1, 900)
print(f"{{created}}:{{len(started)}}:{{len(kept)}}")
""")
    assert out == "True:0:1"  # created in the rolled-back transaction, never started
    assert runs_of(abandoned) == []
    assert order_row(shop_env, abandoned) is None
    assert len(runs_of(kept)) == 1


def test_a_post_retried_after_a_lost_response_starts_one_run(shop_env) -> None:  # type: ignore[no-untyped-def]
    """The client sends the same body (the order's id in it) again: the view finds the order and
    asks for the start again, and the idempotency key gives back the first run."""
    order_id = str(uuid.uuid4())
    out = shell(shop_env, VIEW + f"print(post({order_id!r}), post({order_id!r}), post({order_id!r}))")
    first, *again = out.split()
    assert first.startswith("201:")
    run_id = first.split(":")[1]
    assert again == [f"200:{run_id}", f"200:{run_id}"]
    assert runs_of(order_id) == [run_id]


def test_a_retried_post_starts_the_run_a_crash_after_the_commit_lost(shop_env) -> None:  # type: ignore[no-untyped-def]
    """The order was committed but its process died before on_commit started the run: the
    client's retry (same id) starts it, once."""
    order_id = str(uuid.uuid4())
    out = shell(shop_env, VIEW + f"""
from shop.models import Order
Order.objects.create(id={order_id!r}, sku="mug", quantity=2, cents=1800)  # committed, no start
print(post({order_id!r}), post({order_id!r}))
""")
    first, second = out.split()
    run_id = first.split(":")[1]
    assert first == f"200:{run_id}" and second == first
    assert runs_of(order_id) == [run_id]
