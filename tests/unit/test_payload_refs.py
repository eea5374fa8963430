"""Large payloads: references to the blob store instead of inline text (core/storage/payloads.py)."""

from __future__ import annotations

import hashlib
import json
import secrets
from typing import Any

import pytest

from tests.unit import payload_ref_flows as flows
from workflows import codec
from workflows.core.engine import Engine
from workflows.core.storage.payloads import Payloads, Reference, describe_payload, reference_of
from workflows.errors import ConfigurationError, PayloadTooLarge, PayloadUnavailable
from workflows.memory import RecordingTransport
from workflows.memory.blobs import MemoryBlobs
from workflows.settings import MAX_PAYLOAD_LIMIT, Settings
from workflows.testing import WorkflowEnv

SMALL = Settings(payload_threshold_bytes=1024, max_payload_bytes=4 * 1024 * 1024,
                 hook_secret=secrets.token_urlsafe(32))


class CountingBlobs(MemoryBlobs):
    """The memory adapter, counting reads."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0

    def get_blob(self, key: str) -> bytes | None:
        self.gets += 1
        return super().get_blob(key)


def test_a_payload_over_the_threshold_becomes_a_content_addressed_reference() -> None:
    blobs = CountingBlobs()
    payloads = Payloads(blobs, SMALL)
    value = {"text": "a" * 5000, "n": 1}
    ref_text = payloads.encode(value, "value")
    encoded = codec.dumps(value).encode()
    sha = hashlib.sha256(encoded).hexdigest()
    assert reference_of(ref_text) == Reference(f"payloads/{sha}", sha, len(encoded))
    assert len(ref_text) < 200
    assert blobs.objects == {f"payloads/{sha}": encoded}
    assert Payloads(blobs, SMALL).decode(ref_text) == value   # another process reads it back


def test_a_payload_at_the_threshold_stays_inline() -> None:
    blobs = MemoryBlobs()
    text = Payloads(blobs, SMALL).encode("a" * (1024 - 2), "value")
    assert text == codec.dumps("a" * 1022) and blobs.objects == {}


def test_writing_the_same_payload_again_is_harmless() -> None:
    blobs = MemoryBlobs()
    first = Payloads(blobs, SMALL).encode(["b" * 3000], "value")
    second = Payloads(blobs, SMALL).encode(["b" * 3000], "value")   # a retry, a duplicate, a race
    assert first == second and len(blobs.objects) == 1 and blobs.puts == 2


def test_a_process_does_not_rewrite_a_payload_it_just_wrote() -> None:
    blobs = MemoryBlobs()
    payloads = Payloads(blobs, SMALL)
    assert payloads.encode(["c" * 3000], "v") == payloads.encode(["c" * 3000], "v")  # e.g. a replay
    assert blobs.puts == 1


def test_a_user_payload_that_looks_like_a_reference_is_data() -> None:
    blobs = CountingBlobs()
    payloads = Payloads(blobs, SMALL)
    sha = hashlib.sha256(b'"x"').hexdigest()
    lookalike = {"__wf__": "blob", "v": {"key": f"payloads/{sha}", "sha256": sha, "size": 3}}
    text = payloads.encode(lookalike, "value")
    assert reference_of(text) is None
    assert payloads.decode(text) == lookalike and blobs.gets == 0


@pytest.mark.parametrize("text", [
    '{"__wf__":"blob","v":{"key":"../etc/passwd","sha256":"' + "0" * 64 + '","size":1}}',
    '{"__wf__":"blob","v":{"key":"payloads/' + "0" * 64 + '","sha256":"' + "0" * 64 + '","size":-1}}',
    '{"__wf__":"blob","v":{"key":"payloads/x","sha256":"x","size":1}}',
    '{"__wf__":"blob","v":{"key":"payloads/' + "0" * 64 + '","sha256":"' + "0" * 64 + '","size":1},"w":1}',
])
def test_only_a_well_formed_reference_is_ever_read(text: str) -> None:
    blobs = CountingBlobs()
    assert reference_of(text) is None
    assert Payloads(blobs, SMALL).resolve(text) == text and blobs.gets == 0


def test_a_payload_over_the_maximum_is_refused_before_anything_is_written() -> None:
    blobs = MemoryBlobs()
    with pytest.raises(PayloadTooLarge, match="over the limit of 4194304 bytes"):
        Payloads(blobs, SMALL).encode("d" * (4 * 1024 * 1024), "arguments of workflow 'w'")
    assert blobs.objects == {}


def test_without_a_blob_store_the_threshold_is_the_limit() -> None:
    with pytest.raises(PayloadTooLarge, match="over the limit of 1024 bytes"):
        Payloads(None, SMALL).encode("e" * 2000, "value")


def test_a_missing_or_altered_object_is_unavailable_not_wrong_data() -> None:
    blobs = MemoryBlobs()
    ref_text = Payloads(blobs, SMALL).encode("f" * 3000, "value")
    ref = reference_of(ref_text)
    assert ref is not None
    blobs.objects[ref.key] = codec.dumps("g" * 2998).encode()
    with pytest.raises(PayloadUnavailable, match="does not match its reference"):
        Payloads(blobs, SMALL).resolve(ref_text)
    blobs.delete_blob(ref.key)
    with pytest.raises(PayloadUnavailable, match="missing from the payload bucket"):
        Payloads(blobs, SMALL).resolve(ref_text)


def test_a_process_reads_an_object_once() -> None:
    blobs = CountingBlobs()
    ref_text = Payloads(blobs, SMALL).encode("h" * 3000, "value")
    reader = Payloads(blobs, SMALL)
    assert reader.decode(ref_text) == reader.decode(ref_text) == "h" * 3000
    assert blobs.gets == 1


def test_views_describe_a_reference_without_reading_it() -> None:
    blobs = CountingBlobs()
    ref_text = Payloads(blobs, SMALL).encode("i" * 1_500_000, "value")
    assert json.loads(describe_payload(ref_text) or "").startswith("<1.5 MB in the payload bucket, sha256 ")
    assert describe_payload("[1]") == "[1]" and blobs.gets == 0


def test_the_limits_are_checked() -> None:
    assert Settings(max_payload_bytes=MAX_PAYLOAD_LIMIT).inline_payload_bytes == 256 * 1024
    with pytest.raises(ConfigurationError, match="max_payload_bytes"):
        Settings(max_payload_bytes=MAX_PAYLOAD_LIMIT + 1)
    with pytest.raises(ConfigurationError, match="payload_threshold_bytes"):
        Settings(payload_threshold_bytes=400 * 1024)
    assert Settings(table_prefix="Prod_").bucket == "prod-payloads"
    assert Settings.from_env({"WORKFLOWS_PAYLOAD_BUCKET": "b", "AWS_ENDPOINT_URL": "http://h"}).s3_endpoint == "http://h"


def test_a_run_with_large_payloads_everywhere_keeps_small_records() -> None:
    text = "p" * 20_000
    with WorkflowEnv(settings=SMALL) as env:
        run = env.start(flows.large_everything, text)
        env.run_until_idle()
        env.signal(run, "data", {"rows": ["s" * 10] * 1000})
        env.run_until_idle()
        env.resume_hook(run, "approve", ["k" * 5000])
        result = run.result()
        assert result == {"doubled": text * 2, "size": 40_000, "branches": [text * 2, "xx"],
                          "signal": {"rows": ["s" * 10] * 1000}, "approval": ["k" * 5000]}
        store = env.store
        stored = [e.data for e in store.read_history(run.run_id)] + [store.get_run(run.run_id).args,
                                                                     store.get_run(run.run_id).result]
        assert max(len(t or "") for t in stored) < 1024
        assert sum(reference_of(t) is not None for t in stored) >= 3
        events = run.events()
        assert events[0]["args"] == [[text], {}]
        assert codec.loads(events[-1]["result"]) == result
        assert env.steps(run)[0].result == text * 2


class CountingReads:
    """A Blobs port that counts the reads it passes on."""

    def __init__(self, blobs: Any) -> None:
        self.blobs, self.keys = blobs, []  # type: list[str]

    def put_blob(self, key: str, data: bytes) -> None:
        self.blobs.put_blob(key, data)

    def get_blob(self, key: str) -> bytes | None:
        self.keys.append(key)
        return self.blobs.get_blob(key)


def test_a_fresh_process_replays_a_history_of_references_reading_each_object_once() -> None:
    text = "q" * 20_000
    with WorkflowEnv(settings=SMALL) as env:
        run = env.start(flows.large_everything, text)
        env.run_until_idle()  # waits for the signal: its history holds references
        fresh = Engine(env.store, RecordingTransport(), SMALL, clock=env.clock)  # another worker
        reads = CountingReads(fresh.payloads.blobs)
        fresh.payloads.blobs = reads
        signal = fresh.payloads.encode({"rows": ["t" * 10] * 1000}, "signal")
        assert reference_of(signal) is not None
        env.store.put_signal(run.run_id, "data", signal)
        fresh.resume(run.run_id)
        assert env.store.get_run(run.run_id).waiting["kind"] == "hook_wait"  # replayed up to the hook
        # the arguments, and the doubled text (a step's result, an argument, a branch's result) once
        assert sorted(reads.keys) == sorted({reads.keys[0], reads.keys[1]}) and len(reads.keys) == 2
