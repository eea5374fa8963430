"""kombu's SQS transport, hardened: an SQS 5xx or timeout on ReceiveMessage is an empty poll.

kombu's async client turns a 5xx into an empty list, which its channel then
treats as a dict and crashes the worker ("Unrecoverable error: 'list' object has
no attribute 'get'"). Here that poll simply returns no messages and the worker
polls again.
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import SQS

log = logging.getLogger("workflows.sqs")


class Channel(SQS.Channel):
    """SQS channel that survives server errors on receive."""

    def _on_messages_ready(self, queue: Any, qname: str, messages: Any) -> int:
        if not isinstance(messages, dict):
            log.warning("SQS receive on %s failed with a server error; polling again", qname)
            return 0
        return int(super()._on_messages_ready(queue, qname, messages))


class Transport(SQS.Transport):
    """SQS transport using :class:`Channel`."""

    Channel = Channel
