"""DynamoDB persistence: PynamoDB models and the store the engine talks to."""

from .records import BranchRecord, EventRecord, HookRecord, Page, RunRecord, SignalRecord, TimerRecord
from .store import Store, get_store

__all__ = ["BranchRecord", "EventRecord", "HookRecord", "Page", "RunRecord", "SignalRecord", "Store",
           "TimerRecord", "get_store"]
