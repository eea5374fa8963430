"""The Blobs port in memory: large payloads of a MemoryStore (tests, the simulator, the testing kit)."""

from __future__ import annotations

import threading
from typing import Any, Callable


class MemoryBlobs:
    """Objects by key in a dict; every view of a MemoryStore shares one."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.puts = 0
        self._lock = threading.Lock()

    def put_blob(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``."""
        with self._lock:
            self.objects[key] = bytes(data)
            self.puts += 1

    def get_blob(self, key: str) -> bytes | None:
        """The bytes under ``key``, or None."""
        with self._lock:
            return self.objects.get(key)

    def delete_blob(self, key: str) -> None:
        """Remove an object (what the bucket's lifecycle rule does to an expired one)."""
        with self._lock:
            self.objects.pop(key, None)


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
