"""In-memory ports: a store, a transport and a clock, for tests, the testing kit and the simulator.

Nothing here talks to AWS or Celery.
"""

from .clock import ManualClock
from .store import MemoryStore
from .transport import RecordingTransport

__all__ = ["ManualClock", "MemoryStore", "RecordingTransport"]
