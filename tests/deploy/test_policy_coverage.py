"""Policy coverage by construction: each IAM policy grants exactly what its process's code can ask for.

Every AWS request is declared where it is made (``workflows.core.storage.aws_actions``; checked by
test_aws_declarations.py); each role names its entry points (``workflows.deploy.policies.ROLES``).
These tests follow the calls from each role's entry points to the declarations (``aws_reach``: an
over-approximating call graph, see its docstring) and compare what they find with the template's
policy of that role: a grant missing fails, and so does a grant no reachable code needs. docs/aws.md's
per-role tables are checked against the same declarations.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from tests.deploy.aws_reach import ROOT, Action, graph
from workflows.deploy.policies import ROLES, Role, TableGrant, policy_document
from workflows.deploy.resources import table_specs
from workflows.deploy.template import build_template, logical_id
from workflows.settings import Settings

SETTINGS = Settings(table_prefix="tp-", queue_prefix="qp-")
TABLES = {t.name: t for t in table_specs(SETTINGS)}
INDEXED = {name for name, t in TABLES.items() if t.indexes}
BY_KEY = {role.key: role for role in ROLES}


TEMPLATE = build_template(SETTINGS, ["payments"])


def document(roles: tuple[Role, ...], role: str) -> dict[str, Any]:
    """The policy document of ``role``: the template's, or (``roles`` other than ROLES) one made by
    the template's function over the template's tables, queues and bucket."""
    if roles is ROLES:
        return dict(TEMPLATE["Resources"][role + "Policy"]["Properties"]["PolicyDocument"])
    resources = TEMPLATE["Resources"]
    queues = {lid: lid for lid, r in resources.items() if r["Type"] == "AWS::SQS::Queue" and lid != "DeadLetterQueue"}
    [made] = [r for r in roles if r.key == role]
    return policy_document(made, {name: logical_id(name, "Table") for name in TABLES}, INDEXED, queues,
                           "DeadLetterQueue", "PayloadBucket")


def grants(policy: dict[str, Any]) -> set[Action]:
    """The ``(action, resource)`` pairs a policy document grants, resources named as the
    declarations name them."""
    tables = {logical_id(name, "Table"): name for name in TABLES}
    found: set[Action] = set()
    for statement in policy["Statement"]:
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        resources: list[Any] = [statement["Resource"]] if isinstance(statement["Resource"], str) \
            else statement["Resource"]
        for resource in resources:
            if resource == "*":
                name = "*"
            elif "Fn::GetAtt" in resource:
                lid = resource["Fn::GetAtt"][0]
                name = tables.get(lid) or {"DeadLetterQueue": "dlq", "PayloadBucket": "bucket"}.get(lid, "queues")
            else:
                sub = resource["Fn::Sub"]
                name = "payloads" if sub.endswith("/payloads/*") else tables[sub[2:].split(".")[0]] + "/index"
            found.update((action, name) for action in actions)
    return found


def needs(role: Role) -> dict[Action, list[str]]:
    return graph().actions(role.entry_points, role.not_run)


def coverage(roles: tuple[Role, ...], role: str) -> list[str]:
    """What is wrong with the policy of ``role`` in a template of ``roles``: each grant missing (with
    the calls that need it) or unused."""
    by_key = {r.key: r for r in roles}
    found = needs(by_key[role])
    own = grants(document(roles, role))
    client = grants(document(roles, "Client"))
    have = own | (client if role == "Operator" else set())
    reached = graph().reach(by_key[role].entry_points, by_key[role].not_run)
    problems = []
    for action, resource in sorted(set(found) - have):
        path = " -> ".join(graph().path(reached, found[(action, resource)][0]))
        problems.append(f"{role} is not granted {action} on {resource}, which its code asks for: {path}")
    for action, resource in sorted(own - set(found)):
        problems.append(f"{role} is granted {action} on {resource}, which none of its code asks for")
    if role == "Operator":
        for action, resource in sorted(own & client):
            problems.append(f"Operator is granted {action} on {resource}, which ClientPolicy grants already")
    return problems


# -- the policies ---------------------------------------------------------------------------------------
def test_entry_points_name_code_that_exists() -> None:
    g = graph()
    for role in ROLES:
        assert role.entry_points, role.key
        for entry in role.entry_points:
            assert g.entry_keys(entry), (role.key, entry)
        for key in role.not_run:
            assert key in g.nodes, (role.key, key)


@pytest.mark.parametrize("role", [r.key for r in ROLES])
def test_each_policy_grants_exactly_what_its_code_can_ask_for(role: str) -> None:
    problems = coverage(ROLES, role)
    assert not problems, "\n".join(problems)


def _without(role: str, sid: str, table: str) -> tuple[Role, ...]:
    """ROLES with ``role``'s grant ``sid`` no longer on ``table``."""
    def cut(grant: TableGrant) -> TableGrant:
        if grant.sid != sid:
            return grant
        return dataclasses.replace(grant, tables=tuple(t for t in grant.tables if t != table))

    return tuple(dataclasses.replace(r, tables=tuple(cut(g) for g in r.tables)) if r.key == role else r
                 for r in ROLES)


def test_a_grant_taken_away_is_missed_with_the_calls_that_need_it() -> None:
    """The two grants found missing by hand (issue 40): the Worker's BatchWriteItem on signals (a
    continue-as-new after a signal) and Beat's on history (a rerun batch)."""
    [worker] = coverage(_without("Worker", "BatchWriteItem", "signals"), "Worker")
    assert worker.startswith("Worker is not granted dynamodb:BatchWriteItem on signals, which its code asks for: ")
    assert worker.endswith(" -> persistence.signals:SignalStore.delete_signals")
    [beat] = coverage(_without("Beat", "BatchWriteItem", "history"), "Beat")
    assert beat.startswith("Beat is not granted dynamodb:BatchWriteItem on history, which its code asks for: ")
    assert beat.endswith(" -> persistence.versions:VersionStore.copy_history")


def test_a_grant_added_for_nothing_is_unused() -> None:
    roles = tuple(dataclasses.replace(r, tables=(*r.tables, TableGrant("Extra", ("dynamodb:DeleteItem",),
                                                                      ("history",))))
                  if r.key == "Client" else r for r in ROLES)
    assert coverage(roles, "Client") == [
        "Client is granted dynamodb:DeleteItem on history, which none of its code asks for"]


# -- docs/aws.md ------------------------------------------------------------------------------------------
#: What the "On" column of docs/aws.md's per-role tables says, as the declarations say it.
DOC_RESOURCES = {"work queues": "queues", "dead-letter queue": "dlq"}


def documented(role: str) -> set[Action]:
    """The ``(action, resource)`` pairs of docs/aws.md's table of ``role``."""
    text = (ROOT / "docs" / "aws.md").read_text()
    section = re.search(rf"^### .*\(`{role}Policy`.*?\n(.*?)(?=^#)", text, re.M | re.S)
    assert section, role
    found: set[Action] = set()
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        service, actions = "", []
        for token in re.findall(r"`([^`]+)`", cells[0]):
            service = token.split(":")[0] if ":" in token else service
            actions.append(token if ":" in token else f"{service}:{token}")
        resources = [DOC_RESOURCES[p] for p in DOC_RESOURCES if p in cells[1]]
        for token in re.findall(r"`([^`]+)`", cells[1]):
            if token == "BUCKET/payloads/*":
                resources.append("payloads")
            elif token == "BUCKET":
                resources.append("bucket")
            elif token.endswith("/index/*"):
                resources.append(token.removesuffix("/*"))
            else:
                resources.append(token)
        assert resources, line
        found.update((a, r) for a in actions for r in resources)
    return found


@pytest.mark.parametrize("role", [r.key for r in ROLES])
def test_aws_md_lists_what_the_code_asks_for(role: str) -> None:
    need = set(needs(BY_KEY[role]))
    if role == "Operator":
        need -= set(needs(BY_KEY["Client"]))
    doc = documented(role)
    assert not need - doc, f"docs/aws.md's {role} table lacks {sorted(need - doc)}"
    assert not doc - need, f"docs/aws.md's {role} table lists what no code asks for: {sorted(doc - need)}"
