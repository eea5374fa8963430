"""kombu's SQS transport, hardened and cheaper.

- An SQS 5xx or timeout on ReceiveMessage is an empty poll. kombu's async client
  turns a 5xx into an empty list, which its channel then treats as a dict and
  crashes the worker ("Unrecoverable error: 'list' object has no attribute 'get'").
- One boto3 SQS client per process and credentials, shared by every channel
  (boto3 clients are thread-safe). kombu builds a new client per channel, and a
  burst of sends from worker threads opens many channels: building clients was
  the largest share of a worker's busy time in the throughput benchmark.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kombu.transport import SQS

log = logging.getLogger("workflows.sqs")


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


class Channel(SQS.Channel):
    """SQS channel that survives server errors on receive and shares its boto3 client."""

    def new_sqs_client(self, region: Any, access_key_id: Any, secret_access_key: Any,
                       session_token: Any = None) -> Any:
        key = (region, access_key_id, secret_access_key, session_token, self.endpoint_url, self.is_secure,
               repr(sorted((self.transport_options.get("client-config") or {}).items())))
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = super().new_sqs_client(region, access_key_id, secret_access_key,
                                                                 session_token)
            return client

    def _on_messages_ready(self, queue: Any, qname: str, messages: Any) -> int:
        if not isinstance(messages, dict):
            log.warning("SQS receive on %s failed with a server error; polling again", qname)
            return 0
        return int(super()._on_messages_ready(queue, qname, messages))


class Transport(SQS.Transport):
    """SQS transport using :class:`Channel`."""

    Channel = Channel
