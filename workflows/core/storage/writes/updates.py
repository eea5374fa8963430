"""The writes of updates: a request stored like a signal (waking the run), its answer recorded once."""

from __future__ import annotations

from ....errors import RunNotFound
from ...model.records import EventRecord, SignalRecord
from ...model.states import RunStatus
from ..plans import CONDITION_FAILED, A, Check, Delete, Put, Set, Update, plan
from ..rules import check_item_size, signal_time
from .base import LIVE_COND, UPDATE_POS, WritesBase, free


class UpdateWrites(WritesBase):
    """``put_update``, ``answer_update`` and ``refuse_update`` (see the UpdateStore port)."""

    def put_update(self, request: SignalRecord, wake: str) -> bool:
        """Store update ``request`` under its chain's anchor (once: its key holds the update id),
        ordered after every request and signal stored there before (its ``order_number``: not the
        sender's clock, as for signals), and wake run ``wake``, in one transaction while that run is
        live; False if the request is stored already or the run has ended. A request ordered after
        this one stored meanwhile makes it read the anchor's clock again and retry.

        Raises:
            RunNotFound: the anchor has no run item (nothing is stored)."""
        check_item_size({"payload": request.payload})
        while True:
            anchor = self.anchor_clock(request.run_id)
            if anchor is None:
                raise RunNotFound(request.run_id)
            number = signal_time(self.now(), anchor.get("signal_clock"))
            item = {"run_id": request.run_id, "signal_key": request.signal_key, "name": request.name,
                    "payload": request.payload, "sent_at": request.sent_at, "order_number": number}
            done = self.commit(plan("put update", Put("signals", item, A("signal_key").missing()),
                                    *self.ordered_after(request.run_id, number, wake)))
            if done.applied:
                return True
            if done.reasons and done.reasons[0] == CONDITION_FAILED:
                return False  # stored already (perhaps by this very request, its response lost)
            after = self.anchor_clock(request.run_id)
            if after is None or int(after.get("signal_clock") or 0) <= number:
                return False  # the clock did not pass it: the run to wake has ended

    def answer_update(self, record: EventRecord, answer: EventRecord, request: SignalRecord, *,
                      owner: str | None = None) -> bool:
        """Record the update op ``record`` and its ``answer``, and delete its ``request``, in one
        transaction while the run is live and the op's position is free; False (nothing written) if
        the op's slot or the answer is taken, the run has ended, its cursor holds another op at the
        position (a step in flight: only a suspended run's wait moves on for an update, as
        ``updates.displaceable`` says), or another resume than ``owner`` holds the run with a live
        claim (it runs steps in place past the cursor it claimed at). A replay from a stale read of
        the run must not take the position of a step another resume runs."""
        pos = record.pos
        at = (A("cursor") < pos) | ((A("cursor") == pos) & (A("status") == RunStatus.SUSPENDED))
        # The run item names the position (``update_pos``): a resume that read the history before
        # this record cannot claim the run at or before it (``claim_run``), nor run a step there.
        return self.commit(plan("answer update", Put("history", self.event_item(record), A("seq").missing()),
                                Put("history", {**self.event_item(answer), "pos": pos}, A("seq").missing()),
                                Delete("signals", (request.run_id, request.signal_key)),
                                Update("runs", (record.run_id,), (Set(UPDATE_POS, pos),),
                                       LIVE_COND & at & free(self.now(), owner)))).applied

    def refuse_update(self, answer: EventRecord, request: SignalRecord) -> bool:
        """Put the refusal ``answer`` of an update (no history record) and delete its ``request``,
        in one transaction while the run is live; False if the answer is taken or the run ended."""
        return self.commit(plan("refuse update", Put("history", self.event_item(answer), A("seq").missing()),
                                Delete("signals", (request.run_id, request.signal_key)),
                                Check("runs", (answer.run_id,), LIVE_COND))).applied
