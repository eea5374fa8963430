"""Names: dotted names work (a Celery worker registers them), names that cannot work are refused
at decoration (or at a signal's send and wait) with ``InvalidName``, naming the allowed characters."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from celery import Celery

from workflows import step, wait_for_signal, workflow
from workflows.celery.tasks import install
from workflows.core.model import registry
from workflows.errors import InvalidInput, InvalidName, RegistrationError, RunFailed
from workflows.testing import WorkflowEnv

BAD_NAMES = ["", " ", "charge card", " charge", "charge\n", "tab\there", "nul\x00", "bell\x07", "a#b", "#",
             "x" * 201, 5, ["a"]]
GOOD_NAMES = ["billing.charge", "billing.v2:charge", "team/charge@eu", "with-dash_and_underscore", "rechnung_prüfen",
              "x" * 200]
BAD_QUEUES = ["", "billing.eu", "high priority", "a#b", "q" * 81, "é", 5]


def victim(x: int = 1) -> int:
    return x


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
@pytest.mark.parametrize("decorator", [step, workflow], ids=["step", "workflow"])
def test_a_name_that_cannot_work_is_refused_at_decoration(decorator: Any, name: Any) -> None:
    with registry.scope():
        with pytest.raises(InvalidName, match=r"is not a valid name: use 1 to 200 characters: letters, digits") as err:
            decorator(name=name)(victim)
    assert isinstance(err.value, RegistrationError) and isinstance(err.value, InvalidInput)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("name", GOOD_NAMES)
@pytest.mark.parametrize("decorator", [step, workflow], ids=["step", "workflow"])
def test_dotted_and_other_names_are_accepted(decorator: Any, name: str) -> None:
    with registry.scope(redefine=True):
        assert decorator(name=name)(victim).name == name


@pytest.mark.parametrize("queue", BAD_QUEUES, ids=repr)
@pytest.mark.parametrize("decorator", [step, workflow], ids=["step", "workflow"])
def test_a_queue_sqs_cannot_name_is_refused(decorator: Any, queue: Any) -> None:
    with registry.scope(), pytest.raises(InvalidName, match="ASCII letters, digits, - and _"):
        decorator(name=f"q{uuid.uuid4().hex[:6]}", queue=queue)(victim)


def test_a_celery_app_registers_a_step_with_a_dotted_name() -> None:
    # Celery compiles a function named after the task's function: "step_billing.charge" was a SyntaxError.
    app = Celery(f"names-{uuid.uuid4().hex[:6]}", broker="memory://", set_as_current=False)
    with registry.scope(redefine=True):
        install(app)
        charge = step(name="billing.charge")(victim)
        task = app.tasks["workflows.step.billing.charge"]
        assert task.name == f"workflows.step.{charge.name}"
        assert task.__header__.func.__name__ == "step_billing_charge"


def test_a_signal_name_with_a_hash_is_refused_at_send_and_at_wait() -> None:
    with WorkflowEnv() as env:
        @workflow(name="names.waiter")
        def waiter() -> Any:
            return wait_for_signal("go#1")

        run = env.start(waiter)
        with pytest.raises(InvalidName, match="signal name 'go#1'"):
            env.signal(run, "go#1")
        with pytest.raises(RunFailed, match="InvalidName: signal name 'go#1' is not a valid name"):
            env.run_until_complete(run)  # the run fails with the error, at once
