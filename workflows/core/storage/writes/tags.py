"""The write of a run's tags: the outcome, the run's tags and their index items, in one transaction."""

from __future__ import annotations

from ...model.records import TERMINAL, EventRecord, RunRecord
from ..plans import A, Delete, Put, Set, Update, plan
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

    def tag_ended_run(self, run: RunRecord, after: dict[str, str]) -> bool:
        """Set an ended run's tags to ``after`` and move their index items (which take the run's
        TTL), in one transaction, only while the run is ended with the tags read (a live run's tags
        are its workflow's: ``set_tags``). False if the run or its tags changed meanwhile."""
        before = dict(run.tags or {})
        gone, added = moved(before, after, run.run_id)
        sort_key = index_sort_key(run.created_at, run.run_id)
        same = A("tags") == to_json(before) if before else A("tags").missing() | (A("tags") == "{}")
        return self.commit(plan("tag ended run",
                                Update("runs", (run.run_id,), (Set("tags", to_json(after) if after else None),),
                                       A("status").is_in(*sorted(TERMINAL)) & same),
                                *[Delete("tags", (tag, sort_key)) for tag in gone],
                                *[Put("tags", {**tag_item(tag, run), "retain_until": run.retain_until})
                                  for tag in added])).applied
