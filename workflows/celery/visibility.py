"""SQS visibility of the messages of running tasks (Celery adapter).

While a task (a step, or a resume that runs steps in place) runs longer than half
the visibility timeout, its message's visibility is extended, so SQS does not hand
it to a second worker. When a worker is asked to stop (SIGTERM: warm shutdown),
Celery lets the running tasks finish and they keep their messages, still extended:
a step that is running is never handed to another worker. The keeper only notes
that the worker is stopping, so no new step starts in place. (Messages received
but never started need nothing here: the threads pool cancels them, and kombu puts
back every unacked message when its channel closes.)

With the prefork pool, tasks end in child processes, where the signals that say so
are sent; the keeper (in the consuming process) forgets a message once Celery's
worker state no longer holds its request.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from ..core.storage.aws_actions import aws_actions

log = logging.getLogger("workflows.visibility")


class VisibilityKeeper:
    """Tracks the SQS messages of running tasks in this worker process."""

    def __init__(self, client: Any, timeout: int, live: Callable[[], set[str]] | None = None) -> None:
        self.client, self.timeout, self.live = client, timeout, live
        self._running: dict[str, tuple[str, str, float]] = {}  # task id -> queue url, receipt, extended at
        self._receives: dict[str, int] = {}  # task id -> SQS ApproximateReceiveCount
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def track(self, task_id: str, queue_url: str, receipt: str, receive_count: int | None = None) -> None:
        """Remember a received task message."""
        with self._lock:
            self._running[task_id] = (queue_url, receipt, time.monotonic())
            if receive_count is not None:
                self._receives[task_id] = receive_count
        self._ensure_thread()

    @property
    def stopping(self) -> bool:
        """Whether the worker is shutting down (its running tasks finish, nothing new runs in place)."""
        return self._stopping.is_set()

    def stop_in_place(self) -> None:
        """The worker is shutting down: start no new step in place (running tasks keep their messages)."""
        self._stopping.set()

    def close(self) -> None:
        """Stop extending (the worker has stopped: no task runs any more)."""
        self._stop.set()

    def first_delivery(self, task_id: str) -> bool:
        """Whether SQS delivers this message for the first time (False when unknown)."""
        with self._lock:
            return self._receives.get(task_id) == 1

    def done(self, task_id: str) -> None:
        """Forget a message whose task finished (it is acked by Celery)."""
        with self._lock:
            self._running.pop(task_id, None)
            self._receives.pop(task_id, None)

    def extend_due(self) -> None:
        """Extend the messages that have used half their visibility."""
        now = time.monotonic()
        live = self.live() if self.live is not None else None
        with self._lock:
            if live is not None:  # tasks that ended in another process (prefork); a second's grace
                for tid in [t for t, (_, _, at) in self._running.items() if t not in live and now - at >= 1]:
                    self._running.pop(tid, None)
                    self._receives.pop(tid, None)
            due = [(tid, url, rh) for tid, (url, rh, at) in self._running.items() if now - at >= self.timeout / 2]
            for tid, url, rh in due:
                self._running[tid] = (url, rh, now)
        for _, url, rh in due:
            self._change(url, rh, self.timeout)

    @aws_actions("sqs:ChangeMessageVisibility@queues")
    def _change(self, queue_url: str, receipt: str, seconds: int) -> None:
        try:
            self.client.change_message_visibility(QueueUrl=queue_url, ReceiptHandle=receipt,
                                                  VisibilityTimeout=seconds)
        except Exception:  # the message may be gone already (acked); nothing to keep
            log.debug("visibility change failed", exc_info=True)

    def _ensure_thread(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="sqs-visibility", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(max(0.5, self.timeout / 6)):
            self.extend_due()


def _live_requests() -> set[str]:
    from celery.worker import state

    return {r.id for r in list(state.reserved_requests)}


def install(celery: Any, task_prefix: str, header: str | None = None) -> VisibilityKeeper:
    """Connect the keeper to Celery's signals for tasks named ``task_prefix*`` and, with
    ``header``, for messages of other tasks that carry that header."""
    from celery import signals

    from persistence.provision import sqs_client

    from ..settings import get_settings

    settings = get_settings()
    keeper = VisibilityKeeper(sqs_client(settings), settings.visibility_timeout, _live_requests)

    def ours(request: Any) -> bool:
        if request.name.startswith(task_prefix):
            return True
        return header is not None and header in (getattr(request, "request_dict", None) or {})

    @signals.task_received.connect(weak=False)
    def on_received(request: Any = None, **_: Any) -> None:
        if request is None or not ours(request):
            return
        info = getattr(request.message, "delivery_info", {}) or {}
        message, queue_url = info.get("sqs_message"), info.get("sqs_queue")
        if message and queue_url:
            count = (message.get("Attributes") or {}).get("ApproximateReceiveCount")
            keeper.track(request.id, queue_url, message["ReceiptHandle"], int(count) if count else None)

    @signals.task_postrun.connect(weak=False)
    def on_postrun(task_id: str = "", **_: Any) -> None:
        keeper.done(task_id)

    @signals.worker_shutting_down.connect(weak=False)
    def on_shutting_down(**_: Any) -> None:
        keeper.stop_in_place()
        log.info("shutting down: running tasks finish here; their runs' next steps are sent")

    @signals.worker_shutdown.connect(weak=False)
    def on_shutdown(**_: Any) -> None:
        keeper.close()

    return keeper
