"""The Blobs port (large payloads): the S3 bucket over moto and the memory adapter behave the same."""

from __future__ import annotations

import hashlib
import uuid

import pytest

from workflows.core.payloads import Payloads, reference_of
from workflows.errors import PayloadUnavailable

MB = 1024 * 1024


@pytest.fixture(autouse=True)
def bucket(store) -> None:  # type: ignore[no-untyped-def]
    """The DynamoDB variant's payload bucket (init-aws creates it in a deployment)."""
    if type(store).__name__ == "DynamoStore":
        from persistence.blobs import ensure_bucket

        ensure_bucket(store.settings)


def test_an_object_reads_back_byte_for_byte(store) -> None:
    key = f"payloads/{uuid.uuid4().hex}"
    data = bytes(range(256)) * 8 * 1024  # 2 MiB, every byte value
    store.blobs.put_blob(key, data)
    assert store.blobs.get_blob(key) == data


def test_a_missing_object_reads_as_none(store) -> None:
    assert store.blobs.get_blob(f"payloads/{uuid.uuid4().hex}") is None


def test_putting_an_object_again_keeps_it(store) -> None:
    key = f"payloads/{uuid.uuid4().hex}"
    store.blobs.put_blob(key, b'"same"')
    store.blobs.put_blob(key, b'"same"')  # a retried or duplicated write of a content address
    assert store.blobs.get_blob(key) == b'"same"'


def test_a_large_payload_round_trips_through_its_reference(store) -> None:
    settings = store.settings.with_(payload_threshold_bytes=64 * 1024, max_payload_bytes=8 * MB)
    value = {"rows": [f"row {i} " + uuid.uuid4().hex for i in range(40_000)]}  # ~2 MB
    text = Payloads(store.blobs, settings).encode(value, "value")
    ref = reference_of(text)
    assert ref is not None and ref.size > MB
    assert hashlib.sha256(store.blobs.get_blob(ref.key)).hexdigest() == ref.sha256
    assert Payloads(store.blobs, settings).decode(text) == value  # a fresh process: no cache


def test_a_reference_whose_object_is_gone_is_unavailable(store) -> None:
    settings = store.settings.with_(payload_threshold_bytes=1024)
    sha = hashlib.sha256(uuid.uuid4().bytes).hexdigest()
    text = '{"__wf__":"blob","v":{"key":"payloads/' + sha + '","sha256":"' + sha + '","size":2000}}'
    with pytest.raises(PayloadUnavailable, match="missing"):
        Payloads(store.blobs, settings).resolve(text)
