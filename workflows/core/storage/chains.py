"""Continue-as-new chains: the first run is the chain's anchor, and how a run id reaches the chain's current run.

A chain's runs expire retention after their own end, but its first run (the anchor) does not:
its end as ``continued`` writes no TTL, and each continuation names the chain's latest run on
it (``chain_last``) in the same transaction. So the id a caller holds (what ``start`` returned,
what an idempotency key maps to, a child's id in its parent's history) reaches the chain's
current run in two reads, however many of the runs between have expired. The chain's signals
are kept under the anchor's id too (:func:`chain_anchor`). The retention sweep of the chain's
last run gives the anchor its TTL (``Store.retain_run``). See docs/retention.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.records import RunRecord, RunStatus

if TYPE_CHECKING:
    from .ports import Store

#: Hops along ``continued_to`` before a walk re-reads the anchor (a chain continuing while it is read).
MAX_HOPS = 64


def chain_anchor(run: RunRecord) -> str:
    """The id the chain of ``run`` is kept under: its first run (a run that never continued is its own).

    A run of a chain from before anchors (no ``chain_head``) anchors its own continuations."""
    return run.chain_head or run.run_id


def current_run(store: Store, run_id: str) -> RunRecord:
    """The run ``run_id`` names, or the latest run of its continue-as-new chain if it continued.

    Raises:
        RunNotFound: no run has this id (or the chain's runs after it expired, for a chain
            older than anchors).
    """
    return follow(store, store.get_run(run_id))


def follow(store: Store, run: RunRecord) -> RunRecord:
    """``run``, or the latest run of its chain if it continued (see :func:`current_run`).

    Reads the anchor (unless ``run`` is it) and the run it names, then follows ``continued_to``
    from there only for continuations since (whose runs have just ended: none has expired)."""
    if run.status != RunStatus.CONTINUED:
        return run
    anchor = run if run.chain_head is None else store.find_run(run.chain_head) or run
    latest = store.find_run(anchor.chain_last) if anchor.chain_last else None
    run = latest or run
    for _ in range(MAX_HOPS):
        if run.status != RunStatus.CONTINUED or not run.continued_to:
            return run
        run = store.get_run(run.continued_to)
    return run  # still continuing after MAX_HOPS reads: its latest run seen
