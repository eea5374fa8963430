"""The embedded local AWS answers real DynamoDB and SQS calls over HTTP."""

from __future__ import annotations

import builtins
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import boto3
import pytest

from workflows.errors import ConfigurationError
from workflows.local.server import LocalAWS, free_port


def _client(service: str, env: dict[str, str]) -> Any:
    return boto3.client(
        service,
        endpoint_url=env[f"AWS_ENDPOINT_URL_{service.upper()}"],
        region_name=env["AWS_DEFAULT_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
    )


def test_free_port_is_bindable() -> None:
    port = free_port()
    assert 0 < port < 65536
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_dynamodb_and_sqs_round_trip_then_reset() -> None:
    # moto keeps its state per process, and reset() wipes all of it: run in a fresh process
    # so neither this test nor the session's server sees the other's tables.
    out = subprocess.run([sys.executable, "-c", "from tests.unit.test_localstack import round_trip; round_trip()"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "round trip ok" in out.stdout


def round_trip() -> None:
    """Create, use and reset state on a fresh server; run in its own process."""
    port = free_port()
    aws = LocalAWS(port=port).start()
    try:
        assert aws.url == f"http://127.0.0.1:{port}"
        env = aws.environ()
        assert env["AWS_ENDPOINT_URL"] == env["AWS_ENDPOINT_URL_DYNAMODB"] == aws.url
        assert env["AWS_ENDPOINT_URL_SQS"] == aws.url
        assert env["AWS_DEFAULT_REGION"] == "us-east-1"
        assert aws.environ(region="eu-west-1")["AWS_DEFAULT_REGION"] == "eu-west-1"

        dynamodb = _client("dynamodb", env)
        dynamodb.create_table(
            TableName="t-runs",
            KeySchema=[{"AttributeName": "run_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "run_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        dynamodb.put_item(TableName="t-runs", Item={"run_id": {"S": "r1"}, "n": {"N": "7"}})
        item = dynamodb.get_item(TableName="t-runs", Key={"run_id": {"S": "r1"}})["Item"]
        assert item == {"run_id": {"S": "r1"}, "n": {"N": "7"}}
        assert dynamodb.list_tables()["TableNames"] == ["t-runs"]

        sqs = _client("sqs", env)
        queue_url = sqs.create_queue(QueueName="t-steps")["QueueUrl"]
        sqs.send_message(QueueUrl=queue_url, MessageBody="hello")
        messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)["Messages"]
        assert [m["Body"] for m in messages] == ["hello"]
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=messages[0]["ReceiptHandle"])
        assert "Messages" not in sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0)

        aws.reset()
        assert dynamodb.list_tables()["TableNames"] == []
        assert "QueueUrls" not in sqs.list_queues()
    finally:
        aws.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
    print("round trip ok")


def test_context_manager_picks_a_port_and_stops() -> None:
    with LocalAWS() as aws:
        assert aws.port is not None and aws.port > 0
        tables = _client("dynamodb", aws.environ()).list_tables()["TableNames"]
        assert isinstance(tables, list)
    aws.stop()  # a second stop is harmless


def test_port_in_use_is_a_configuration_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        with pytest.raises(ConfigurationError, match="in use"):
            LocalAWS(port=sock.getsockname()[1]).start()


def test_missing_moto_raises_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_moto(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "moto" or name.startswith("moto."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_moto)
    with pytest.raises(ConfigurationError, match=r"pip install 'moto\[server\]'"):
        LocalAWS(port=free_port()).start()
