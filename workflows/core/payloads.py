"""Large payloads: kept in a blob store (S3), referenced from DynamoDB items and SQS messages.

A payload is the encoded JSON text of an argument list, a result, a hook or a signal payload
(``workflows.codec``). One whose encoding is longer than ``payload_threshold_bytes`` (and at
most ``max_payload_bytes``) is written to the :class:`~workflows.core.ports.Blobs` port under
a content address, ``payloads/<sha256>``, and the text stored or sent in its place is a
reference, itself codec text::

    {"__wf__":"blob","v":{"key":"payloads/<sha256>","sha256":"<sha256>","size":<bytes>}}

* The object is written before the record that references it, so a stored reference never
  names an object that was not written; a put retried, duplicated or raced writes the same
  bytes under the same key, so every put is harmless. An object whose record was never
  written (the writer died) is an orphan, expired by the bucket's lifecycle rule.
* A reference cannot be confused with user data: the codec escapes every user dict that has
  the ``"__wf__"`` key (``{"__wf__":"dict",...}``), so no user payload encodes to a
  reference. Decoding stays data-only: a reference is resolved by a read of its key here,
  never by the codec, and only a key of the form above is ever read.
* A reader verifies the SHA-256 and the size of what it read (``PayloadUnavailable``
  otherwise) and keeps it in a per-process cache bounded in bytes, so a resume that
  replays a history holding references fetches each object once, and later resumes of the
  same run in this process fetch none.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

from .. import codec
from ..errors import PayloadTooLarge, PayloadUnavailable
from ..settings import Settings
from .embed import embed, is_embedded, unembed
from .ports import Blobs
from .storage import REFERENCE_ROOM

KIND = "blob"
KEY_PREFIX = "payloads/"
#: A reference is about 150 bytes; longer text is never parsed as one.
MAX_REFERENCE = REFERENCE_ROOM
CACHE_BYTES = 64 * 1024 * 1024
#: A payload this process wrote or read that recently is not written again (each write of a
#: content address renews the object's age, which the lifecycle rule counts from).
REWRITE_AFTER = 3600.0
_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Reference:
    """Where a large payload is kept, and what it must hash to."""

    key: str
    sha256: str
    size: int

    def text(self) -> str:
        """The reference as the codec text stored in place of the payload."""
        return json.dumps({codec.TAG: KIND, "v": {"key": self.key, "sha256": self.sha256, "size": self.size}},
                          separators=(",", ":"))


def reference_of(text: str | None) -> Reference | None:
    """The reference ``text`` is, or None for a payload held inline (any other codec text)."""
    if text is None or len(text) > MAX_REFERENCE or not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or set(data) != {codec.TAG, "v"} or data[codec.TAG] != KIND:
        return None
    info = data["v"]
    if not isinstance(info, dict) or set(info) != {"key", "sha256", "size"}:
        return None
    sha, key, size = info["sha256"], info["key"], info["size"]
    if not (isinstance(sha, str) and _HEX.fullmatch(sha) and key == KEY_PREFIX + sha
            and type(size) is int and size >= 0):
        return None
    return Reference(key, sha, size)


def describe_payload(text: str | None) -> str | None:
    """Payload text for views that show a payload without fetching it: an inline payload as
    it is, a reference as a JSON string describing it (``"<1.0 MB in the payload bucket,
    sha256 ab12...>"``), a record embedding a reference with that string in its place."""
    if is_embedded(text):
        meta, payload = unembed(text or "", "payload")
        if reference_of(payload) is None:
            return text
        meta.pop("format", None)
        return embed(meta, describe_payload(payload) or "null")
    ref = reference_of(text)
    if ref is None:
        return text
    return json.dumps(f"<{ref.size / 1e6:.1f} MB in the payload bucket, sha256 {ref.sha256[:12]}...>")


class Payloads:
    """Encodes payloads under the size limits, offloading large ones, and resolves references.

    Args:
        blobs: where large payloads go; None: nowhere, so a payload over the threshold is
            refused with ``PayloadTooLarge``.
        settings: ``max_payload_bytes`` and ``payload_threshold_bytes``.
        clock: monotonic seconds (the cache's ages).
    """

    def __init__(self, blobs: Blobs | None, settings: Settings,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.blobs, self.settings, self.clock = blobs, settings, clock
        self._cache: OrderedDict[str, tuple[str, float]] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()

    # -- writing ----------------------------------------------------------------------------
    def encode(self, value: Any, what: str,
               infrastructure: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> str:
        """``value`` as codec text to store or send: inline, or a reference to its object.

        Raises:
            SerializationError / PayloadTooLarge: not JSON data, or over ``max_payload_bytes``
                (nothing is written).
            StorageError: the object could not be written (raised inside ``infrastructure()``).
        """
        text = codec.dumps(value, what=what, limit=self.settings.max_payload_bytes)
        return self.offload(text, what, infrastructure)

    def offload(self, text: str, what: str,
                infrastructure: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> str:
        """``text`` (codec text, at most ``max_payload_bytes``) itself if it is small enough
        to keep inline, else written to the blob store and replaced by its reference."""
        data = text.encode()
        if len(data) <= self.settings.inline_payload_bytes:
            return text
        if len(data) > self.settings.max_payload_bytes:
            raise PayloadTooLarge(what, len(data), self.settings.max_payload_bytes)
        if self.blobs is None:
            raise PayloadTooLarge(what, len(data), self.settings.inline_payload_bytes)
        sha = hashlib.sha256(data).hexdigest()
        ref = Reference(KEY_PREFIX + sha, sha, len(data))
        if not self._recent(sha):
            with infrastructure():
                self.blobs.put_blob(ref.key, data)
            self._remember(sha, text)
        return ref.text()

    # -- reading ----------------------------------------------------------------------------
    def resolve(self, text: str | None) -> str | None:
        """The payload text ``text`` stands for: itself, or the object its reference names.

        Raises:
            PayloadUnavailable: the object is missing or does not match its reference.
            StorageError: the blob store failed.
        """
        ref = reference_of(text)
        if ref is None:
            return text
        cached = self._cached(ref.sha256)
        if cached is not None:
            return cached
        if self.blobs is None:
            raise PayloadUnavailable(f"payload {ref.key} is kept in the payload bucket, and this process has none")
        data = self.blobs.get_blob(ref.key)
        if data is None:
            raise PayloadUnavailable(f"payload {ref.key} ({ref.size} bytes) is missing from the payload bucket "
                                     "(expired by its lifecycle rule, or deleted)")
        if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise PayloadUnavailable(f"payload {ref.key} does not match its reference (SHA-256 or size differ)")
        resolved = data.decode()
        self._remember(ref.sha256, resolved)
        return resolved

    def resolve_record(self, data: str | None) -> str | None:
        """Record data with its payload resolved: a reference, or a record embedding one
        (``core/embed.py``: a received signal, a retry timer), made to hold the payload itself."""
        if is_embedded(data):
            meta, payload = unembed(data or "", "payload")
            if reference_of(payload) is not None:
                meta.pop("format", None)
                return embed(meta, self.resolve(payload) or "null")
            return data
        return self.resolve(data)

    def decode(self, text: str | None) -> Any:
        """The value ``text`` (inline codec text or a reference) stands for."""
        return codec.loads(self.resolve(text))

    # -- the cache --------------------------------------------------------------------------
    def _cached(self, sha: str) -> str | None:
        with self._lock:
            entry = self._cache.get(sha)
            if entry is None:
                return None
            self._cache.move_to_end(sha)
            return entry[0]

    def _recent(self, sha: str) -> bool:
        with self._lock:
            entry = self._cache.get(sha)
            return entry is not None and self.clock() - entry[1] < REWRITE_AFTER

    def _remember(self, sha: str, text: str) -> None:
        size = len(text)
        if size > CACHE_BYTES // 4:
            return
        with self._lock:
            old = self._cache.pop(sha, None)
            if old is not None:
                self._cached_bytes -= len(old[0])
            self._cache[sha] = (text, self.clock())
            self._cached_bytes += size
            while self._cached_bytes > CACHE_BYTES:
                _, (evicted, _) = self._cache.popitem(last=False)
                self._cached_bytes -= len(evicted)
