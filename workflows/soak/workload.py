"""The soak's driver: it starts runs in waves and talks to them while the chaos goes on.

Once: a schedule (every 4 s), a run that waits for a signal nobody sends, sleepers that a batch
cancel ends (started a wave later, its first chunk 12 s after), and a fan-out of ``fan_out``
branches. Every wave: an order (and a delayed one), a mailbox fed signals and updates, a run
whose hook the driver resumes over HTTP, a race, a continue-as-new chain, a parent with a child
under each parent-close policy, and a fan-out of a limited step. Starts carry idempotency keys,
so a start that raised is simply made again.
"""

from __future__ import annotations

import concurrent.futures
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ..batches import batch_cancel
from ..decorators import Workflow
from ..errors import ScheduleAlreadyExists, ScheduleNotFound
from ..options import RunFilter
from ..schedules import create_schedule, delete_schedule
from . import flows
from .config import SoakConfig
from .interact import Entry, feed_mailbox, maybe_go, resume_over_http
from .ledger import true_time

BLOB_SIZE = 20_000  # over the 8 KiB payload threshold: arguments and results go to S3
MAILBOX_SIGNALS, MAILBOX_UPDATES = 3, 2
CHAIN_LAST, LIMITED_WIDTH, SLEEPERS = 2, 4, 4
DELAY = 4.0


class Workload:
    """Starts the soak's runs and keeps the manifest of what it started and sent."""

    def __init__(self, config: SoakConfig, web_url: str, directory: Path) -> None:
        self.config, self.web_url, self.directory = config, web_url, directory
        self.seed = config.seed
        self.entries: list[Entry] = []
        self.errors: list[str] = []
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="soak-driver")
        self.futures: list[concurrent.futures.Future[None]] = []
        self.schedule_id = f"soak-tick-{self.seed}"
        self.batch_id: str | None = None
        self.waves = 0

    def start(self, kind: str, wf: Workflow[..., Any], *args: Any, **options: Any) -> Entry | None:
        """Start a run with an idempotency key (again after an error: the key makes it one run)."""
        tag = f"s{self.seed}-{kind}-{len(self.entries)}"
        last: Exception | None = None
        for attempt in range(6):
            try:
                handle = wf.options(idempotency_key=tag, **options).start(tag, *args)
                break
            except Exception as exc:  # infrastructure errors under the faults: the key makes a retry safe
                last = exc
                time.sleep(0.5 * (attempt + 1))
        else:
            self.errors.append(f"the start of {tag} failed six times: {last!r}")
            return None
        entry = Entry(kind, tag, handle.run_id, true_time())
        self.entries.append(entry)
        return entry

    def talk(self, fn: Any, *args: Any) -> None:
        """Run a conversation with a run in the driver's pool."""
        self.futures.append(self.pool.submit(fn, *args))

    def begin(self) -> None:
        """What starts once: the schedule, the waiter, the sleepers."""
        for _ in range(6):
            try:
                create_schedule(flows.soak_tick, args=[f"s{self.seed}-tick"], every="4s", schedule_id=self.schedule_id)
                break
            except ScheduleAlreadyExists:
                break
            except Exception as exc:  # the create's response was lost or it was throttled: again
                self.errors.append(f"create_schedule raised (retried): {exc!r}")
                time.sleep(1.0)
        self.start("waiter", flows.soak_waiter)
        for _ in range(SLEEPERS):
            self.start("sleeper", flows.soak_sleeper, tags={"soakbatch": str(self.seed)})

    def wave(self) -> None:
        """One wave of runs, and the conversations with them."""
        self.waves += 1
        self.start("order", flows.soak_order, BLOB_SIZE)
        delayed = self.start("delayed", flows.soak_order, BLOB_SIZE, delay=DELAY)
        if delayed is not None:
            delayed.start_at = delayed.created + DELAY
        if (mailbox := self.start("mailbox", flows.soak_mailbox, MAILBOX_SIGNALS)) is not None:
            self.talk(feed_mailbox, mailbox, self.seed, MAILBOX_SIGNALS, MAILBOX_UPDATES)
        if (approval := self.start("approval", flows.soak_approval)) is not None:
            self.talk(resume_over_http, approval, self.web_url, flows.token_dir(), flows.APPROVAL_TIMEOUT)
        if (race := self.start("race", flows.soak_race, 1.0)) is not None:
            self.talk(maybe_go, race, self.seed)
        self.start("chain", flows.soak_chain, 0, CHAIN_LAST)
        self.start("parent", flows.soak_parent)
        self.start("limits", flows.soak_limits, LIMITED_WIDTH)
        if self.waves == 2:
            self.start("fanout", flows.soak_fanout, self.config.fan_out)
            self.cancel_sleepers()

    def cancel_sleepers(self) -> None:
        """A batch cancel of the sleepers, by their tag."""
        for _ in range(6):
            try:
                self.batch_id = batch_cancel(RunFilter(tag=f"soakbatch={self.seed}"), reason="soak", rate=5)
                return
            except Exception as exc:  # a batch started twice would cancel the same runs: harmless
                self.errors.append(f"batch_cancel raised (retried): {exc!r}")
                time.sleep(1.0)

    def finish(self, timeout: float) -> None:
        """Delete the schedule and wait for the conversations (at most ``timeout`` seconds)."""
        for _ in range(6):
            try:
                delete_schedule(self.schedule_id)
                break
            except ScheduleNotFound:
                break
            except Exception:  # infrastructure: again
                time.sleep(1.0)
        concurrent.futures.wait(self.futures, timeout=timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.save()

    def save(self) -> None:
        """Write the manifest (one JSON line per run started) beside the ledger."""
        with (self.directory / "manifest.jsonl").open("w") as out:
            for entry in self.entries:
                out.write(json.dumps(asdict(entry), default=str) + "\n")
