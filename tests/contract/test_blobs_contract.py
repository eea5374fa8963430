"""The Blobs port (large payloads): the S3 bucket over moto and the memory adapter behave the same."""

from __future__ import annotations

import hashlib
import uuid

import pytest

from workflows.core.storage.payloads import Payloads, reference_of
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


def test_a_copy_is_a_new_object_not_marked_ended(store) -> None:
    run = uuid.uuid4().hex
    source, target = f"payloads/a{run}/{'1' * 64}", f"payloads/b{run}/{'1' * 64}"
    store.blobs.put_blob(source, b'"payload"')
    assert store.blobs.mark_ended(source)
    assert store.blobs.copy_blob(source, target)  # the receiving run's copy: no tag of the source's
    assert store.blobs.get_blob(target) == b'"payload"'
    assert _ended(store, target) is False and _ended(store, source) is True


def test_copying_or_marking_a_missing_object_says_so(store) -> None:
    missing = f"payloads/{uuid.uuid4().hex}/{'2' * 64}"
    assert store.blobs.copy_blob(missing, f"payloads/{uuid.uuid4().hex}/{'2' * 64}") is False
    assert store.blobs.mark_ended(missing) is False


def test_marking_ended_keeps_the_bytes_and_counts_as_a_write(store) -> None:
    key = f"payloads/{uuid.uuid4().hex}/{'3' * 64}"
    store.blobs.put_blob(key, b'"kept"')
    [(_, written)] = store.blobs.list_blobs(key)
    assert store.blobs.mark_ended(key) and store.blobs.mark_ended(key)  # a repeat (a sweep run again) is harmless
    [(listed, marked)] = store.blobs.list_blobs(key)
    assert listed == key and marked >= written and store.blobs.get_blob(key) == b'"kept"'
    assert _ended(store, key) is True


def test_a_run_prefix_lists_its_objects_only_and_they_can_be_deleted(store) -> None:
    run = uuid.uuid4().hex
    keys = [f"payloads/{run}/{c * 64}" for c in "4567"]
    for key in keys:
        store.blobs.put_blob(key, b"1")
    store.blobs.put_blob(f"payloads/{run}x/{'8' * 64}", b"1")  # another run whose id starts the same
    assert [key for key, _ in store.blobs.list_blobs(f"payloads/{run}/")] == keys
    store.blobs.delete_blob(keys[0])
    store.blobs.delete_blob(keys[0])  # deleting what is gone does nothing
    assert [key for key, _ in store.blobs.list_blobs(f"payloads/{run}/")] == keys[1:]


def test_adopting_a_payload_copies_it_into_the_receiving_runs_prefix(store) -> None:
    settings = store.settings.with_(payload_threshold_bytes=1024, max_payload_bytes=MB)
    source, target = uuid.uuid4().hex, uuid.uuid4().hex
    text = Payloads(store.blobs, settings).encode("z" * 5000, "value", source)
    adopted = Payloads(store.blobs, settings).adopt(text, target)
    ref = reference_of(adopted)
    assert ref is not None and ref.key == f"payloads/{target}/{ref.sha256}"
    assert Payloads(store.blobs, settings).adopt(adopted, target) == adopted  # already its own: no request
    assert Payloads(store.blobs, settings).decode(adopted) == "z" * 5000
    assert Payloads(store.blobs, settings).adopt('"inline"', target) == '"inline"'


def _ended(store, key: str) -> bool:  # type: ignore[no-untyped-def]
    """Whether the object is marked ended, as the lifecycle rule sees it (its tags on S3)."""
    if type(store).__name__ != "DynamoStore":
        return key in store.blob_objects.ended
    from persistence.blobs import s3_client
    from workflows.deploy.payloads import ENDED_TAG

    tags = s3_client(store.settings).get_object_tagging(Bucket=store.settings.bucket, Key=key)["TagSet"]
    return {"Key": ENDED_TAG, "Value": "true"} in tags
