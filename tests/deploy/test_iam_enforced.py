"""A deployment under its own IAM policies: every process holds exactly the policy the template generates.

A moto server enforcing IAM (``workflows local-aws --enforce-iam``, its own process) holds
one user per role, carrying the template's policy with its references resolved to the
test's tables, queues and bucket. Worker, beat, hook endpoint, dashboard, client and
operator each run as a process under their own keys.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.conftest import ROOT
from tests.deploy.policy_arns import policies
from tests.processes import stop
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e
pytest.importorskip("moto", reason="SKIPPED LOUDLY: moto is not installed (pip install -e '.[dev]')")
pytest.importorskip("uvicorn", reason="SKIPPED LOUDLY: uvicorn is not installed (pip install -e '.[dev]')")

REGION = "us-east-1"
THRESHOLD = 2048  # payloads above it go to S3
BLOB = 3000  # the journey's argument: over the threshold, and its step result too


class Deployment:
    """The enforcing server, the test's prefix, and each role's environment."""

    def __init__(self, url: str, env: dict[str, str], logs: Path) -> None:
        self.url = url
        self.env = env
        self.logs = logs
        self.keys: dict[str, dict[str, str]] = {}
        self.procs: list[subprocess.Popen[bytes]] = []

    def role_env(self, role: str) -> dict[str, str]:
        """The environment of a process under ``role``'s keys."""
        return {**self.env, **self.keys[role]}

    def client(self, service: str, role: str) -> Any:
        """A boto3 client of ``service`` under ``role``'s keys."""
        keys = self.keys[role]
        return boto3.client(service, endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=keys["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"])

    def spawn(self, role: str, name: str, *args: str, extra: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``python *args`` under ``role``'s keys, its output in ``name``.log."""
        log = open(self.logs / f"{name}.log", "ab")
        proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, env={**self.role_env(role), **(extra or {})},
                                stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def run(self, role: str, *args: str, timeout: float = 90) -> str:
        """Run ``workflows *args`` under ``role``'s keys; its standard output (fails on a non-zero exit)."""
        done = subprocess.run([sys.executable, "-m", "workflows", *args], cwd=ROOT, env=self.role_env(role),
                              capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"workflows {' '.join(args)} as {role}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _base_env(server_env: dict[str, str], prefix: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORKFLOWS_"))}
    return {**inherited, **server_env, "PYTHONPATH": str(ROOT),
            "WORKFLOWS_TABLE_PREFIX": prefix, "WORKFLOWS_QUEUE_PREFIX": prefix,
            "WORKFLOWS_PAYLOAD_BUCKET": f"{prefix}payloads", "WORKFLOWS_IMPORTS": "tests.e2e.iam_flows",
            "WORKFLOWS_PAYLOAD_THRESHOLD_BYTES": str(THRESHOLD), "WORKFLOWS_MAX_PAYLOAD_BYTES": str(1024 * 1024),
            "WORKFLOWS_SWEEP_INTERVAL": "0.25", "WORKFLOWS_LEASE_SECONDS": "6", "WORKFLOWS_VISIBILITY_TIMEOUT": "20",
            "WORKFLOWS_POLL_WAIT_SECONDS": "1", "WORKFLOWS_HOOK_SECRET": secrets.token_urlsafe(32),
            "WORKFLOWS_DASHBOARD_TOKEN": secrets.token_urlsafe(24)}


#: The policies of each user: an operator (CLI, dashboard) holds the client's and the operator's.
ATTACHED = {"Worker": ("Worker",), "Beat": ("Beat",), "Client": ("Client",), "HookEndpoint": ("HookEndpoint",),
            "Operator": ("Client", "Operator")}


def _create_users(deployment: Deployment, documents: dict[str, dict[str, Any]]) -> None:
    iam = deployment.client("iam", "admin")
    arns = {role: iam.create_policy(PolicyName=f"{role}Policy", PolicyDocument=json.dumps(document))["Policy"]["Arn"]
            for role, document in documents.items()}
    assert sorted(arns) == sorted(ATTACHED)
    for role, attached in ATTACHED.items():
        iam.create_user(UserName=role)
        for policy in attached:
            iam.attach_user_policy(UserName=role, PolicyArn=arns[policy])
        key = iam.create_access_key(UserName=role)["AccessKey"]
        deployment.keys[role] = {"AWS_ACCESS_KEY_ID": key["AccessKeyId"],
                                 "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"]}


def _wait_http(port: int, proc: subprocess.Popen[bytes], deadline: float = 30) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end and proc.poll() is None:
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
            return
        except OSError:
            time.sleep(0.2)  # polls until the port listens (the loop is the condition)
    raise AssertionError(f"nothing listens on port {port} (exit code {proc.poll()})")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """Tables, queues and bucket made by the administrator; a user per role; worker, beat, hook endpoint
    and dashboard running under their own keys."""
    from workflows.local.iam import EnforcedLocalAWS
    from workflows.local.server import free_port

    logs = tmp_path_factory.mktemp("iam")
    with EnforcedLocalAWS(open(logs / "server.log", "ab")) as aws:
        prefix = f"iam{uuid.uuid4().hex[:6]}-"
        deployment = Deployment(aws.url, _base_env(aws.environ(REGION), prefix), logs)
        deployment.keys["admin"] = aws.admin
        deployment.run("admin", "init-aws")
        template = json.loads(deployment.run("admin", "aws", "template"))
        account = deployment.client("sts", "admin").get_caller_identity()["Account"]
        _create_users(deployment, policies(template, REGION, account))
        deployment.hook_port, deployment.web_port = free_port(), free_port()  # type: ignore[attr-defined]
        try:
            deployment.spawn("Worker", "worker", "-m", "workflows", "worker", "--loglevel", "INFO", "-c", "2",
                             "-Q", "workflows,steps")
            deployment.spawn("Beat", "beat", "-m", "workflows", "beat")
            hooks = deployment.spawn("HookEndpoint", "hooks", "-m", "uvicorn", "workflows.http:app",
                                     "--port", str(deployment.hook_port))  # type: ignore[attr-defined]
            web = deployment.spawn("Operator", "dashboard", "-m", "workflows", "web",
                                   "--port", str(deployment.web_port))  # type: ignore[attr-defined]
            _wait_http(deployment.hook_port, hooks)  # type: ignore[attr-defined]
            _wait_http(deployment.web_port, web)  # type: ignore[attr-defined]
            yield deployment
        finally:
            stop(deployment.procs)


def _until(check: Callable[[], Any], what: str, deployment: Deployment, timeout: float = 60) -> Any:
    try:
        return wait_for(check, timeout, poll=0.5, what=what)
    except AssertionError:
        pass
    logs = "\n".join(f"--- {n}\n{deployment.log(n)[-3000:]}" for n in ("worker", "beat", "hooks", "dashboard"))
    raise AssertionError(f"{what} did not happen within {timeout}s\n{logs}")


def _status_line(shown: str, status: str) -> str | None:
    """``shown`` (``workflows runs show``) if the run has ``status``."""
    return shown if f"status    {status}" in shown else None


def test_a_run_completes_with_every_process_under_its_own_policy(deployment: Deployment) -> None:
    hook_url = f"http://127.0.0.1:{deployment.hook_port}"  # type: ignore[attr-defined]
    client = deployment.spawn("Client", "client", "-m", "tests.e2e.iam_flows", "journey", hook_url, str(BLOB))
    try:
        client.wait(timeout=120)
    except subprocess.TimeoutExpired:
        client.kill()
    out = deployment.log("client")
    assert client.returncode == 0, out + deployment.log("worker")[-3000:]
    journey = json.loads(out.strip().splitlines()[-1])
    assert journey["result"] == {"size": 2 * BLOB, "decision": {"approved": True}, "lengths": list(range(1, 13))}
    s3 = deployment.client("s3", "admin")
    objects = s3.list_objects_v2(Bucket=deployment.env["WORKFLOWS_PAYLOAD_BUCKET"]).get("Contents", [])
    assert objects, "the payloads over the threshold went to S3"

    # The operator forks the run at its hook: the fork gets copies of its step's and sleep's outcomes
    # (a batch write of history items), then waits on a new hook until the client cancels it.
    fork_id = deployment.run("Operator", "runs", "fork", journey["run_id"], "--at", "2").split()[-1]
    assert fork_id != journey["run_id"]
    shown = _until(lambda: _status_line(deployment.run("Client", "runs", "show", fork_id), "suspended"),
                   "the fork's hook", deployment)
    assert "grow" in shown and "completed" in shown, shown
    deployment.run("Client", "runs", "cancel", fork_id)
    _until(lambda: _status_line(deployment.run("Client", "runs", "show", fork_id), "cancelled"), "the fork's end",
           deployment)
    # The worker that ended the fork closed its hook; one that died before doing so leaves it pending:
    # put it back so. A late resume then finds the run ended and closes the run's hooks itself (a Query
    # of their index, then a BatchGetItem of the hooks), answering 410, not the 500 of a denied request.
    admin, hooks_table = deployment.client("dynamodb", "admin"), deployment.env["WORKFLOWS_TABLE_PREFIX"] + "hooks"
    for item in admin.scan(TableName=hooks_table)["Items"]:
        if item["run_id"]["S"] == fork_id:
            admin.update_item(TableName=hooks_table, Key={"token_hash": item["token_hash"]},
                              UpdateExpression="SET #s = :p", ExpressionAttributeNames={"#s": "status"},
                              ExpressionAttributeValues={":p": {"S": "pending"}})
    late = deployment.spawn("Client", "late-hook", "-m", "tests.e2e.iam_flows", "late-hook", fork_id, hook_url)
    late.wait(timeout=60)
    assert json.loads(deployment.log("late-hook").strip().splitlines()[-1]) == {"status": 410}, \
        deployment.log("late-hook")[-2000:] + deployment.log("hooks")[-3000:]

    deployment.run("Client", "schedules", "create", "scheduled", "--every", "1s", "--id", "every-second")
    listed = _until(lambda: "completed" in deployment.run("Client", "runs", "list", "--workflow", "scheduled"),
                    "a scheduled run", deployment)
    assert listed
    deployment.run("Client", "schedules", "delete", "every-second")

    # A high-priority run: its messages go to the -high queues, which the template's policies cover.
    urgent = deployment.run("Client", "runs", "start", "scheduled", "--priority", "high").split()[-1]
    shown = _until(lambda: _status_line(deployment.run("Client", "runs", "show", urgent), "completed"),
                   "the high-priority run", deployment)
    assert "priority  high" in shown, shown

    # An update: the client stores the request (signals) and reads the answer (history); the worker answers.
    counter = deployment.run("Client", "runs", "start", "counter").split()[-1]
    answer = deployment.run("Client", "runs", "update", counter, "add", "--payload", "2", "--timeout", "60")
    assert answer.strip() == "2", answer
    # Beat's keep-alive pass renews the live counter's history items (made due now: a real pass waits a week).
    keeper = deployment.spawn("Beat", "keep-alive", "-m", "tests.e2e.iam_flows", "keep-alive", counter)
    keeper.wait(timeout=60)
    kept = json.loads(deployment.log("keep-alive").strip().splitlines()[-1])
    assert kept["kept"] and kept["ttls"] == [kept["until"]], kept
    # The operator's commands for beat's retention work, under beat's keys (exit 1 on any failure, such
    # as a denied request): a whole keep-alive pass (it lists and reads every live run) and a sweep.
    assert "live run(s)" in deployment.run("Beat", "retention", "keep-alive")
    assert "ended run(s) with their TTL" in deployment.run("Beat", "retention", "sweep")
    deployment.run("Client", "runs", "signal", counter, "stop")
    _until(lambda: _status_line(deployment.run("Client", "runs", "show", counter), "completed"), "the counter's end",
           deployment)

    conn = http.client.HTTPConnection("127.0.0.1", deployment.web_port, timeout=15)  # type: ignore[attr-defined]
    conn.request("GET", "/runs", headers={"Authorization": f"Bearer {deployment.env['WORKFLOWS_DASHBOARD_TOKEN']}"})
    response = conn.getresponse()
    page = response.read().decode()
    assert response.status == 200 and journey["run_id"] in page
    for name in ("worker", "beat", "hooks", "dashboard"):
        assert "AccessDenied" not in deployment.log(name), (name, deployment.log(name)[-3000:])


def _denied(call: Callable[[], Any]) -> None:
    with pytest.raises(ClientError) as info:
        call()
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403, info.value.response


def test_each_role_is_refused_what_it_must_not_do(deployment: Deployment) -> None:
    prefix = deployment.env["WORKFLOWS_TABLE_PREFIX"]
    queue = f"{deployment.url}/123456789012/{prefix}workflows"
    client, hooks = deployment.client("dynamodb", "Client"), deployment.client("dynamodb", "HookEndpoint")
    _denied(lambda: client.delete_table(TableName=f"{prefix}runs"))
    _denied(lambda: deployment.client("sqs", "Client").receive_message(QueueUrl=queue))
    _denied(lambda: client.put_item(TableName=f"{prefix}history", Item={"run_id": {"S": "r"}, "seq": {"N": "0"}}))
    _denied(lambda: deployment.client("sqs", "Beat").receive_message(QueueUrl=queue))
    _denied(lambda: hooks.delete_item(TableName=f"{prefix}hooks", Key={"token_hash": {"S": "h"}}))
