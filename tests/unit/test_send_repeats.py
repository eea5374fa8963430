"""A send whose response is lost (SQS took the message, the connection dropped) is sent again marked
as a possible repeat and delayed, so its receiver reads what is recorded first; a refused send (a
throttle) reached nothing and is sent again unmarked. Through the real transport, a fault front that
drops or refuses the first SendMessage, and the local AWS server over HTTP."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import boto3
import pytest
from celery import Celery

from persistence.provision import create_queues
from workflows.celery import repeats
from workflows.celery.config import celery_config
from workflows.celery.transport import CeleryTransport
from workflows.core.model.records import StepMessage
from workflows.soak.faults import FaultPlan, Request
from workflows.soak.proxy import FaultFront


class FirstSend(FaultPlan):
    """Answers the first SendMessage(Batch) with ``kind``; everything else passes."""

    def __init__(self, kind: str) -> None:
        super().__init__(seed=0, rates={})
        self.kind, self.done = kind, False

    def draw(self, request: Request) -> tuple[str | None, float]:
        if self.done or not request.operation.startswith("SendMessage"):
            return None, 0.0
        self.done = True
        return self.kind, 0.0


def headers_of(body: str) -> dict[str, Any]:
    return json.loads(base64.b64decode(body))["headers"]


@pytest.mark.parametrize(("fault", "marked"), [("lose", True), ("throttle", False)])
def test_a_send_that_may_have_arrived_is_sent_again_marked_and_delayed(settings, aws_env, monkeypatch,  # type: ignore[no-untyped-def]
                                                                       fault: str, marked: bool) -> None:
    monkeypatch.setattr(repeats, "REPEAT_DELAY", 1)
    own = settings.with_(queue_prefix=f"rp{uuid.uuid4().hex[:6]}-")
    create_queues(own)
    front = FaultFront(aws_env["AWS_ENDPOINT_URL"], FirstSend(fault)).start()
    try:
        app = Celery(f"repeats-{uuid.uuid4().hex[:6]}")
        app.conf.update(celery_config(own.with_(sqs_endpoint=front.url)))
        CeleryTransport(app).send_step(StepMessage("repeat_unit", "run-1", 0, 1, "[[],{}]"))
    finally:
        front.stop()
    sqs = boto3.client("sqs", endpoint_url=aws_env["AWS_ENDPOINT_URL"], region_name=own.region)
    url = sqs.get_queue_url(QueueName=f"{own.queue_prefix}steps")["QueueUrl"]
    got: list[dict[str, Any]] = []
    for _ in range(10):
        got += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        if len(got) >= (2 if marked else 1):
            break
    repeats_seen = [repeats.REPEAT_HEADER in headers_of(m["Body"]) for m in got]
    assert sorted(repeats_seen) == ([False, True] if marked else [False])
