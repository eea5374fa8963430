"""kombu's SQS transport, hardened and cheaper.

- An SQS 5xx or timeout on ReceiveMessage is an empty poll. kombu's async client
  turns a 5xx into an empty list, which its channel then treats as a dict and
  crashes the worker ("Unrecoverable error: 'list' object has no attribute 'get'").
- One boto3 SQS client per process and credentials, shared by every channel
  (boto3 clients are thread-safe). kombu builds a new client per channel, and a
  burst of sends from worker threads opens many channels: building clients was
  the largest share of a worker's busy time in the throughput benchmark.
- Priority levels are served in order (``workflows.core.model.priority``): kombu polls each
  consumed queue in a loop of its own, and when the worker has no room, every loop retries
  each ``polling_interval``; the first to find room takes it, so under a backlog the queues
  share a worker's slots about evenly. Here a queue whose higher level's queue waits for room
  yields the room to it, up to ``priority_share`` times in a row (then takes one, so a steady
  stream of high work does not starve the lower levels; 0: strict order).
- A send is tried once on its own; one that may have reached SQS is sent again marked as a
  possible repeat (``workflows.celery.repeats``), so a lost response never runs a step twice.
- A throttled (or otherwise refused) ReceiveMessage is an empty poll too: kombu would stop
  polling that queue for good.
- Sends in a :func:`batched_sends` block (a fan-out's branches, a race's step candidates) go
  with SendMessageBatch: up to 10 messages and 256 KiB a request, per queue, in send order.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Collection, Iterator

from kombu.asynchronous.aws.sqs.connection import AsyncSQSConnection
from kombu.transport import SQS

from ..core.model.priority import rank_of
from ..core.storage.aws_actions import aws_actions
from . import repeats

log = logging.getLogger("workflows.sqs")


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()
#: Each shared client's twin that tries each request once (by the shared client's id).
_twins: dict[int, Any] = {}


#: Yields of a lower level to a higher one before it takes a slot itself (``WORKFLOWS_PRIORITY_SHARE``).
DEFAULT_PRIORITY_SHARE = 8
#: SendMessageBatch's limits: entries a request, and bytes of all their bodies and attributes.
BATCH_ENTRIES = 10
BATCH_BYTES = 256 * 1024

#: The sends a thread collects inside :func:`batched_sends` (None outside one).
_collecting = threading.local()


@contextlib.contextmanager
def batched_sends() -> Iterator[None]:
    """Collect this thread's SQS sends inside the block and send them at its end, batched per queue
    (also when the block raises: what was sent before the error is sent, as without the block). A
    block inside another leaves the sending to the outer one."""
    if getattr(_collecting, "sends", None) is not None:
        yield
        return
    sends: list[tuple[Any, dict[str, Any]]] = []
    _collecting.sends = sends
    try:
        yield
    finally:
        _collecting.sends = None
        send_batches(sends)


def send_batches(sends: list[tuple[Any, dict[str, Any]]]) -> None:
    """Send ``(client, send_message kwargs)`` pairs with SendMessageBatch, in order within each queue.
    An entry SQS refuses in a batch is sent again alone, whose error (if any) is raised."""
    queues: dict[tuple[int, str], list[tuple[Any, dict[str, Any]]]] = {}
    for client, kwargs in sends:
        queues.setdefault((id(client), kwargs["QueueUrl"]), []).append((client, kwargs))
    for entries in queues.values():
        for chunk in _chunks([kwargs for _, kwargs in entries]):
            _send_chunk(entries[0][0], chunk)


def _size(kwargs: dict[str, Any]) -> int:
    attributes = kwargs.get("MessageAttributes") or {}
    return len(kwargs["MessageBody"].encode()) + sum(len(k) + len(repr(v)) for k, v in attributes.items())


def _chunks(messages: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    size = 0
    for kwargs in messages:
        if chunk and (len(chunk) == BATCH_ENTRIES or size + _size(kwargs) > BATCH_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(kwargs)
        size += _size(kwargs)
    if chunk:
        yield chunk


@aws_actions("sqs:SendMessage@queues")
def _send_chunk(client: Any, chunk: list[dict[str, Any]]) -> None:
    if len(chunk) == 1 or _size(chunk[0]) > BATCH_BYTES:
        for kwargs in chunk:
            _send_one(client, kwargs)
        return
    entries = [{"Id": str(i), **{k: v for k, v in kwargs.items() if k != "QueueUrl"}} for i, kwargs in enumerate(chunk)]
    try:
        answer = _twins.get(id(client), client).send_message_batch(QueueUrl=chunk[0]["QueueUrl"], Entries=entries)
    except Exception as exc:
        if not repeats.may_have_arrived(exc):
            answer = client.send_message_batch(QueueUrl=chunk[0]["QueueUrl"], Entries=entries)
        else:
            repeats.warn_resent(chunk[0]["QueueUrl"], exc)
            marked = [repeats.mark_entry(e) for e in entries]
            answer = client.send_message_batch(QueueUrl=chunk[0]["QueueUrl"], Entries=marked)
    for failed in answer.get("Failed") or []:
        log.warning("SQS refused a message of a batch (%s: %s); sending it alone", failed.get("Code"),
                    failed.get("Message"))
        client.send_message(**chunk[int(failed["Id"])])


@aws_actions("sqs:SendMessage@queues")
def _send_one(client: Any, kwargs: dict[str, Any]) -> None:
    """Send one message of a batch block: once, then (if it may have arrived) again marked."""
    try:
        _twins.get(id(client), client).send_message(**kwargs)
    except Exception as exc:
        if not repeats.may_have_arrived(exc):
            client.send_message(**kwargs)
            return
        repeats.warn_resent(kwargs["QueueUrl"], exc)
        client.send_message(**repeats.mark_entry(kwargs))


class _Collector:
    """An SQS client whose ``send_message`` is collected for :func:`send_batches` (all else passes)."""

    def __init__(self, client: Any, sends: list[tuple[Any, dict[str, Any]]]) -> None:
        self._client, self._sends = client, sends

    def send_message(self, **kwargs: Any) -> None:
        self._sends.append((self._client, kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


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


class _PollingSQSConnection(AsyncSQSConnection):  # type: ignore[misc]
    """kombu's asynchronous SQS connection, whose refused ReceiveMessage (a throttle, any 4xx) is an empty
    poll, as a 5xx already is: kombu raises in the callback, which ends that queue's polling for good."""

    def _on_list_ready(self, parent: Any, markers: Any, operation: str, response: Any) -> Any:
        if operation == "ReceiveMessage" and response.status != self.STATUS_CODE_OK:
            log.warning("SQS ReceiveMessage answered HTTP %s (%s); an empty poll, polling again", response.status,
                        str(response.read())[:200])
            return []
        return super()._on_list_ready(parent, markers, operation, response)


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
                _twins[id(client)] = self._new_boto_client("sqs", region, access_key_id, secret_access_key,
                                                           session_token, config=repeats.ONE_TRY)
            return client

    def sqs(self, queue: Any = None) -> Any:
        client = super().sqs(queue=queue)
        sends = getattr(_collecting, "sends", None)
        if sends is not None:
            return _Collector(client, sends)
        return _twins.get(id(client), client) if repeats.trying_once() else client

    @aws_actions("sqs:SendMessage@queues", "sqs:GetQueueUrl@queues", "sqs:GetQueueAttributes@queues",
                 "sqs:ListQueues@*")
    def _put(self, queue: Any, message: dict[str, Any], **kwargs: Any) -> None:
        if message.get("redelivered") or getattr(_collecting, "sends", None) is not None:
            super()._put(queue, message, **kwargs)  # a visibility change; or collected (send_batches)
            return
        again = {**message, "properties": dict(message.get("properties") or {})}  # _put pops from them
        try:
            with repeats.SingleTry():
                super()._put(queue, message, **kwargs)
            return
        except Exception as exc:
            if repeats.may_have_arrived(exc):
                repeats.warn_resent(str(queue), exc)
                again = repeats.mark(again)
        super()._put(queue, again, **kwargs)

    def asynsqs(self, queue: Any = None) -> Any:
        connection = super().asynsqs(queue=queue)
        if type(connection) is AsyncSQSConnection:
            connection.__class__ = _PollingSQSConnection  # same state, a forgiving receive
        return connection

    def _on_messages_ready(self, queue: Any, qname: str, messages: Any) -> int:
        if not isinstance(messages, dict):
            log.warning("SQS receive on %s failed with a server error; polling again", qname)
            return 0
        return int(super()._on_messages_ready(queue, qname, messages))

    @aws_actions("sqs:ReceiveMessage@queues", "sqs:DeleteMessage@queues", "sqs:ChangeMessageVisibility@queues",
                 "sqs:GetQueueAttributes@queues", "sqs:GetQueueUrl@queues", "sqs:ListQueues@*")
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
