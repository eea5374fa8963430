"""What the fault front does to a request: the seeded draw, the counts, and the answers AWS gives.

Each request to DynamoDB, SQS or S3 draws once from the seed's stream: ``lose`` (forward it, then
reset the client's connection before answering: the write is applied and the SDK retries it),
``throttle`` (answer as AWS throttles, without forwarding), ``error`` (a 500, without forwarding),
``reset`` (reset the connection before forwarding) or ``latency`` (wait 1-5 s, then forward).
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import uuid
from collections import Counter
from dataclasses import dataclass

from .config import FAULT_KINDS

#: Answer headers and body of a fault that answers: (status, headers, body).
Answer = tuple[int, list[tuple[str, str]], bytes]
DDB_THROTTLES = ("ThrottlingException", "ProvisionedThroughputExceededException")
JSON_1_0 = "application/x-amz-json-1.0"


@dataclass(frozen=True)
class Request:
    """What the front knows of a request: its service (``dynamodb``, ``sqs``, ``s3`` or ``other``),
    its operation (``PutItem``, ``SendMessage``, ``PUT``...) and its body."""

    service: str
    operation: str
    body: bytes = b""

    @classmethod
    def of(cls, method: str, headers: dict[str, str], body: bytes = b"") -> Request:
        """Classify a request by its ``X-Amz-Target`` and its signature's credential scope."""
        target = headers.get("x-amz-target", "")
        if target.startswith("DynamoDB"):
            return cls("dynamodb", target.rpartition(".")[2], body)
        if target.startswith("AmazonSQS"):
            return cls("sqs", target.rpartition(".")[2], body)
        auth = headers.get("authorization", "")
        if "/sqs/" in auth:
            return cls("sqs", "query", body)
        if "/s3/" in auth:
            return cls("s3", method, body)
        return cls("other", method, body)

    def task_ids(self) -> list[str]:
        """The Celery task ids of the messages an SQS send carries (kombu's base64 JSON envelope)."""
        try:
            sent = json.loads(self.body)
            ids = []
            for entry in sent.get("Entries", [sent]):
                envelope = json.loads(base64.b64decode(entry["MessageBody"]))
                ids.append(str(envelope["headers"]["id"]))
            return ids
        except (ValueError, KeyError, TypeError, binascii.Error):
            return []


class FaultPlan:
    """The seeded draws and the counts of every fault injected, by kind and by service.

    Args:
        seed: the seed of the draws.
        rates: the share of requests that meets each kind.
    """

    def __init__(self, seed: int, rates: dict[str, float]) -> None:
        self.rates = {kind: rates.get(kind, 0.0) for kind in FAULT_KINDS}
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.enabled = False
        self.injected: Counter[tuple[str, str]] = Counter()  # (kind, service)
        self.lost_sends: set[str] = set()  # task ids of SQS sends whose response was lost: the SDK sent them again
        self.requests = 0

    def draw(self, request: Request) -> tuple[str | None, float]:
        """The fault this request meets (None: none) and, for ``latency``, how long it waits."""
        with self.lock:
            if request.service == "other":
                return None, 0.0
            self.requests += 1
            if not self.enabled:
                return None, 0.0
            point, chosen = self.random.random(), None
            for kind in FAULT_KINDS:
                point -= self.rates[kind]
                if point < 0:
                    chosen = kind
                    break
            delay = self.random.uniform(1.0, 5.0) if chosen == "latency" else 0.0
            if chosen is not None:
                self.injected[(chosen, request.service)] += 1
                if chosen == "lose" and request.operation.startswith("SendMessage"):
                    self.lost_sends.update(request.task_ids())
            return chosen, delay

    def by_kind(self) -> dict[str, int]:
        """Faults injected, by kind (every kind named, zero included)."""
        counts = dict.fromkeys(FAULT_KINDS, 0)
        for (kind, _service), n in self.injected.items():
            counts[kind] += n
        return counts

    def by_service(self) -> dict[str, dict[str, int]]:
        """Faults injected, by service then kind."""
        out: dict[str, dict[str, int]] = {}
        for (kind, service), n in sorted(self.injected.items()):
            out.setdefault(service, {})[kind] = n
        return out


def throttle_answer(request: Request, pick: int) -> Answer:
    """What AWS answers a throttled request of this service."""
    if request.service == "dynamodb":
        kind = DDB_THROTTLES[pick % len(DDB_THROTTLES)]
        return _json(400, f"com.amazonaws.dynamodb.v20120810#{kind}",
                     "Rate of requests exceeds the allowed throughput.")
    if request.service == "sqs":
        return _sqs(400, "RequestThrottled", "Sender", "Request is throttled.")
    return _xml(503, "SlowDown", "Please reduce your request rate.")


def error_answer(request: Request) -> Answer:
    """What AWS answers a request that failed inside the service (HTTP 500)."""
    if request.service == "dynamodb":
        return _json(500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error")
    if request.service == "sqs":
        return _sqs(500, "InternalError", "Receiver", "We encountered an internal error. Please try again.")
    return _xml(500, "InternalError", "We encountered an internal error. Please try again.")


def _json(status: int, kind: str, message: str) -> Answer:
    body = json.dumps({"__type": kind, "message": message}).encode()
    return status, [("Content-Type", JSON_1_0), ("x-amzn-RequestId", uuid.uuid4().hex)], body


def _sqs(status: int, code: str, fault: str, message: str) -> Answer:
    """SQS's JSON protocol: the query-compatible code travels in a header too."""
    body = json.dumps({"__type": f"com.amazonaws.sqs#{code}", "message": message}).encode()
    return status, [("Content-Type", JSON_1_0), ("x-amzn-query-error", f"{code};{fault}"),
                    ("x-amzn-RequestId", uuid.uuid4().hex)], body


def _xml(status: int, code: str, message: str) -> Answer:
    request_id = uuid.uuid4().hex
    body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{message}</Message>"
            f"<RequestId>{request_id}</RequestId></Error>").encode()
    return status, [("Content-Type", "application/xml"), ("x-amz-request-id", request_id)], body
