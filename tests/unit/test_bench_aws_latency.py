"""The counting front's AWS latency column (bench/aws_latency.py, bench/proxy.py): the added latency
overlaps between requests, the emulator's service still takes turns, and both are counted."""

from __future__ import annotations

import io
import json
import threading
import time
from typing import Any, Callable

import pytest

from bench import aws_latency
from bench.proxy import CountingMiddleware

SERVE = 0.03  # the stand-in emulator's time per request


def slow_emulator(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
    """A WSGI app standing in for moto: every request takes ``SERVE`` seconds."""
    time.sleep(SERVE)  # the emulator's service time is what the test measures
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b"{}"]


def call(front: CountingMiddleware, path: str = "/", body: bytes = b"", target: str = "", method: str = "POST") -> Any:
    environ = {"PATH_INFO": path, "REQUEST_METHOD": method, "CONTENT_LENGTH": str(len(body)),
               "wsgi.input": io.BytesIO(body), "CONTENT_TYPE": "application/x-amz-json-1.0",
               "HTTP_USER_AGENT": "Boto3/1.40 app/worker"}
    if target:
        environ["HTTP_X_AMZ_TARGET"] = target
    out = b"".join(front(environ, lambda *a: None))
    return json.loads(out) if path.startswith("/__bench/") else out


def get_item(front: CountingMiddleware) -> None:
    call(front, body=json.dumps({"TableName": "wfb-runs", "Key": {"run_id": {"S": "r"}}}).encode(),
         target="DynamoDB_20120810.GetItem")


def row(front: CountingMiddleware, operation: str) -> dict[str, Any]:
    return next(r for r in call(front, "/__bench/counts", method="GET") if r["operation"] == operation)


def test_added_latency_overlaps_while_the_emulator_takes_turns() -> None:
    front = CountingMiddleware(slow_emulator)
    assert call(front, "/__bench/latency", json.dumps({"dynamodb.GetItem": 200.0}).encode()) == {
        "dynamodb.GetItem": 200.0}
    threads = [threading.Thread(target=get_item, args=(front,)) for _ in range(4)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    # serial latency would take 4 x 0.2 s; overlapped, it is one 0.2 s plus four turns of the emulator
    assert 0.2 + 4 * SERVE - 0.01 < elapsed < 0.2 + 4 * SERVE + 0.25
    counted = row(front, "GetItem")
    assert counted["requests"] == 4
    assert counted["added_seconds"] == pytest.approx(0.8)
    assert counted["seconds"] >= 4 * SERVE - 0.01
    assert counted["held_seconds"] >= counted["seconds"]  # the turn covers the service (and the sizing of writes)
    assert counted["wait_seconds"] >= (0 + 1 + 2 + 3) * SERVE * 0.5  # the later ones waited for the earlier


def test_no_latency_is_added_until_a_table_is_set_nor_for_operations_it_omits() -> None:
    front = CountingMiddleware(slow_emulator)
    get_item(front)
    assert row(front, "GetItem")["added_seconds"] == 0
    call(front, "/__bench/latency", json.dumps({"sqs.SendMessage": 16}).encode())
    get_item(front)
    assert row(front, "GetItem")["added_seconds"] == 0
    call(front, "/__bench/latency", b"{}")
    assert call(front, "/__bench/latency", method="GET") == {}


def test_set_overrides_one_operation_and_leaves_the_rest() -> None:
    changes, rest = aws_latency.overrides(["aws.dynamodb.GetItem=9", "seq_runs=3"])
    assert changes == {"dynamodb.GetItem": 9.0} and rest == ["seq_runs=3"]
    table = aws_latency.table(changes)
    assert table["dynamodb.GetItem"] == 9.0 and table["sqs.SendMessage"] == aws_latency.AWS_MS["sqs.SendMessage"]
    assert aws_latency.seconds(table, "dynamodb", "GetItem") == pytest.approx(0.009)
    assert aws_latency.seconds(table, "dynamodb", "ListTables") == 0.0
    with pytest.raises(SystemExit, match="milliseconds"):
        aws_latency.overrides(["aws.dynamodb.GetItem=fast"])
