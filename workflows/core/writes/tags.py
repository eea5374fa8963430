"""The write of a run's tags: the outcome, the run's tags and their index items, in one transaction."""

from __future__ import annotations

from ..plans import A, Delete, Put, Set, Update, plan
from ..records import EventRecord, RunRecord
from ..tags import index_sort_key, moved
from .base import LIVE_COND, WritesBase
from .items import tag_item, to_json


class TagWrites(WritesBase):
    """``set_tags`` (see the TagStore port)."""

    def set_tags(self, event: EventRecord, run: RunRecord, before: dict[str, str], after: dict[str, str]) -> bool:
        """Record a ``set_tags`` outcome, set the run's tags and move their index items, in one
        transaction while the run is live; False if the slot is taken or the run has ended."""
        gone, added = moved(before, after, run.run_id)
        sort_key = index_sort_key(run.created_at, run.run_id)
        return self.commit(plan("set tags", Put("history", self.event_item(event), A("seq").missing()),
                                Update("runs", (run.run_id,), (Set("tags", to_json(after)),), LIVE_COND),
                                *[Delete("tags", (tag, sort_key)) for tag in gone],
                                *[Put("tags", tag_item(tag, run)) for tag in added])).applied
