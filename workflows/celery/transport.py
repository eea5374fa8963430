"""The Transport port over Celery: engine messages become Celery tasks on SQS.

Only sending lives here (no worker machinery), so a process that just starts runs
can use it; ``workflows.celery.tasks`` registers the tasks that receive the messages.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from celery import Celery

from ..core.model import registry
from ..core.model.priority import queue_for
from ..core.model.records import Branch, ResumeMessage, RunRecord, RunStatus, StepMessage
from ..core.storage.aws_actions import aws_actions
from ..core.storage.metering import count_sqs
from ..errors import UnknownStep
from ..observe import propagation
from .config import RESUME_QUEUE, STEP_QUEUE
from .sqs import batched_sends
from .task_steps import STEP_HEADER

if TYPE_CHECKING:
    from .visibility import VisibilityKeeper

RESUME_TASK = "workflows.resume"
#: Every engine message is JSON, whatever the app's default serializer is.
SERIALIZER = "json"
#: A first resume message carries its run (its first delivery skips the history Query) when
#: the arguments are this small.
FRESH_ARGS_LIMIT = 32 * 1024
#: Fields of a run never carried in a first resume message (a new run has counted nothing yet).
COUNTS = frozenset({"ddb_reads", "ddb_writes", "sqs_sends"})


def step_task_name(step: str) -> str:
    """The stable Celery task name of a step."""
    return f"workflows.step.{step}"


def step_task(step: str) -> Any:
    """The Celery task a step was made from (``step.from_task``), or None for a plain step."""
    try:
        return registry.get_step(step).task
    except UnknownStep:  # a process that sends a step it does not know: a plain step's message
        return None


def step_header(message: StepMessage) -> dict[str, Any]:
    """The ``workflows_step`` header of a step sent under its task's name."""
    header: dict[str, Any] = {"step": message.step, "run_id": message.run_id, "pos": message.pos,
                              "attempt": message.attempt, "args": message.args}
    if message.branch is not None:
        header["branch"] = message.branch.to_dict()
    if message.resent:
        header["resent"] = True
    return header


class CeleryTransport:
    """Sends engine messages as Celery tasks (JSON only, whatever the app's serializer)."""

    def __init__(self, celery: Celery, keeper: VisibilityKeeper | None = None) -> None:
        self.celery, self.keeper = celery, keeper

    @aws_actions("sqs:SendMessage@queues", "sqs:GetQueueUrl@queues", "sqs:GetQueueAttributes@queues",
                 "sqs:ListQueues@*")
    def send_step(self, message: StepMessage) -> None:
        count_sqs()
        task = step_task(message.step)
        if task is not None:  # under the task's name, on its app, routed like the task
            # routed by the app's task_routes (no queue of its own): at the routed queue, whatever its level
            options = {"queue": queue_for(message.queue, message.priority)} if message.queue else {}
            headers = {STEP_HEADER: step_header(message), **propagation.outgoing()}
            task.app.send_task(task.name, args=[], kwargs={}, headers=headers,
                               serializer=SERIALIZER, ignore_result=True,
                               argsrepr=f"<step {message.step} of run {message.run_id} at {message.pos}>",
                               **options)
            return
        kwargs = {"resent": True} if message.resent else {}
        branch = None if message.branch is None else message.branch.to_dict()
        self.celery.send_task(step_task_name(message.step),
                              args=[message.run_id, message.pos, message.attempt, message.args, branch],
                              kwargs=kwargs, queue=queue_for(message.queue or STEP_QUEUE, message.priority),
                              serializer=SERIALIZER,
                              headers=propagation.outgoing())

    def send_steps(self, messages: list[StepMessage]) -> None:
        """Send several step messages (a fan-out's branches), batched per queue (``sqs.batched_sends``)."""
        with batched_sends():
            for message in messages:
                self.send_step(message)

    @aws_actions("sqs:SendMessage@queues", "sqs:GetQueueUrl@queues", "sqs:GetQueueAttributes@queues",
                 "sqs:ListQueues@*")
    def send_resume(self, message: ResumeMessage) -> None:
        count_sqs()
        kwargs: dict[str, Any] = {"recovering": message.recovering}
        fresh = message.fresh
        if fresh is not None and len(fresh.args) <= FRESH_ARGS_LIMIT:
            kwargs["fresh"] = {k: v for k, v in dataclasses.asdict(fresh).items()
                               if v is not None and k not in COUNTS}
        self.celery.send_task(RESUME_TASK, args=[message.run_id], kwargs=kwargs,
                              queue=queue_for(RESUME_QUEUE, message.priority), serializer=SERIALIZER,
                              headers=propagation.outgoing())

    def runs_here(self, step: str, queue: str | None) -> bool:
        if self.keeper is None or self.keeper.stopping:
            return False
        task = step_task(step)
        if task is not None and task.app is not self.celery:
            return False  # only the task's own app runs it
        if queue is None:
            queue = (self.celery.amqp.router.route({}, task.name)["queue"].name if task is not None
                     else STEP_QUEUE)
        return queue in self.celery.amqp.queues.consume_from

    def dead_letter(self, reason: str, detail: dict[str, Any]) -> None:
        from .deadletter import dead_letter

        dead_letter(reason, json.dumps(detail, default=str), **detail)


def step_message(fields: dict[str, Any]) -> StepMessage:
    """The message a step task received (its Celery arguments by name, typed)."""
    return StepMessage(fields["step"], fields["run_id"], int(fields["pos"]), int(fields["attempt"]), fields["args"],
                       branch=Branch.from_dict(fields.get("branch")), resent=bool(fields.get("resent")))


def fresh_run(run_id: str, fields: dict[str, Any]) -> RunRecord | None:
    """The run a first resume message carries, or None if it is not a run of ``run_id``."""
    known = {f.name for f in dataclasses.fields(RunRecord)}
    try:
        run = RunRecord(**{k: v for k, v in fields.items() if k in known})
    except TypeError:
        return None
    return run if run.run_id == run_id and run.status == RunStatus.PENDING else None
