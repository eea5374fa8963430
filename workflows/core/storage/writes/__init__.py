"""The store's writes, each built once as a write plan (``core.storage.plans``) and committed by
whichever store is mixed in: the DynamoDB store and the in-memory one share these methods."""

from .batches import BatchWrites
from .events import EventWrites
from .flow import FlowWrites
from .history import HistoryWrites, TimerWrites
from .hooks import HookWrites
from .joins import JoinWrites
from .retention import RetentionWrites
from .runs import RunWrites
from .schedules import ScheduleWrites
from .sessions import SessionWrites
from .signals import SignalWrites
from .tags import TagWrites
from .updates import UpdateWrites


class Writes(RunWrites, HistoryWrites, TimerWrites, HookWrites, SignalWrites, TagWrites, ScheduleWrites, FlowWrites,
             SessionWrites, JoinWrites, RetentionWrites, EventWrites, BatchWrites, UpdateWrites):
    """Every shared write; a store mixes this in beside its ``commit`` and ``read_item``."""


__all__ = ["Writes"]
