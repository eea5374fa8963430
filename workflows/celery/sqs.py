"""kombu's SQS transport, hardened and cheaper.

- An SQS 5xx or timeout on ReceiveMessage is an empty poll. kombu's async client
  turns a 5xx into an empty list, which its channel then treats as a dict and
  crashes the worker ("Unrecoverable error: 'list' object has no attribute 'get'").
- One boto3 SQS client per process and credentials, shared by every channel
  (boto3 clients are thread-safe). kombu builds a new client per channel, and a
  burst of sends from worker threads opens many channels: building clients was
  the largest share of a worker's busy time in the throughput benchmark.
- Priority levels are served in order (``workflows.core.priority``): kombu polls each
  consumed queue in a loop of its own, and when the worker has no room, every loop retries
  each ``polling_interval``; the first to find room takes it, so under a backlog the queues
  share a worker's slots about evenly. Here a queue whose higher level's queue waits for room
  yields the room to it, up to ``priority_share`` times in a row (then takes one, so a steady
  stream of high work does not starve the lower levels; 0: strict order).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Collection

from kombu.transport import SQS

from ..core.priority import rank_of

log = logging.getLogger("workflows.sqs")


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


#: Yields of a lower level to a higher one before it takes a slot itself (``WORKFLOWS_PRIORITY_SHARE``).
DEFAULT_PRIORITY_SHARE = 8


class LevelTurns:
    """Who takes a worker's free room among the priority levels of one queue (pure bookkeeping).

    Each consumed queue's polling loop reports each turn: :meth:`full` when the worker had no
    room, :meth:`room` when it had some; ``room`` says whether the queue leaves it to a higher
    level's queue that found the worker full at its last turn (at most ``share`` times in a row;
    0: always).
    """

    def __init__(self, share: int = DEFAULT_PRIORITY_SHARE) -> None:
        self.share = share
        self.waiting: set[str] = set()  # queues whose loop found the worker full at its last turn
        self.yielded: dict[str, int] = {}  # consecutive yields of a queue to a higher level

    def full(self, queue: str) -> None:
        """``queue``'s loop found no room: a lower level's queue leaves the next room to it."""
        self.waiting.add(queue)

    def room(self, queue: str, active: Collection[str]) -> bool:
        """``queue``'s loop found room; return True if it yields it (``active``: the consumed queues)."""
        self.waiting.discard(queue)
        base, rank = rank_of(queue)
        if not any(other in active and rank_of(other)[0] == base and rank_of(other)[1] < rank
                   for other in self.waiting):
            self.yielded.pop(queue, None)
            return False
        yielded = self.yielded.get(queue, 0)
        if self.share and yielded >= self.share:
            self.yielded[queue] = 0
            return False
        self.yielded[queue] = yielded + 1
        return True


class Channel(SQS.Channel):
    """SQS channel that survives server errors on receive, shares its boto3 client, and serves
    higher priority levels first."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._turns = LevelTurns(int(self.transport_options.get("priority_share", DEFAULT_PRIORITY_SHARE)))

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

    def _schedule_queue(self, queue: Any) -> None:
        if queue in self._active_queues:
            if not self.qos.can_consume():
                self._turns.full(queue)
            elif self._turns.room(queue, self._active_queues):
                self._loop1(queue)  # its turn again after polling_interval
                return
        super()._schedule_queue(queue)


class Transport(SQS.Transport):
    """SQS transport using :class:`Channel`."""

    Channel = Channel
