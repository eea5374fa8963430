"""The Blobs port in memory: large payloads of a MemoryStore (tests, the simulator, the testing kit)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

DAY = 86_400.0


class MemoryBlobs:
    """Objects by key in a dict; every view of a MemoryStore shares one.

    Models the payload bucket and its lifecycle rule (``workflows/deploy/payloads.py``): an
    object carries no expiry until it is marked ended; the rule deletes an ended object
    ``days`` after its last write (the mark is a copy onto itself, so it counts as one).

    Args:
        clock: epoch seconds now: when an object was last written, as S3 records it
            (``LastModified``), which the lifecycle rule counts from.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.objects: dict[str, bytes] = {}
        self.written_at: dict[str, float] = {}
        self.ended: set[str] = set()
        self.puts = 0
        self.copies = 0
        self._clock = clock
        self._lock = threading.Lock()

    def _write(self, key: str, data: bytes, ended: bool) -> None:
        self.objects[key] = bytes(data)
        self.written_at[key] = self._clock()
        if ended:
            self.ended.add(key)
        else:
            self.ended.discard(key)

    def put_blob(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``, not marked ended."""
        with self._lock:
            self._write(key, data, ended=False)
            self.puts += 1

    def copy_blob(self, source: str, target: str) -> bool:
        """Copy ``source`` to ``target``, not marked ended; False if there is no ``source``."""
        return self._copy(source, target, ended=False)

    def mark_ended(self, key: str) -> bool:
        """Mark ``key`` ended (a copy onto itself: its age starts again); False if there is none."""
        return self._copy(key, key, ended=True)

    def _copy(self, source: str, target: str, *, ended: bool) -> bool:
        with self._lock:
            data = self.objects.get(source)
            if data is None:
                return False
            self._write(target, data, ended=ended)
            self.copies += 1
            return True

    def list_blobs(self, prefix: str) -> list[tuple[str, float]]:
        """Every object under ``prefix``: its key and last write, in key order."""
        with self._lock:
            return sorted((key, at) for key, at in self.written_at.items() if key.startswith(prefix))

    def expire(self, now: float, days: int) -> list[str]:
        """Remove what the bucket's lifecycle rule removes by ``now`` (objects marked ended and
        last written ``days`` or more ago, at the earliest); the keys removed."""
        with self._lock:
            gone = [key for key in self.ended if self.written_at[key] + days * DAY <= now]
            for key in gone:
                self._remove(key)
        return sorted(gone)

    def get_blob(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None."""
        with self._lock:
            return self.objects.get(key)

    def delete_blob(self, key: str) -> None:
        """Remove an object (what the lifecycle rule, or an operator, does)."""
        with self._lock:
            self._remove(key)

    def _remove(self, key: str) -> None:
        self.objects.pop(key, None)
        self.written_at.pop(key, None)
        self.ended.discard(key)


class StoreBlobs:
    """A store view's access to the shared objects: every request passes the view's
    interceptor (so the simulator can fail, lose or delay it like any store request)."""

    def __init__(self, objects: MemoryBlobs, request: Callable[[str, Callable[[], Any]], Any]) -> None:
        self.objects, self._request = objects, request

    def put_blob(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        self._request("put blob", lambda: self.objects.put_blob(key, data))

    def get_blob(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None."""
        result: bytes | None = self._request("get blob", lambda: self.objects.get_blob(key))
        return result

    def copy_blob(self, source: str, target: str) -> bool:
        """Copy ``source`` to ``target``; False if there is no ``source``."""
        return bool(self._request("copy blob", lambda: self.objects.copy_blob(source, target)))

    def mark_ended(self, key: str) -> bool:
        """Mark ``key`` ended; False if there is none."""
        return bool(self._request("mark blob ended", lambda: self.objects.mark_ended(key)))

    def list_blobs(self, prefix: str) -> list[tuple[str, float]]:
        """Every object under ``prefix`` with its last write."""
        result: list[tuple[str, float]] = self._request("list blobs", lambda: self.objects.list_blobs(prefix))
        return result

    def delete_blob(self, key: str) -> None:
        """Delete ``key``."""
        self._request("delete blob", lambda: self.objects.delete_blob(key))
