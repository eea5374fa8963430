"""A fan-out's step messages go to SQS in batches (SendMessageBatch, up to 10 a request), over HTTP
to the moto server, and arrive as the same Celery messages one by one sends would make."""

from __future__ import annotations

import base64
import json
from typing import Any

from persistence.provision import create_queues, sqs_client
from workflows.celery import sqs
from workflows.celery.producer import producer_transport
from workflows.core.model.records import Branch, StepMessage
from workflows.settings import Settings

QUEUE = "batchsends"


def message(pos: int) -> StepMessage:
    return StepMessage("batch_probe", "run-batch", 0, 1, json.dumps([[pos], {}]), queue=QUEUE,
                       branch=Branch("run-batch#0", pos, 23))


def received(settings: Settings, count: int) -> list[dict[str, Any]]:
    client = sqs_client(settings)
    url = client.get_queue_url(QueueName=settings.queue_prefix + QUEUE)["QueueUrl"]
    bodies: list[dict[str, Any]] = []
    for _ in range(50):
        if len(bodies) >= count:
            break
        answer = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for found in answer.get("Messages", []):
            text = found["Body"]
            bodies.append(json.loads(base64.b64decode(text) if not text.startswith("{") else text))
            client.delete_message(QueueUrl=url, ReceiptHandle=found["ReceiptHandle"])
    return bodies


def test_a_fan_outs_messages_go_in_batches_of_ten_and_arrive_whole(settings: Settings) -> None:
    create_queues(settings, [QUEUE])
    transport = producer_transport(settings)
    transport.send_step(message(99))  # one message alone: a plain SendMessage (and the shared client made)
    operations: list[str] = []

    def count(model: Any, **_: Any) -> None:
        operations.append(model.name)

    for client in [*sqs._clients.values(), *sqs._twins.values()]:  # each send's first try goes by its twin
        client.meta.events.register("before-call.sqs", count)
    try:
        transport.send_steps([message(pos) for pos in range(23)])
    finally:
        for client in [*sqs._clients.values(), *sqs._twins.values()]:  # each send's first try goes by its twin
            client.meta.events.unregister("before-call.sqs", count)
    assert operations == ["SendMessageBatch"] * 3, operations
    bodies = received(settings, 24)
    assert len(bodies) == 24
    assert {b["headers"]["task"] for b in bodies} == {"workflows.step.batch_probe"}
    positions = sorted(json.loads(base64.b64decode(b["body"]))[0][4]["index"] for b in bodies)
    assert positions == [*range(23), 99]
