"""Priority on the broker: a message goes to its level's queue, a worker consumes every level
of its workflow queues, and the channel serves the higher levels first when room is short."""

from __future__ import annotations

import uuid

import pytest
from celery import Celery

from workflows.celery.app import worker_queues
from workflows.celery.levels import add_levels
from workflows.celery.sqs import LevelTurns
from workflows.celery.transport import CeleryTransport
from workflows.core.model.priority import check_priority, queue_for, rank_of, with_levels
from workflows.core.model.records import ResumeMessage, StepMessage
from workflows.errors import InvalidPriority


def test_a_level_is_a_queue_suffix_and_normal_is_the_queue_itself() -> None:
    assert [queue_for("steps", level) for level in ("high", None, "low")] == ["steps-high", "steps", "steps-low"]
    assert [rank_of(q) for q in ("steps-high", "steps", "steps-low")] == [("steps", 0), ("steps", 1), ("steps", 2)]
    assert with_levels(["workflows", "steps-high"]) == ["workflows-high", "workflows", "workflows-low", "steps-high"]
    assert check_priority("normal", "x") is None and check_priority("high", "x") == "high"
    with pytest.raises(InvalidPriority, match="x 2 is not a priority"):
        check_priority(2, "x")


def test_the_transport_sends_each_message_to_its_levels_queue() -> None:
    app = Celery(f"unit-{uuid.uuid4().hex[:6]}", broker="memory://")
    transport = CeleryTransport(app)
    transport.send_resume(ResumeMessage("run-1", priority="high"))
    transport.send_resume(ResumeMessage("run-2"))
    transport.send_step(StepMessage("priority_unit", "run-1", 0, 1, "[[],{}]", priority="low"))
    transport.send_step(StepMessage("priority_unit", "run-1", 1, 1, "[[],{}]", queue="payments", priority="high"))
    with app.connection_for_read() as conn:
        got = {name: conn.SimpleQueue(name).get(timeout=2).headers["argsrepr"]
               for name in ("workflows-high", "workflows", "steps-low", "payments-high")}
    assert "run-1" in got["workflows-high"] and "run-2" in got["workflows"]
    assert "0" in got["steps-low"] and "1" in got["payments-high"]


def test_a_worker_told_which_queues_consumes_their_levels_too() -> None:
    app = Celery(f"unit-{uuid.uuid4().hex[:6]}", broker="memory://")
    app.conf.task_queues = None
    app.amqp.queues.select(None)
    for name in ("steps", "celery"):
        app.amqp.queues.add(name)
    app.amqp.queues.select(["steps", "celery"])
    assert add_levels(app) == ["steps-high", "steps-low"]  # an application queue gets no levels
    assert set(app.amqp.queues.consume_from) == {"steps", "steps-high", "steps-low", "celery"}
    assert add_levels(app) == []
    assert {"workflows-high", "steps-low"} <= set(worker_queues())  # what init-aws and the template create


def test_a_lower_level_leaves_the_room_to_a_higher_one_waiting_for_it() -> None:
    turns, active = LevelTurns(share=2), {"steps-high", "steps", "steps-low", "payments"}
    assert not turns.room("steps-low", active)  # nobody waits: it takes the room
    turns.full("steps-high")
    assert turns.room("steps-low", active) and turns.room("steps", active)
    assert not turns.room("payments", active)  # another queue's levels are none of its business
    assert turns.room("steps-low", active)
    assert not turns.room("steps-low", active)  # yielded twice in a row: takes one (the share)
    assert not turns.room("steps-high", active)  # the high queue takes the room it found
    assert not turns.room("steps-low", active)
    turns.full("steps-high")
    assert not turns.room("steps-low", {"steps-low"})  # a higher queue no longer consumed is not waited for


def test_strict_order_never_takes_the_room_of_a_waiting_higher_level() -> None:
    turns, active = LevelTurns(share=0), {"steps-high", "steps"}
    turns.full("steps-high")
    assert all(turns.room("steps", active) for _ in range(100))
