"""The request minimum (DESIGN.md, "Costs"; issue 26 item 3), counted on the in-memory store,
which makes the requests the DynamoDB store would make, one by one.

Each test names a target and asserts today's count of store requests by name: a change that
adds a request per step fails here. Targets not met yet are asserted as they are, and say so.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Callable

from tests.replay import replay_flows as flows
from workflows.core.engine import Engine
from workflows.core.model.records import RunStatus
from workflows.core.model.registry import get_workflow
from workflows.core.ops.steps import execute_step, run_worker_task
from workflows.memory import ManualClock, MemoryStore, RecordingTransport
from workflows.settings import Settings

SETTINGS = Settings(lease_seconds=60.0, hook_secret="request-minimum-tests-hook-secret-0123456789")


def is_read(name: str) -> bool:
    """Whether the store's request ``name`` reads (every other one writes)."""
    return name.startswith(("read", "get", "list", "query"))


class SendLog(RecordingTransport):
    """A recording transport that also notes each send in the log of store requests."""

    def __init__(self, local_queues: set[str | None], log: list[str]) -> None:
        super().__init__(local_queues)
        self.log = log

    def send_step(self, message: Any) -> None:
        self.log.append("SEND step")
        super().send_step(message)


class Counted:
    """A run driven to its end, every message delivered once, with its store requests counted
    by name (``requests``) from its creation on, and its SQS sends. ``tasks``: for each step
    message, the store requests and sends its worker made, in order."""

    def __init__(self, workflow: str, n: int, *, in_place: bool) -> None:
        clock = ManualClock()
        self.store = MemoryStore(SETTINGS, clock)
        self.requests: Counter[str] = Counter()
        self.sends = 0
        self.log: list[str] = []
        self.tasks: list[list[str]] = []
        transport = SendLog({None} if in_place else set(), self.log)
        engine = Engine(self.store, transport, SETTINGS, clock=clock)
        self.engine, self.clock = engine, clock
        self.store.interceptor = self._count
        run_id, _ = engine.create_run(get_workflow(workflow), json.dumps([[n], {}]))
        for _ in range(100):
            steps, resumes = list(transport.steps), list(transport.resumes)
            self.sends += len(steps) + len(resumes)
            transport.clear()
            if not steps and not resumes:
                break
            for message in steps:
                self.log.clear()
                run_worker_task(engine, lambda m=message: execute_step(engine, m, redelivered=False))
                self.tasks.append(list(self.log))
            for resume in resumes:
                run_worker_task(engine, lambda r=resume: engine.receive_resume(r, first_delivery=True))
        self.store.interceptor = None
        assert self.store.get_run(run_id).status == RunStatus.COMPLETED

    def _count(self, name: str, apply: Callable[[], Any]) -> Any:
        self.requests[name] += 1
        self.log.append(name)
        return apply()

    @property
    def writes(self) -> int:
        """DynamoDB writes (a transaction counted once)."""
        return sum(n for name, n in self.requests.items() if not is_read(name))

    @property
    def reads(self) -> int:
        """DynamoDB reads."""
        return sum(n for name, n in self.requests.items() if is_read(name))


def test_a_step_in_place_is_one_write_and_no_read() -> None:
    """Target: 1 write, 0 reads per step in place (was 2 writes: advance_run, then the record).
    The resume claims the run once (a lease write), then each step is its record only."""
    ten, one = Counted(flows.replay_ten.name, 10, in_place=True), Counted(flows.replay_ten.name, 1, in_place=True)
    assert ten.requests - one.requests == {"record event": 9}  # nine more steps: nine writes, no read
    # the first resume uses the run its fresh message carries (its claim's condition confirms it); the last
    # step's outcome goes with the end (one UpdateItem of the run item)
    assert ten.requests == {"create run": 1, "claim run": 1, "record event": 9, "finish run": 1}


def test_an_inline_step_is_one_write() -> None:
    """Target: 1 write per inline step (kept)."""
    ten, one = (Counted(flows.replay_ten_inline.name, n, in_place=False) for n in (10, 1))
    assert ten.requests - one.requests == {"record event": 9}


def test_a_step_sent_as_a_message_leaves_after_one_write() -> None:
    """Target: its message leaves after at most 1 write (met): the previous step's record, which
    marks it in flight (``core.replay.marks``); the run item's cursor moves after the send. The step's
    worker still reads the run (docs/performance.md)."""
    ten, one = (Counted(flows.replay_ten.name, n, in_place=False) for n in (10, 1))
    assert ten.requests - one.requests == {"record event": 9, "advance run": 9, "read run": 9}
    assert ten.sends - one.sends == 9
    sending = [task for task in ten.tasks if "SEND step" in task]
    assert len(sending) == 9  # every step's worker but the last sends the next step
    for task in sending:
        before = task[:task.index("SEND step")]
        assert [name for name in before if not is_read(name)] == ["record event"], task
        assert task[task.index("SEND step") + 1:] == ["advance run"], task


def test_a_fan_out_branch_reads_no_run_item() -> None:
    """Target: a fan-out branch reads no run item (met): per branch, its result's PutItem and its count's
    UpdateItem; only the branch that completes the join reads the run, to resume it."""
    ten, five = (Counted(flows.replay_fan.name, n, in_place=True) for n in (10, 5))
    assert ten.requests - five.requests == {"record branch": 5, "join": 5}
    assert ten.requests["read run"] == five.requests["read run"] == 2  # the first resume's, the join's


def test_a_one_step_run_end_to_end() -> None:
    """Target: at most 3 writes, 0 reads, 3 SQS requests (met). In place: 3 single-item writes
    (create; the claim, whose condition confirms the run the fresh message carries is stored as
    created; the end, which carries the step's outcome), 0 reads, 1 send (+ its receive and
    delete: 3 SQS requests)."""
    one = Counted(flows.replay_ten.name, 1, in_place=True)
    assert one.requests == {"create run": 1, "claim run": 1, "finish run": 1}
    assert (one.writes, one.reads, one.sends) == (3, 0, 1)


def test_an_inline_one_step_run() -> None:
    """Inline: the same 3 writes (create, claim, the end with the step's outcome), 0 reads."""
    one = Counted(flows.replay_ten_inline.name, 1, in_place=False)
    assert one.requests == {"create run": 1, "claim run": 1, "finish run": 1}


def test_the_end_carries_the_last_outcome_into_the_history() -> None:
    """The history every reader sees is the same as before: the outcome the end carries is merged in
    (``with_last_outcome``), at its position, once."""
    from workflows.core.model.records import with_last_outcome

    one = Counted(flows.replay_ten.name, 1, in_place=True)
    (run,) = one.store.runs.items.values()
    record = one.store.get_run(run["run_id"])
    assert one.store.read_history(record.run_id) == []
    (outcome,) = with_last_outcome(record, one.store.read_history(record.run_id))
    assert record.last_outcome is not None
    assert (outcome.pos, outcome.kind, outcome.status) == (0, "step", "completed")


def test_retention_per_recorded_step() -> None:
    """Target: retention adds at most 0.1 write per recorded step: it adds none. The history items are
    written expiring (write time + retention + horizon), later than the run's TTL, and a run with nothing
    written without a TTL (no tag, key, hook or chain, payloads inline) that ends within half a horizon
    does not even enter the retention index: its end sets the run item's TTL, and beat's sweep never
    reads or writes it (it cost a GetItem, 2 Queries and the release UpdateItem, plus 9 stamps for 10 steps)."""
    from workflows.core.storage.retention import retain_ended_runs

    for n in (1, 10):
        run = Counted(flows.replay_ten.name, n, in_place=True)
        (item,) = run.store.runs.items.values()
        assert "retain_shard" not in item and item["retain_until"] >= run.clock.now() + SETTINGS.retention
        history = [i["retain_until"] for i in run.store.events.items.values()]
        assert len(history) == n - 1 and all(ttl >= item["retain_until"] for ttl in history)  # the last: on the run
        run.clock.advance(SETTINGS.lease_seconds + 1)
        run.requests.clear()
        run.store.interceptor = run._count
        assert retain_ended_runs(run.engine) == 0
        run.store.interceptor = None
        assert {name for name in run.requests if not is_read(name)} == set()  # the sweep writes nothing
