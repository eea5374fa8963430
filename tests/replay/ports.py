"""The in-memory ports the replay tests run the engine on."""

from __future__ import annotations

from workflows.core.engine import Engine
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="replay-tests-hook-secret-0123456789abcdef")


def memory_engine() -> Engine:
    """An engine over a fresh in-memory store, a recording transport and a manual clock."""
    clock = ManualClock()
    return Engine(MemoryStore(SETTINGS, clock), RecordingTransport(), SETTINGS, clock=clock)


def recording(engine: Engine) -> RecordingTransport:
    """The engine's transport, as the recording one it is."""
    assert isinstance(engine.transport, RecordingTransport)
    return engine.transport
