"""Sends that may reach SQS twice, and the mark that makes their receiver check first.

A send whose response is lost (the connection drops after SQS took the message) is sent again by
botocore's retries, and SQS then holds two messages: each is a first delivery of its own, so a
worker would run the step of the second copy without reading what the first recorded. So each
send is tried once on its own; when that try fails in a way that may have reached SQS (no answer,
a 5xx), the message is sent again, retried as usual, carrying :data:`REPEAT_HEADER` and delayed by
:data:`REPEAT_DELAY`: its receiver treats it as a redelivery and reads what is recorded before it
runs anything (one read, only after such a failure), and by then the first copy, if there is one,
has most likely recorded its outcome (a step that runs longer may run twice, as after any
redelivery: steps run at least once). A refusal (a 4xx such as a throttle) or a connection that
never opened reached nothing: it is sent again unmarked.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from typing import Any

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

log = logging.getLogger("workflows.sqs")

#: The Celery header of a message whose send may have reached SQS twice.
REPEAT_HEADER = "workflows_possible_repeat"
#: Seconds the second copy of a send that may have arrived waits in its queue (SQS DelaySeconds).
REPEAT_DELAY = 30
#: The botocore configuration of a client that tries each request once.
ONE_TRY = Config(retries={"total_max_attempts": 1})

_once = threading.local()  # ``on`` while a thread makes the single try of a send


def trying_once() -> bool:
    """Whether this thread is making the single try of a send (its client must not retry)."""
    return bool(getattr(_once, "on", False))


class SingleTry:
    """While entered, this thread's sends go through clients that try once."""

    def __enter__(self) -> None:
        _once.on = True

    def __exit__(self, *exc: object) -> None:
        _once.on = False


def may_have_arrived(error: BaseException) -> bool:
    """Whether a failed send may have reached SQS: no answer came (the connection dropped, a read
    timed out) or a server error did; a refusal (4xx, a throttle) reached nothing."""
    if isinstance(error, ClientError):
        status = int((error.response.get("ResponseMetadata") or {}).get("HTTPStatusCode") or 0)
        return status >= 500 or status == 0
    if isinstance(error, (EndpointConnectionError, ConnectTimeoutError)):
        return False  # the connection never opened
    return isinstance(error, (BotoCoreError, OSError))


def mark(message: dict[str, Any]) -> dict[str, Any]:
    """A kombu message (as ``Channel._put`` takes it) carrying :data:`REPEAT_HEADER`, delayed by at least
    :data:`REPEAT_DELAY`."""
    properties = dict(message.get("properties") or {})
    properties["delay_seconds"] = max(int(properties.get("delay_seconds") or properties.pop("DelaySeconds", 0) or 0),
                                      REPEAT_DELAY)
    return {**message, "properties": properties, "headers": {**(message.get("headers") or {}), REPEAT_HEADER: True}}


def mark_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """A SendMessage(Batch) entry whose body carries :data:`REPEAT_HEADER`, delayed by at least :data:`REPEAT_DELAY`."""
    return {**entry, "MessageBody": mark_body(entry["MessageBody"]),
            "DelaySeconds": max(int(entry.get("DelaySeconds") or 0), REPEAT_DELAY)}


def mark_body(body: str) -> str:
    """An SQS message body (kombu's JSON envelope, base64-encoded or not) carrying :data:`REPEAT_HEADER`."""
    try:
        envelope, encoded = json.loads(base64.b64decode(body, validate=True)), True
    except (binascii.Error, ValueError):
        envelope, encoded = json.loads(body), False
    text = json.dumps({**envelope, "headers": {**(envelope.get("headers") or {}), REPEAT_HEADER: True}})
    return base64.b64encode(text.encode()).decode() if encoded else text


def possible_repeat(request: Any) -> bool:
    """Whether a Celery task's message may be the second copy of one send (see the module docstring)."""
    return bool(getattr(request, REPEAT_HEADER, False))


def warn_resent(where: str, error: BaseException) -> None:
    log.info("an SQS send to %s may have arrived (%s: %s); sent again marked as a possible repeat", where,
             type(error).__name__, error)
