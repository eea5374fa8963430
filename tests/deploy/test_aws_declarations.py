"""Every AWS request is declared where it is made (``workflows.core.storage.aws_actions``), and the
call graph that carries the declarations to each role's entry points (``aws_reach``) follows what runs.

The declarations are checked against the source: a request made without one fails, and so does a
declaration that misses what the source says its calls make. The call graph is checked against
traced runs: a call it does not follow would let a needed grant look unused
(test_policy_coverage.py compares the policies with what the graph finds).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.deploy.aws_reach import CallTrace, Graph, Requests, graph
from tests.testing import kit_flows as flows
from workflows.deploy.resources import table_specs
from workflows.settings import Settings
from workflows.testing import WorkflowEnv

TABLES = {t.name for t in table_specs(Settings())}
INDEXED = {t.name for t in table_specs(Settings()) if t.indexes}
#: Resources a declaration may name beyond tables: queues, the dead-letter queue, the payload
#: objects and bucket, every table (provisioning), the stack (deployment), and ``*``.
OTHER_RESOURCES = {"queues", "dlq", "payloads", "bucket", "tables", "stack", "*"}


# -- the declarations ---------------------------------------------------------------------------------
def test_every_aws_request_in_the_source_is_declared() -> None:
    g = graph()
    undeclared = [f"{r.node}:{r.line}: {r.text}" for r in Requests(g).found if not g.nodes[r.node].has_declaration]
    assert not undeclared, "AWS requests without @aws_actions where they are made:\n" + "\n".join(undeclared)


def test_each_declaration_covers_the_requests_its_function_makes() -> None:
    """Where the source says which request a call makes (a model's ``get`` is a GetItem on its
    table, ``put_object`` a PutObject), the function's declaration names it."""
    g = graph()
    wrong = []
    for request in Requests(g).found:
        node = g.nodes[request.node]
        if node.elsewhere is not None:
            continue
        declared = {a for a, _ in node.declared} | {a for a, _ in node.per_param}
        for action, resource in request.actions:
            if action == "dynamodb:?":
                ok = any(a.startswith("dynamodb:") for a in declared)
            elif resource == "?" or node.per_param:
                ok = action in declared
            else:
                ok = (action, resource) in node.declared
            if not ok:
                wrong.append(f"{request.node}:{request.line}: {request.text} needs {action} on {resource}")
    assert not wrong, "\n".join(wrong)


def test_the_scan_finds_each_kind_of_request() -> None:
    """The scan sees PynamoDB's model, index and item requests, boto3's, Celery's and kombu's."""
    found = {(r.node, a) for r in Requests(graph()).found for a in r.actions}
    assert ("persistence.runs:RunStore.get_run", ("dynamodb:GetItem", "runs")) in found
    assert ("persistence.timers:TimerStore.due_timers", ("dynamodb:Query", "timers/index")) in found
    assert ("persistence.reindex:ListingKeys._reindex", ("dynamodb:UpdateItem", "runs")) in found  # a partial
    assert ("persistence.reindex:ListingKeys.reindex_tags", ("dynamodb:DeleteItem", "tags")) in found  # scanned
    assert ("persistence.blobs:S3Blobs._copy", ("s3:PutObject", "?")) in found
    assert ("workflows.celery.transport:CeleryTransport.send_resume", ("sqs:SendMessage", "?")) in found
    assert ("workflows.celery.sqs:Channel._schedule_queue", ("sqs:ReceiveMessage", "?")) in found
    assert ("persistence.base:StoreBase.transaction", ("dynamodb:TransactWriteItems", "?")) in found


def test_every_table_a_call_passes_is_known() -> None:
    """A call of a function declared on a parameter (``read_item(table, ...)``, ``Put(table, ...)``)
    passes a literal, a constant or its caller's parameter, or its caller declares its tables."""
    g = graph()
    unresolved = [u for n in g.nodes.values() if not (n.declared or n.elsewhere) for u in n.unresolved]
    assert not unresolved, "\n".join(unresolved)


def test_declarations_name_the_stacks_resources_and_iams_actions() -> None:
    import cfnlint

    known = json.loads((Path(cfnlint.__file__).parent / "data/AdditionalSpecs/Policies.json").read_text())
    resources = TABLES | {f"{t}/index" for t in INDEXED} | OTHER_RESOURCES
    for node in graph().nodes.values():
        for action, resource in node.actions:
            service, name = action.split(":")
            assert name.lower() in known[service]["Actions"], (node.key, action)
            assert resource in resources, (node.key, action, resource)


def test_the_plan_ops_declare_their_item_actions() -> None:
    """A write plan's ops are its requests' declarations; an ``own`` check is read back, not sent."""
    g = graph()
    create_run = g.nodes["workflows.core.storage.writes.runs:RunWrites.create_run"].actions
    assert {("dynamodb:PutItem", "runs"), ("dynamodb:PutItem", "idempotency"), ("dynamodb:GetItem", "runs")} \
        <= create_run  # its own check: carries("runs", ...)
    assert ("dynamodb:ConditionCheckItem", "runs") not in create_run
    assert ("dynamodb:GetItem", "{table}") not in g.nodes["persistence.plans:PlanStore.read_item"].actions
    assert ("dynamodb:GetItem", "table") in g.nodes["persistence.plans:PlanStore.read_item"].per_param


# -- the graph against what runs ------------------------------------------------------------------------
def test_the_graph_holds_the_calls_runs_make(workflow_env: WorkflowEnv) -> None:
    """Runs of the testing kit (steps, retries, signals, a hook, a fan-out, children, continue-as-new,
    a cancel), traced: every call between functions of the packages is one the graph follows (from
    the caller, or from what passed the caller its callback), so what it finds unused is unused."""
    with CallTrace(graph()) as trace:
        assert workflow_env.start(flows.kit_pay, 500, False).result() == "charged 500"
        cart = workflow_env.start(flows.kit_cart)
        workflow_env.signal(cart, "cart", "tea")
        workflow_env.signal(cart, "cart", "checkout")
        assert cart.result() == {"items": ["tea"], "closed_by": "checkout"}
        approval = workflow_env.start(flows.kit_approval, "1h")
        workflow_env.driver.settle()
        workflow_env.resume_hook(approval, "approve", "yes")
        assert approval.result() == "yes"
        assert workflow_env.start(flows.kit_fan, 3).result() == [0, 1, 4]
        assert workflow_env.start(flows.kit_parent, [2, 3]).result() == 13
        assert workflow_env.start(flows.kit_countdown, 2).result() == 0
        sleeping = workflow_env.start(flows.kit_wait_forever)
        workflow_env.advance("1d")
        workflow_env.cancel(sleeping)
    assert len(trace.edges) > 300, len(trace.edges)  # it saw the engine at work
    assert not trace.unexplained(), "calls the graph misses:\n" + "\n".join(
        f"{caller} -> {callee}" for caller, callee in trace.unexplained())


def test_the_graph_is_built_once() -> None:
    assert isinstance(graph(), Graph) and graph() is graph()
