"""Installing into an existing Celery app: the settings check, existing tasks as steps, JSON messages.

No broker is reached: the SQS checks only build a connection object, and the message
test uses kombu's in-memory transport.
"""

from __future__ import annotations

import uuid

import pytest
from celery import Celery

from workflows import step
from workflows.celery.install import add_queue, check_app
from workflows.celery.task_steps import STEP_HEADER, TaskStep
from workflows.celery.transport import CeleryTransport
from workflows.core.model import registry
from workflows.core.model.records import ResumeMessage, StepMessage
from workflows.errors import ConfigurationError, RegistrationError
from workflows.settings import Settings

SETTINGS = Settings(queue_prefix="proj-", region="eu-west-1")


def sqs_app(**conf: object) -> Celery:
    app = Celery(f"unit-{uuid.uuid4().hex[:6]}")
    app.conf.update({"broker_url": "sqs://", "task_serializer": "yaml", "accept_content": ["yaml", "json"],
                     "broker_transport_options": {"queue_name_prefix": "proj-", "region": "eu-west-1"}, **conf})
    return app


def test_an_sqs_app_with_the_same_prefix_and_region_passes_whatever_its_serializer() -> None:
    check_app(sqs_app(), SETTINGS)  # yaml (or pickle) by default is fine: workflow messages are JSON
    check_app(sqs_app(task_serializer="pickle", accept_content=["pickle", "application/json"]), SETTINGS)


@pytest.mark.parametrize(("conf", "named"), [
    ({"broker_url": "memory://"}, "not SQS"),
    ({"accept_content": ["pickle"]}, "add 'json'"),
    ({"broker_transport_options": {"queue_name_prefix": "other-"}}, "WORKFLOWS_QUEUE_PREFIX is 'proj-'"),
    ({"broker_transport_options": {"queue_name_prefix": "proj-", "region": "us-east-2"}}, "'us-east-2'"),
    ({"task_protocol": 1}, "protocol 2"),
])
def test_a_conflicting_setting_is_a_configuration_error_naming_it(conf: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigurationError, match="cannot install workflows into Celery app") as info:
        check_app(sqs_app(**conf), SETTINGS)
    assert named in str(info.value)


def test_the_engine_queues_are_added_to_the_apps_own() -> None:
    app = sqs_app(task_default_queue="default")
    add_queue(app, "workflows")
    add_queue(app, "workflows")
    assert [q.name for q in app.conf.task_queues] == ["default", "workflows"]
    add_queue(app, "steps")  # once Celery has built its queues, they are added there
    assert "steps" in app.amqp.queues and "workflows" in app.amqp.queues


@pytest.mark.filterwarnings("ignore::celery.exceptions.CDeprecationWarning")  # task queue= is deprecated, still used
def test_a_task_becomes_a_step_keeping_its_name_queue_and_body() -> None:
    app = sqs_app()

    @app.task(name="proj.unit.charge", queue="payments")
    def charge(order_id: str, cents: int) -> str:
        return f"rcpt-{order_id}-{cents}"

    made = step.from_task(charge, retries=1)
    assert isinstance(made, TaskStep)
    definition = registry.get_step("proj.unit.charge")
    assert (definition.name, definition.queue, definition.task.name) == ("proj.unit.charge", "payments",
                                                                         "proj.unit.charge")
    assert definition.retry.retries == 1
    assert made("o-1", 5) == "rcpt-o-1-5"  # outside a workflow: a plain call of the body
    assert made.delay is not None and made.apply_async == charge.apply_async  # still the task


def test_step_stacked_on_a_task_is_the_task_too() -> None:
    app = sqs_app()

    @step(retries=0)
    @app.task(name="proj.unit.notify", bind=True)
    def notify(self, text: str) -> str:  # type: ignore[no-untyped-def]
        return f"{self.name}: {text}"

    assert isinstance(notify, TaskStep) and notify.name == "proj.unit.notify"
    assert notify("hi") == "proj.unit.notify: hi"
    assert registry.get_step("proj.unit.notify").queue is None  # routed by the app's task_routes


def test_from_task_refuses_what_is_not_a_task() -> None:
    with pytest.raises(RegistrationError, match="needs a Celery task"):
        step.from_task(lambda: None)


def test_workflow_messages_are_json_whatever_the_apps_serializer() -> None:
    app = Celery(f"unit-{uuid.uuid4().hex[:6]}", broker="memory://")
    app.conf.update(task_serializer="yaml", accept_content=["yaml", "json"])

    @app.task(name="proj.unit.ship")
    def ship(order_id: str) -> str:
        return order_id

    step.from_task(ship)
    transport = CeleryTransport(app)
    transport.send_resume(ResumeMessage("run-1"))
    transport.send_step(StepMessage("proj.unit.ship", "run-1", 3, 1, '["o-1"]'))
    with app.connection_for_read() as conn:
        resume = conn.SimpleQueue("workflows").get(timeout=2)
        sent = conn.SimpleQueue(app.conf.task_default_queue).get(timeout=2)
    assert resume.content_type == "application/json" and resume.headers["task"] == "workflows.resume"
    assert sent.content_type == "application/json" and sent.headers["task"] == "proj.unit.ship"
    assert sent.headers[STEP_HEADER] == {"step": "proj.unit.ship", "run_id": "run-1", "pos": 3, "attempt": 1,
                                         "args": '["o-1"]'}
