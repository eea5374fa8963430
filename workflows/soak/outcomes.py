"""The check of every run against what the workload says of it: its end state, its result, and
that no signal, update or hook payload the driver sent was lost or applied twice.

Each rule takes the driver's :class:`Entry` and a :class:`Look` at the stores (no faults by then)
and returns its violations; the look gathers every run it reads (chains, children, schedule fires),
which the ledger's check then covers too.
"""

from __future__ import annotations

import concurrent.futures
import time
from collections import Counter
from typing import Any, Callable

from ..client import list_runs
from ..core.model.records import RunRecord, RunStatus
from ..runtime import get_engine
from . import flows
from .interact import Entry
from .workload import BLOB_SIZE, CHAIN_LAST, LIMITED_WIDTH

Violation = tuple[str, str]  # (run id, what is wrong)
ORDER_RESULT = {"value": flows.ORDER_VALUE, "tries": flows.ORDER_TRIES, "size": BLOB_SIZE}
CHILD_ENDS = {"cancel": "cancelled", "request_cancel": "cancelled", "abandon": "completed", "default": "completed"}


class Look:
    """Reads runs through the store, remembering each (the runs the ledger's check covers).

    Args:
        settled: the runs no longer change (the check): a run read once is not read again.
    """

    def __init__(self, settled: bool = False) -> None:
        self.store = get_engine().store
        self.settled = settled
        self.runs: dict[str, RunRecord] = {}
        self.kinds: dict[str, str] = {}

    def run(self, run_id: str, kind: str) -> RunRecord:
        """The stored run (read again each time, unless settled and read before)."""
        self.kinds.setdefault(run_id, kind)
        if not (self.settled and run_id in self.runs):
            self.runs[run_id] = self.store.get_run(run_id)
        return self.runs[run_id]

    def prefetch(self, run_ids: set[str]) -> None:
        """Read these runs four at a time (moto answers one while the client parses another)."""
        todo = sorted(run_ids - self.runs.keys())
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            self.runs.update(zip(todo, pool.map(self.store.get_run, todo), strict=True))

    def result(self, record: RunRecord) -> Any:
        """A completed run's result, decoded."""
        return get_engine().payloads.decode(record.result) if record.result is not None else None

    def chain(self, run_id: str, kind: str) -> list[RunRecord]:
        """Every run of a continue-as-new chain, first to last."""
        out = [self.run(run_id, kind)]
        while out[-1].status == RunStatus.CONTINUED and out[-1].continued_to and len(out) < 100:
            out.append(self.run(out[-1].continued_to, kind))
        return out


def expect_status(record: RunRecord, status: str) -> list[str]:
    """A violation when the run is not in ``status``."""
    if record.status == status:
        return []
    if not record.is_terminal:
        return [f"still {record.status} at the check (expected {status}): slow, or stranded"]
    return [f"ended {record.status} (expected {status}): {record.error or ''}"[:300]]


def expect_result(look: Look, record: RunRecord, expected: Any) -> list[str]:
    """A violation when a completed run's result differs (or is missing)."""
    if record.status != RunStatus.COMPLETED:
        return expect_status(record, RunStatus.COMPLETED)
    got = look.result(record)
    return [] if got == expected else [f"completed with {got!r} (expected {expected!r})"[:300]]


def check_order(look: Look, entry: Entry) -> list[str]:
    """An order (or a delayed one) completed with its result."""
    return expect_result(look, look.run(entry.run_id, entry.kind), ORDER_RESULT)


def check_mailbox(look: Look, entry: Entry) -> list[str]:
    """A mailbox took every signal and update once, in order."""
    record = look.run(entry.run_id, entry.kind)
    if record.status != RunStatus.COMPLETED and not all(s.ok for s in entry.signals):
        return []  # a signal whose send raised may not be stored: the run may rightly wait for it
    problems = expect_status(record, RunStatus.COMPLETED)
    if problems:
        return problems
    result = look.result(record)
    return signal_problems(entry, result["items"]) + update_problems(entry, result["updates"])


def signal_problems(entry: Entry, items: list[Any]) -> list[str]:
    """Every signal sent is taken once, in send order; one whose send raised at most once."""
    sent = [s.payload for s in entry.signals]
    problems = [f"signal {item!r} taken twice" for item, n in Counter(map(repr, items)).items() if n > 1]
    problems += [f"signal {s.payload!r} was sent but never taken" for s in entry.signals
                 if s.ok and s.payload not in items]
    problems += [f"signal {item!r} taken but never sent" for item in items if item not in sent]
    if [sent.index(i) for i in items if i in sent] != sorted(sent.index(i) for i in items if i in sent):
        problems.append(f"signals taken out of send order: {items!r}")
    return problems


def update_problems(entry: Entry, applied: list[Any]) -> list[str]:
    """Every answered update is applied once, at the place its answer says; none twice."""
    problems = [f"update {u!r} applied twice" for u, n in Counter(applied).items() if n > 1]
    for sent in entry.updates:
        if sent.ok and (not isinstance(sent.answer, int) or applied[sent.answer - 1:sent.answer] != [sent.payload]):
            problems.append(f"update {sent.payload!r} answered {sent.answer!r} but applied as {applied!r}")
    problems += [f"update {u!r} applied but never sent" for u in applied if u not in [s.payload for s in entry.updates]]
    return problems


def check_approval(look: Look, entry: Entry) -> list[str]:
    """The hook was resumed once over HTTP, a second try refused with 409, and the run got its payload."""
    record = look.run(entry.run_id, entry.kind)
    statuses = entry.hook_statuses
    if not statuses:
        return [f"the hook was never resumed ({'; '.join(entry.notes) or 'no request made'})"]
    problems = [f"hook resumed {statuses.count(202)} times (statuses {statuses})"] if statuses.count(202) != 1 else []
    if 409 in statuses and (202 not in statuses or statuses.index(409) < statuses.index(202)) and 0 not in statuses:
        problems.append(f"the hook refused as already resumed before it was resumed (statuses {statuses})")
    if statuses[-2:-1] == [202] and statuses[-1] != 409:
        problems.append(f"a second resume of a used token was answered {statuses[-1]}, not 409")
    return problems + expect_result(look, record, {"payload": entry.hook_payload})


def check_race(look: Look, entry: Entry) -> list[str]:
    """A race completed, won by one of its candidates (by its signal only if it was sent)."""
    record = look.run(entry.run_id, entry.kind)
    problems = expect_status(record, RunStatus.COMPLETED)
    won = (look.result(record) or {}).get("won") if not problems else None
    if not problems and (won not in ("go", "late", "work") or (won == "go" and not entry.signals)):
        problems.append(f"the race was won by {won!r} (go sent: {bool(entry.signals)})")
    return problems


def check_chain(look: Look, entry: Entry) -> list[str]:
    """A chain continued as new twice and its last run completed."""
    runs = look.chain(entry.run_id, entry.kind)
    problems = [f"chain of {len(runs)} runs (expected {CHAIN_LAST + 1})"] if len(runs) != CHAIN_LAST + 1 else []
    return problems + expect_result(look, runs[-1], CHAIN_LAST)


def check_parent(look: Look, entry: Entry) -> list[str]:
    """A parent completed and each child ended as its parent-close policy says."""
    record = look.run(entry.run_id, entry.kind)
    problems = expect_status(record, RunStatus.COMPLETED)
    if problems:
        return problems
    result = look.result(record)
    for policy, status in CHILD_ENDS.items():
        child = look.run(result[policy], f"child-{policy}")
        if child.status != status:
            problems.append(f"its child {child.run_id} ({policy}) is {child.status}, expected {status}")
    return problems


def check_fixed(expected: Any) -> Callable[[Look, Entry], list[str]]:
    """A rule: the run completed with ``expected``."""
    def check(look: Look, entry: Entry) -> list[str]:
        """The run completed with the expected result."""
        return expect_result(look, look.run(entry.run_id, entry.kind), expected)
    return check


def check_sleeper(look: Look, entry: Entry) -> list[str]:
    """A sleeper was cancelled by the batch."""
    return expect_status(look.run(entry.run_id, entry.kind), RunStatus.CANCELLED)


def check_waiter(look: Look, entry: Entry) -> list[str]:
    """The waiter still waits."""
    record = look.run(entry.run_id, entry.kind)
    return [] if record.status == RunStatus.SUSPENDED else [f"is {record.status}, expected to wait for 'never'"]


RULES: dict[str, Callable[[Look, Entry], list[str]]] = {
    "order": check_order, "delayed": check_order, "mailbox": check_mailbox, "approval": check_approval,
    "race": check_race, "chain": check_chain, "parent": check_parent, "limits": check_fixed(LIMITED_WIDTH),
    "fanout": check_fixed(None), "sleeper": check_sleeper, "waiter": check_waiter,
}


def check_entries(look: Look, entries: list[Entry], fan_out: int) -> list[Violation]:
    """Every rule over every run the driver started."""
    RULES["fanout"] = check_fixed(sum(i * i for i in range(fan_out)))
    return [(entry.run_id, f"{entry.kind} {entry.tag}: {problem}")
            for entry in entries for problem in RULES[entry.kind](look, entry)]


def check_ticks(look: Look) -> tuple[int, list[Violation]]:
    """The schedule's runs: each completed, one per fire time."""
    fires: Counter[float | None] = Counter()
    problems: list[Violation] = []
    cursor: str | None = None
    while True:
        page = list_runs(workflow=flows.soak_tick, limit=200, cursor=cursor)
        for record in page:
            full = look.run(record.run_id, "tick")
            fires[full.fire_time] += 1
            problems += [(full.run_id, f"schedule fire: {p}") for p in expect_result(look, full, 2)]
        cursor = page.next_cursor
        if cursor is None:
            break
    problems += [("", f"fire time {t} started {n} runs") for t, n in fires.items() if n > 1]
    return sum(fires.values()), problems


def unsettled(look: Look, entries: list[Entry], until: float = float("inf")) -> list[Entry]:
    """The runs still expected to end that have not (chains followed to their last run); past
    ``until`` (``time.monotonic()``) the runs not read yet count as going, unread."""
    out: list[Entry] = []
    for i, entry in enumerate(entries):
        if time.monotonic() > until:
            return out + [e for e in entries[i:] if e.kind != "waiter"]
        if entry.kind == "waiter":
            continue
        record = look.chain(entry.run_id, entry.kind)[-1] if entry.kind == "chain" else look.run(entry.run_id,
                                                                                                 entry.kind)
        if not record.is_terminal:
            out.append(entry)
    return out


def check_batch(batch_id: str | None, sleepers: int) -> list[Violation]:
    """The batch cancel ended, having cancelled every sleeper."""
    from ..batches import get_batch

    if batch_id is None:
        return [("", "the batch cancel was never started")]
    batch = get_batch(batch_id)
    counts = batch.counts()
    if batch.state != "completed" or counts.get("done") != sleepers:
        return [("", f"batch {batch_id} is {batch.state} with {counts} (expected {sleepers} done)")]
    return []
