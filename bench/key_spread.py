"""``python -m bench.key_spread [--runs N]``: the tag and due-timer index keys under many runs, on the
counting front.

The bench's scenarios carry no tags and no sleeps, so this drives the DynamoDB store as the engine
does for each run: a start carrying a tag every run carries (``env=prod``) and a sleep's timer (one
transaction), then the timer's fire (its delete). It prints, for the ``tags`` table and the
``timers.by_due`` index, the write units per run on the hottest key and on the mean key, and what
they come to at 10,000 runs per second.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from . import proxy
from .capacity import PARTITION_WCU, RUNS_PER_S
from .keys import hot_keys_of
from .stack import store_on_front

TABLES = ("tags", "timers.by_due")


def drive(store: Any, runs: int) -> None:
    """Start ``runs`` tagged runs, each with a sleep timer, and fire (delete) each timer."""
    from workflows.core.model.records import RunRecord, RunStatus, TimerKind, TimerRecord

    for _ in range(runs):
        now, run_id = store.now(), str(uuid.uuid4())
        run = RunRecord(run_id=run_id, workflow="keys", status=RunStatus.PENDING.value, created_at=now,
                        updated_at=now, lease_expires_at=store.lease_until(), tags={"env": "prod"})
        timer = TimerRecord(timer_id=f"{run_id}#0#sleep", kind=TimerKind.SLEEP.value, run_id=run_id,
                            due_at=now + 60, pos=0)
        store.create_run(run, timers=[timer])
        store.delete_timer(timer.timer_id)


def spread(rows: list[dict[str, Any]], runs: int, shards: dict[str, int]) -> list[dict[str, Any]]:
    """Per table or index: units per run on its hottest key and on the mean key, and at scale."""
    hot = hot_keys_of(rows) or {"tables": {}}
    out = []
    for where in TABLES:
        table = hot["tables"].get(where) or {}
        top = table.get("hottest_shared")
        if not top:
            continue
        mean = table.get("shared_units", top["units"]) / shards[where] / runs
        hottest = top["units"] / runs
        out.append({"table": where, "key": top["key"], "shards": shards[where], "hottest_per_run": hottest,
                    "mean_per_run": mean, "hottest_at_scale": hottest * RUNS_PER_S,
                    "mean_at_scale": mean * RUNS_PER_S})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.key_spread", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1280, help="runs to start (default 1280)")
    args = parser.parse_args(argv)
    from workflows.core.storage.tags import TAG_SHARDS

    with store_on_front("keys", "wfk-") as (front, store):
        proxy.reset_counts(front.url)
        drive(store, args.runs)
        rows = proxy.fetch_counts(front.url)
    found = spread(rows, args.runs, {"tags": TAG_SHARDS, "timers.by_due": store.settings.index_shards})
    print(f"{args.runs} runs; at {RUNS_PER_S:,} runs/s (limit {PARTITION_WCU:,.0f} WCU/s per key):\n")
    print("| Table or index | Shards | Hottest key | WCU per run, hottest key | WCU per run, mean key "
          "| WCU/s, hottest | WCU/s, mean |")
    print("|---|---|---|---|---|---|---|")
    for r in found:
        print(f"| {r['table']} | {r['shards']} | `{r['key']}` | {r['hottest_per_run']:.4f} | {r['mean_per_run']:.4f} "
              f"| {r['hottest_at_scale']:,.0f} ({r['hottest_at_scale'] / PARTITION_WCU:.0%}) "
              f"| {r['mean_at_scale']:,.0f} ({r['mean_at_scale'] / PARTITION_WCU:.0%}) |")


if __name__ == "__main__":
    main()
