"""Large payloads: kept in a blob store (S3), referenced from DynamoDB items and SQS messages.

A payload is the encoded JSON text of an argument list, a result, a hook or a signal payload
(``workflows.codec``). One whose encoding is longer than ``payload_threshold_bytes`` (and at
most ``max_payload_bytes``) is written to the :class:`~workflows.core.storage.ports.Blobs` port under
the prefix of the run that owns it, ``payloads/<run id>/<sha256>``, and the text stored or sent
in its place is a reference, itself codec text::

    {"__wf__":"blob","v":{"key":"payloads/<run id>/<sha256>","sha256":"<sha256>","size":<bytes>}}

* **Each run owns its objects.** A record of run R only references objects under R's prefix:
  a payload that crosses from one run to another (a fork's copied history and arguments, a
  child's result recorded by its parent, continue-as-new arguments, a signal moved to a
  successor) is copied into the receiving run's prefix by :meth:`Payloads.adopt` (a server-side
  copy, before the record that references it is written). So a run's objects can expire with
  its own items (``core/storage/retention.py`` marks them ended), never under another live run.
* The object is written before the record that references it, so a stored reference never
  names an object that was not written; a put retried, duplicated or raced writes the same
  bytes under the same key, so every put is harmless. An object whose record was never
  written (the writer died) is an orphan in its run's prefix (see docs/payloads.md).
* A reference cannot be confused with user data: the codec escapes every user dict that has
  the ``"__wf__"`` key (``{"__wf__":"dict",...}``), so no user payload encodes to a
  reference. Decoding stays data-only: a reference is resolved by a read of its key here,
  never by the codec, and only a key of the form above (or the older ``payloads/<sha256>``)
  is ever read.
* A reader verifies the SHA-256 and the size of what it read (``PayloadUnavailable``
  otherwise) and keeps it in a per-process cache bounded in bytes, so a resume that
  replays a history holding references fetches each object once, and later resumes of the
  same run in this process fetch none. A read never stands for a write: only a key this
  process wrote (or copied to) itself within :data:`REWRITE_AFTER` is not written again.
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

from ... import codec
from ...errors import PayloadTooLarge, PayloadUnavailable
from ...settings import Settings
from ..model.embed import embed, is_embedded, unembed
from .ports import Blobs
from .rules import REFERENCE_ROOM

KIND = "blob"
KEY_PREFIX = "payloads/"
#: The run id segment of a key (uuids, a child's ``<parent>.<pos>``): no ``/``.
_OWNER = re.compile(r"[0-9A-Za-z][0-9A-Za-z._:-]{0,199}")
#: A reference is about 150 bytes; longer text is never parsed as one.
MAX_REFERENCE = REFERENCE_ROOM
CACHE_BYTES = 64 * 1024 * 1024
#: A key this process wrote (or copied to) that recently is not written again. Only a write
#: counts, never a read: a run's objects carry no expiry while it is live, and an object that
#: was read may belong to another run (which it must be copied from, see ``adopt``).
REWRITE_AFTER = 3600.0
#: How many recently written keys a process remembers.
WRITTEN_KEYS = 100_000
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
    if not (isinstance(sha, str) and _HEX.fullmatch(sha) and isinstance(key, str) and type(size) is int
            and size >= 0 and (key == KEY_PREFIX + sha or _owned_key(key, sha))):
        return None
    return Reference(key, sha, size)


def object_key(run_id: str, sha: str) -> str:
    """The key of run ``run_id``'s object of content ``sha``."""
    return f"{run_prefix(run_id)}{sha}"


def run_prefix(run_id: str) -> str:
    """The key prefix of every object run ``run_id`` owns."""
    if not _OWNER.fullmatch(run_id):
        raise ValueError(f"run id {run_id!r} cannot name a payload prefix")
    return f"{KEY_PREFIX}{run_id}/"


def owner_of(key: str) -> str | None:
    """The run whose prefix holds ``key``; None for a key of the older layout (``payloads/<sha256>``)
    or any other key."""
    owner, slash, rest = key[len(KEY_PREFIX):].partition("/") if key.startswith(KEY_PREFIX) else ("", "", "")
    return owner if slash and rest and "/" not in rest and _OWNER.fullmatch(owner) else None


def _owned_key(key: str, sha: str) -> bool:
    return key.endswith("/" + sha) and owner_of(key) is not None


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
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._cached_bytes = 0
        self._written: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    # -- writing ----------------------------------------------------------------------------
    def encode(self, value: Any, what: str, owner: str | None = None,
               infrastructure: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> str:
        """``value`` as codec text to store or send: inline, or a reference to its object in the
        prefix of run ``owner`` (the run whose record or message will hold it; None: the older
        shared layout ``payloads/<sha256>``, whose objects are never marked ended, so never expire).

        Raises:
            SerializationError / PayloadTooLarge: not JSON data, or over ``max_payload_bytes``
                (nothing is written).
            StorageError: the object could not be written (raised inside ``infrastructure()``).
        """
        text = codec.dumps(value, what=what, limit=self.settings.max_payload_bytes)
        return self.offload(text, what, owner, infrastructure)

    def offload(self, text: str, what: str, owner: str | None = None,
                infrastructure: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> str:
        """``text`` (codec text, at most ``max_payload_bytes``) itself if it is small enough
        to keep inline, else written to run ``owner``'s prefix and replaced by its reference."""
        data = text.encode()
        if len(data) <= self.settings.inline_payload_bytes:
            return text
        if len(data) > self.settings.max_payload_bytes:
            raise PayloadTooLarge(what, len(data), self.settings.max_payload_bytes)
        if self.blobs is None:
            raise PayloadTooLarge(what, len(data), self.settings.inline_payload_bytes)
        sha = hashlib.sha256(data).hexdigest()
        ref = Reference(KEY_PREFIX + sha if owner is None else object_key(owner, sha), sha, len(data))
        if not self._wrote_recently(ref.key):
            with infrastructure():
                self.blobs.put_blob(ref.key, data)
            self._wrote(ref.key)
        self._remember(sha, text)
        return ref.text()

    def adopt(self, text: str | None, owner: str,
              infrastructure: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> str | None:
        """Stored payload text (or a record embedding one: a received signal) made fit for a
        record of run ``owner``: inline text as it is; a reference to another run's object (or
        to one of the older layout) copied, server side, into ``owner``'s prefix first and
        replaced by the reference to the copy. Call it before writing the record.

        Raises:
            PayloadUnavailable: the object to copy is missing (raised inside ``infrastructure()``).
            StorageError: the blob store failed (raised inside ``infrastructure()``).
        """
        if is_embedded(text):
            meta, payload = unembed(text or "", "payload")
            adopted = self.adopt(payload, owner, infrastructure)
            return text if adopted == payload else embed(meta, adopted or "null")
        ref = reference_of(text)
        if ref is None:
            return text
        target = object_key(owner, ref.sha256)
        if ref.key == target:
            return text
        if not self._wrote_recently(target):
            with infrastructure():
                if self.blobs is None:
                    raise PayloadUnavailable(f"payload {ref.key} is kept in the payload bucket, and this "
                                             "process has none")
                if not self.blobs.copy_blob(ref.key, target):
                    raise PayloadUnavailable(f"payload {ref.key} ({ref.size} bytes) is missing from the payload "
                                             f"bucket (expired or deleted); it could not be copied to run {owner}")
            self._wrote(target)
        return Reference(target, ref.sha256, ref.size).text()

    def mark_ended(self, text: str | None) -> bool:
        """Mark the object stored payload text ``text`` references ended (the lifecycle rule then
        deletes it), as retention does for an ended run's objects; False for inline text."""
        ref = reference_of(text)
        if ref is None or self.blobs is None:
            return False
        return self.blobs.mark_ended(ref.key)

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
        (``core/model/embed.py``: a received signal, a retry timer), made to hold the payload itself."""
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
            return entry

    def _wrote_recently(self, key: str) -> bool:
        with self._lock:
            at = self._written.get(key)
            return at is not None and self.clock() - at < REWRITE_AFTER

    def _wrote(self, key: str) -> None:
        with self._lock:
            self._written.pop(key, None)
            self._written[key] = self.clock()
            while len(self._written) > WRITTEN_KEYS:
                self._written.popitem(last=False)

    def _remember(self, sha: str, text: str) -> None:
        size = len(text)
        if size > CACHE_BYTES // 4:
            return
        with self._lock:
            old = self._cache.pop(sha, None)
            if old is not None:
                self._cached_bytes -= len(old)
            self._cache[sha] = text
            self._cached_bytes += size
            while self._cached_bytes > CACHE_BYTES:
                _, evicted = self._cache.popitem(last=False)
                self._cached_bytes -= len(evicted)
