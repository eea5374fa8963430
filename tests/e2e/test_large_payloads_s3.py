"""Megabyte payloads on real workers: S3 (the moto server) holds them, DynamoDB and SQS references.

The test has tables, queues and a bucket of its own, and a worker allowed 8 MiB payloads, so the
session's workers (at the default limit) never see its messages.
"""

from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

from persistence import DynamoStore
from persistence.blobs import ensure_bucket, s3_client
from persistence.provision import create_queues, create_tables
from tests.e2e import large_payload_flows as flows
from tests.waiting import wait_for
from workflows import get_run, send_signal
from workflows.celery.producer import producer_transport
from workflows.core.engine import Engine
from workflows.core.model.embed import is_embedded, unembed
from workflows.core.storage.payloads import reference_of
from workflows.core.storage.retention import mark_payloads_ended
from workflows.runtime import get_engine, use_engine
from workflows.settings import Settings

pytestmark = pytest.mark.e2e
MB = 1024 * 1024


@pytest.fixture(scope="module")
def big_settings(settings: Settings) -> Settings:
    tag = uuid.uuid4().hex[:6]
    own = settings.with_(table_prefix=f"lp{tag}-", queue_prefix=f"lp{tag}-", max_payload_bytes=8 * MB)
    create_tables(own)
    create_queues(own)
    ensure_bucket(own)
    return own


@pytest.fixture(scope="module")
def big_worker(big_settings: Settings, spawn) -> Any:  # type: ignore[no-untyped-def]
    worker = spawn("worker", "-Q", "workflows,steps", env={
        "WORKFLOWS_TABLE_PREFIX": big_settings.table_prefix, "WORKFLOWS_QUEUE_PREFIX": big_settings.queue_prefix,
        "WORKFLOWS_MAX_PAYLOAD_BYTES": str(8 * MB), "WORKFLOWS_IMPORTS": flows.__name__})
    wait_for(lambda: "ready." in worker.output() or worker.popen.poll() is not None, 60, poll=0.2,
             what="the worker is ready")
    assert worker.popen.poll() is None, worker.output()
    return worker


@pytest.fixture()
def big_engine(big_settings: Settings) -> Iterator[None]:
    """This process starts and reads runs on the test's own tables and queues (a send-only
    transport of its own: a worker transport an earlier test installed sends to the session's)."""
    with use_engine(Engine(DynamoStore(big_settings), producer_transport(big_settings), big_settings)):
        yield


def _wait_for(run_id: str, status: str, timeout: float = 60) -> None:
    wait_for(lambda: get_run(run_id).status() == status, timeout, poll=0.2, what=f"run {run_id} is {status}")


def test_megabyte_arguments_results_and_signals_go_through_s3(  # type: ignore[no-untyped-def]
        big_settings, big_worker, big_engine) -> None:
    blob = uuid.uuid4().hex * (MB // 32)  # 1 MiB argument; its step returns 2 MiB
    signal = {"rows": [uuid.uuid4().hex for _ in range(30_000)]}  # ~1 MB signal payload
    run = flows.big_data.start(blob)
    _wait_for(run.run_id, "suspended")
    send_signal(run.run_id, "data", signal)
    assert run.result(timeout=60) == {"doubled": blob + blob, "received": signal}

    store = DynamoStore(big_settings)
    item = store.m.Run.get(run.run_id)
    history = store.read_history(run.run_id)
    stored = [item.args, item.result] + [e.data for e in history]
    assert max(len(text or "") for text in stored) < 1024, "every DynamoDB item holds references only"
    payloads = [unembed(t, "payload")[1] if is_embedded(t) else t for t in stored]  # the signal's record
    refs = {ref.key: ref.size for ref in map(reference_of, payloads) if ref is not None}
    assert len(refs) == 4  # the arguments, the step's result, the signal, the run's result
    listed = s3_client(big_settings).list_objects_v2(Bucket=big_settings.bucket, Prefix="payloads/")["Contents"]
    assert {o["Key"]: o["Size"] for o in listed if o["Key"] in refs} == refs
    assert run.events()[0]["args"] == [[blob], {}]  # events() reads the payloads back
    assert all(key.startswith(f"payloads/{run.run_id}/") for key in refs)  # the run owns its objects
    # What beat's retention sweep does for the ended run: every object of its prefix marked ended
    # (the step's arguments are the run's own, [[blob], {}]: the same content, so the same key).
    owned = [o["Key"] for o in s3_client(big_settings).list_objects_v2(
        Bucket=big_settings.bucket, Prefix=f"payloads/{run.run_id}/")["Contents"]]
    assert len(owned) == 4 and mark_payloads_ended(get_engine(), run.run_id) == 4
    tags = [s3_client(big_settings).get_object_tagging(Bucket=big_settings.bucket, Key=key)["TagSet"]
            for key in owned]
    assert tags == [[{"Key": "workflows-ended", "Value": "true"}]] * 4


def test_an_argument_just_under_the_threshold_travels_inline_through_sqs(  # type: ignore[no-untyped-def]
        big_settings, big_worker, big_engine) -> None:
    """A payload kept inline may fill the threshold (256 KiB): its message, base64-encoded by
    kombu, is over SQS's default 256 KiB limit, so the queues are made to take 1 MiB."""
    blob = "x" * (big_settings.payload_threshold_bytes - 1024)
    run = flows.big_data.start(blob)
    _wait_for(run.run_id, "suspended", timeout=30)  # its first resume was received
    assert reference_of(DynamoStore(big_settings).m.Run.get(run.run_id).args) is None  # held inline
    send_signal(run.run_id, "data", "ok")
    assert run.result(timeout=60) == {"doubled": blob + blob, "received": "ok"}


def test_a_step_limited_per_key_reads_its_key_from_arguments_in_s3(  # type: ignore[no-untyped-def]
        big_settings, big_worker, big_engine) -> None:
    """The step's arguments (1 MiB) travel as a reference to S3; its concurrency and rate keys are
    read from the arguments it stands for (the reference text was decoded instead, and every
    delivery failed with TypeError)."""
    blob = uuid.uuid4().hex * (MB // 32)
    customer = f"c-{uuid.uuid4().hex[:6]}"
    runs = []
    for extra in ("", "x"):  # one after the other: no beat sweeps this test's tables to retry a waiter
        runs.append(flows.big_per_customer.start(customer, blob + extra))
        assert runs[-1].result(timeout=60) == MB + len(extra)
    store = DynamoStore(big_settings)
    assert reference_of(store.m.Run.get(runs[0].run_id).args) is not None  # the arguments are in S3
    assert store.slot_holders(f"step:per_customer#{customer}") == []  # taken per key, and released
