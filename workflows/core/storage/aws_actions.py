"""The AWS requests of the code, declared where they are made: what each IAM policy must grant.

A function (or class) that sends requests to AWS carries ``@aws_actions(...)``: the IAM actions
its requests need and what they act on, each as ``service:Action@resource``. Resources:

- a DynamoDB table by its short name (``runs``); ``runs/index`` for a query of its indexes;
- ``queues`` (the work queues), ``dlq`` (the dead-letter queue);
- ``payloads`` (the objects under the payload bucket's ``payloads/`` prefix), ``bucket`` (the bucket);
- ``tables`` (every table: provisioning), ``stack`` (the CloudFormation stack: deployment);
- ``*`` for an action IAM cannot limit to resources (``sqs:ListQueues``).

``{param}`` in place of a table: the table named by parameter ``param`` of the declared function
or dataclass (``read_item(table, ...)``, the write plans' ``Put(table, ...)``). Each call's
argument says which: a literal table name, a module constant, or a parameter of the caller
(which then declares the action on it in turn). A call whose table is none of these is inside a
function that declares its tables itself. A write plan's ``Check`` given as its ``own`` check (or
assigned to ``own``) is not sent: the store reads that item after a refusal, a ``GetItem``.

``elsewhere=``: the function sends requests whose actions are declared where they are made (the
store's plan interpreter sends the ops of the plans it is given); the text says where.

Declarations are metadata only: the decorator returns what it decorates, and nothing reads them
at run time. ``tests/deploy/test_aws_declarations.py`` checks that every request in the source has
one; ``tests/deploy/test_policy_coverage.py`` reads them from the source, follows the calls from each
process's entry points (``workflows.deploy.policies.ROLES``) and checks that each IAM policy grants
exactly what the code of that process can ask for.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

#: ``elsewhere`` of the store's plan interpreter: a plan's requests are its ops, each declared by its
#: class (``Put`` is a PutItem on its table, ...) where the plan is made; a plan's ``own`` check is a
#: GetItem, sent after a refusal.
PLAN_OPS = "the ops of each plan, where it is made (workflows.core.storage.plans)"


def aws_actions(*actions: str, elsewhere: str | None = None) -> Callable[[T], T]:
    """Declare the IAM actions of the AWS requests the decorated function or class makes.

    Args:
        actions: ``service:Action@resource`` (see the module's docstring).
        elsewhere: where the actions of the requests it sends are declared, when not here.
    """
    del actions, elsewhere  # read from the source by tests/deploy

    def declared(target: T) -> T:
        return target

    return declared
