"""The Blobs port in memory: large payloads of a MemoryStore (tests, the simulator, the testing kit)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

DAY = 86_400.0


class MemoryBlobs:
    """Objects by key in a dict; every view of a MemoryStore shares one.

    Args:
        clock: epoch seconds now: when an object was last written, as S3 records it
            (``LastModified``), which the lifecycle rule counts from.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.objects: dict[str, bytes] = {}
        self.written_at: dict[str, float] = {}
        self.puts = 0
        self._clock = clock
        self._lock = threading.Lock()

    def put_blob(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        with self._lock:
            self.objects[key] = bytes(data)
            self.written_at[key] = self._clock()
            self.puts += 1

    def expire(self, now: float, days: int) -> list[str]:
        """Remove what the bucket's lifecycle rule removes by ``now`` (objects last written
        ``days`` or more ago, at the earliest); the keys removed."""
        with self._lock:
            gone = [key for key, at in self.written_at.items() if at + days * DAY <= now]
            for key in gone:
                self.objects.pop(key, None)
                self.written_at.pop(key, None)
        return gone

    def get_blob(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None."""
        with self._lock:
            return self.objects.get(key)

    def delete_blob(self, key: str) -> None:
        """Remove an object (what the bucket's lifecycle rule does to an expired one)."""
        with self._lock:
            self.objects.pop(key, None)
            self.written_at.pop(key, None)


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
