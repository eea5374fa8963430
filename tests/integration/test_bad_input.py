"""Bad input at every public entry point of the Python API and the HTTP app, against the moto server.

Each case asserts a typed error (a ``WorkflowError`` subclass, or an HTTP status) whose
message names the problem, then reads the store to check that nothing was written:
run, hook, signal, guard and schedule items are compared before and after, and a
recording transport checks that no message was sent. No worker is needed: the runs
used here are stored suspended, without a lease, so no worker or beat touches them.
See docs/reliability.md, "Bad input".
"""

from __future__ import annotations

import json
import secrets
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterator

import pytest

import workflows
from tests.e2e import flows, hook_flows, schedule_flows
from tests.unit.test_http import call
from workflows.client import RunHandle
from workflows.core.model import registry
from workflows.core.model.records import HookRecord, RunEnding, Suspension
from workflows.core.model.tokens import new_token
from workflows.core.ops.waits import hash_token, schema_ref
from workflows.errors import (
    HookAlreadyResumed,
    HookClosed,
    HookExpired,
    HookNotFound,
    HookPayloadInvalid,
    InvalidDuration,
    InvalidName,
    InvalidSchedule,
    PayloadTooLarge,
    RegistrationError,
    RunEnded,
    RunNotFound,
    ScheduleAlreadyExists,
    ScheduleNotFound,
    SerializationError,
    UnknownWorkflow,
    WorkflowError,
)
from workflows.memory import RecordingTransport
from workflows.runtime import get_engine
from workflows.web import hooks as http

UTC = timezone.utc
KEY = f"bad-input-{uuid.uuid4().hex}"  # an idempotency key no call may ever store
GHOST = f"ghost-{uuid.uuid4().hex}"  # an id of nothing
LIMIT = 256 * 1024
BIG = "x" * (LIMIT + 1)


def _case_ids(cases: list[Any]) -> list[str]:
    return [c.values[0] if hasattr(c, "values") else c[0] for c in cases]


def _deep(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        node.append([])
        node = node[0]
    return root


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.fixture(autouse=True)
def nothing_sent(settings) -> Iterator[RecordingTransport]:  # type: ignore[no-untyped-def]
    """Every case here is refused: not one message may be sent."""
    engine = get_engine()
    saved, recorder = engine.transport, RecordingTransport()
    engine.transport = recorder
    try:
        yield recorder
    finally:
        engine.transport = saved
    assert (recorder.steps, recorder.resumes, recorder.dead_letters) == ([], [], [])


def expect(error: type[BaseException], fragment: str, fn: Callable[[], Any]) -> BaseException:
    """Call ``fn``; it must raise ``error``, a WorkflowError whose message contains ``fragment``."""
    with pytest.raises(error) as info:
        fn()
    assert isinstance(info.value, WorkflowError), f"{type(info.value).__name__} is not a WorkflowError"
    assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"
    return info.value


def quiet_run(store, workflow: str = "approval", status: str = "suspended") -> str:  # type: ignore[no-untyped-def]
    """A stored run that nothing resumes: suspended without a lease (or ended)."""
    run_id = f"bad-input-{uuid.uuid4()}"
    store.create_run(get_engine().new_run_record(run_id, workflow, "[[],{}]"))
    assert store.suspend_run(run_id, Suspension(0, {"kind": "hook_wait"}), 0)
    if status != "suspended":
        assert store.finish_run(run_id, RunEnding(status, result="null")) is not None
    return run_id


def make_hook(store, state: str = "pending", schema: str | None = None,  # type: ignore[no-untyped-def]
              expires_in: float | None = 600) -> tuple[str, str]:
    """A hook as the engine stores it, in ``state``; returns ``(token, run_id)``."""
    run_id = quiet_run(store)
    token = new_token()  # "wh_..." as the engine makes them: never read as a command-line option
    expires = None if expires_in is None else time.time() + expires_in
    record = HookRecord(token_hash=hash_token(token), run_id=run_id, pos=0, name="approve", status="pending",
                        created_at=time.time(), expires_at=expires, schema=schema)
    data = json.dumps({"token": token, "hash": record.token_hash, "expires_at": expires})
    store.create_hook(record, None, run_id, 0, data)
    if state == "run-ended":  # a hook left pending by a run that then ended
        assert store.finish_run(run_id, RunEnding("completed", result="null")) is not None
    elif state == "resumed":
        store.complete_hook(record.token_hash, '"first"')
    elif state == "expired":
        assert store.expire_hook(record.token_hash)
    elif state == "closed":
        assert store.close_hooks(run_id) == 1
    return token, run_id


def run_ids(store, workflow: str) -> set[str]:  # type: ignore[no-untyped-def]
    """Every stored run of ``workflow`` (paged)."""
    found, cursor = set(), None
    while True:
        page = store.list_runs(workflow=workflow, limit=1000, cursor=cursor)
        found |= {r.run_id for r in page}
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


def schedule_ids(store) -> set[str]:  # type: ignore[no-untyped-def]
    """Every stored schedule (paged)."""
    found, cursor = set(), None
    while True:
        page = store.list_schedules(limit=1000, cursor=cursor)
        found |= {s.schedule_id for s in page}
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


# -- start ---------------------------------------------------------------------------------------

seq = flows.sequence
START_CASES = [
    ("unknown-workflow", lambda: workflows.start("no_such_workflow", 1), UnknownWorkflow, "'no_such_workflow'"),
    ("name-not-a-string", lambda: workflows.start(42), SerializationError, "workflow name"),
    ("object-argument", lambda: seq.start(object()), SerializationError, "type object is not JSON data"),
    ("set-argument", lambda: seq.start({1, 2}), SerializationError, "a set is not JSON data"),
    ("nan-argument", lambda: seq.start(float("nan")), SerializationError, "not JSON data"),
    ("bytes-argument", lambda: seq.start(b"1"), SerializationError, "type bytes is not JSON data"),
    ("tuple-dict-key", lambda: seq.start({(1, 2): 3}), SerializationError, "keys must be"),
    ("circular-argument", lambda: seq.start(_circular()), SerializationError, "Circular reference"),
    ("nested-too-deep", lambda: seq.start(_deep(100_000)), SerializationError, "nested too deeply"),
    ("keyword-not-json", lambda: seq.start(n=object()), SerializationError, "not JSON data"),
    ("by-name-not-json", lambda: workflows.start("sequence", object()), SerializationError, "'sequence'"),
    ("oversize-argument", lambda: seq.start(BIG), PayloadTooLarge, f"over the limit of {LIMIT} bytes"),
    ("key-not-a-string", lambda: seq.options(idempotency_key=5).start(1), SerializationError, "idempotency_key"),
    ("key-empty", lambda: seq.options(idempotency_key="").start(1), SerializationError, "idempotency_key"),
    ("key-too-long", lambda: seq.options(idempotency_key=KEY * 20).start(1), SerializationError, "at most 512"),
    ("key-with-bad-argument", lambda: seq.options(idempotency_key=KEY).start(object()), SerializationError, "JSON"),
    ("key-with-oversize-argument", lambda: seq.options(idempotency_key=KEY).start(BIG), PayloadTooLarge, "over the"),
]


@pytest.mark.parametrize(("call_", "error", "fragment"), [c[1:] for c in START_CASES], ids=[c[0] for c in START_CASES])
def test_start_rejects(store, call_, error, fragment) -> None:  # type: ignore[no-untyped-def]
    before = run_ids(store, "sequence"), run_ids(store, "no_such_workflow")
    expect(error, fragment, call_)
    assert (run_ids(store, "sequence"), run_ids(store, "no_such_workflow")) == before
    assert store.run_for_key(KEY) is None and store.run_for_key(KEY * 20) is None


# -- get_run, cancel, send_signal, RunHandle -----------------------------------------------------

LOOKUP_CASES = [
    ("get_run-unknown", lambda: workflows.get_run(GHOST), RunNotFound, GHOST),
    ("get_run-not-a-string", lambda: workflows.get_run(7), SerializationError, "run_id"),  # type: ignore[arg-type]
    ("get_run-empty", lambda: workflows.get_run(""), SerializationError, "run_id"),
    ("get_run-too-long", lambda: workflows.get_run(GHOST * 20), SerializationError, "at most 512"),
    ("cancel-unknown", lambda: workflows.cancel(GHOST), RunNotFound, GHOST),
    ("cancel-not-a-string", lambda: workflows.cancel(None), SerializationError, "run_id"),  # type: ignore[arg-type]
    ("cancel-too-long", lambda: workflows.cancel(GHOST * 20), SerializationError, "at most 512"),
    ("signal-unknown-run", lambda: workflows.send_signal(GHOST, "go", 1), RunNotFound, GHOST),
    ("signal-run-not-a-string", lambda: workflows.send_signal(7, "go", 1), SerializationError, "run_id"),  # type: ignore[arg-type]
    ("handle-status-unknown", lambda: RunHandle(GHOST).status(), RunNotFound, GHOST),
    ("handle-result-unknown", lambda: RunHandle(GHOST).result(timeout=1), RunNotFound, GHOST),
]


@pytest.mark.parametrize(("call_", "error", "fragment"), [c[1:] for c in LOOKUP_CASES],
                         ids=[c[0] for c in LOOKUP_CASES])
def test_run_lookup_rejects(store, call_, error, fragment) -> None:  # type: ignore[no-untyped-def]
    expect(error, fragment, call_)
    assert store.find_run(GHOST) is None  # no conditional update created the item
    assert store.signals(GHOST, "go") == []


SIGNAL_CASES = [
    ("payload-not-json", lambda r: workflows.send_signal(r, "go", object()), SerializationError, "'go'"),
    ("payload-nan", lambda r: workflows.send_signal(r, "go", float("inf")), SerializationError, "not JSON data"),
    ("payload-oversize", lambda r: workflows.send_signal(r, "go", BIG), PayloadTooLarge, "payload of signal 'go'"),
    ("name-not-a-string", lambda r: workflows.send_signal(r, 5, 1), SerializationError, "signal name"),  # type: ignore[arg-type]
    ("name-empty", lambda r: workflows.send_signal(r, "", 1), SerializationError, "signal name"),
    ("name-with-hash", lambda r: workflows.send_signal(r, "go#1", 1), InvalidName,
     "signal name 'go#1' is not a valid name"),
    ("result-timeout-not-a-duration", lambda r: RunHandle(r).result(timeout="soon"), InvalidDuration,  # type: ignore[arg-type]
     "result timeout 'soon'"),
]


@pytest.mark.parametrize(("call_", "error", "fragment"), [c[1:] for c in SIGNAL_CASES],
                         ids=[c[0] for c in SIGNAL_CASES])
def test_signal_to_a_live_run_rejects(store, call_, error, fragment) -> None:  # type: ignore[no-untyped-def]
    run_id = quiet_run(store)
    before = store.get_run(run_id)
    expect(error, fragment, lambda: call_(run_id))
    assert store.get_run(run_id) == before  # not woken: wake_seq and lease untouched
    assert store.signals(run_id, "go") == [] and store.signals(run_id, "") == []


def test_signal_to_an_ended_run_is_refused(store) -> None:  # type: ignore[no-untyped-def]
    run_id = quiet_run(store, status="completed")
    before = store.get_run(run_id)
    expect(RunEnded, f"run {run_id} has ended (completed); signal 'go' not sent",
           lambda: workflows.send_signal(run_id, "go", 1))
    assert store.signals(run_id, "go") == []
    assert store.get_run(run_id) == before


# -- resume_hook ---------------------------------------------------------------------------------

DECISION = schema_ref(hook_flows.Decision)
UNLOADED = json.dumps({"ref": "no_such_module:Model", "json": {"required": ["approved"]}})
OVERFLOW = {"__wf__": "timedelta", "v": "1e400"}  # decodes to an overflowing timedelta
HOOK_CASES = [
    # id, hook state, schema, token override, payload, error, fragment
    ("unknown-token", "pending", None, "not-a-token", 1, HookNotFound, "no hook matches this token"),
    ("token-not-a-string", "pending", None, 12345, 1, HookNotFound, "no hook matches"),
    ("token-none", "pending", None, None, 1, HookNotFound, "no hook matches"),
    ("token-too-long", "pending", None, "t" * 5000, 1, HookNotFound, "no hook matches"),
    ("payload-not-json", "pending", None, "", object(), SerializationError, "hook payload"),
    ("payload-nan", "pending", None, "", float("nan"), SerializationError, "not JSON data"),
    ("payload-oversize", "pending", None, "", BIG, PayloadTooLarge, f"over the limit of {LIMIT}"),
    ("used-token", "resumed", None, "", 2, HookAlreadyResumed, "already used"),
    ("expired-not-yet-swept", "past-due", None, "", 1, HookExpired, "'approve' expired"),
    ("expired", "expired", None, "", 1, HookExpired, "'approve' expired"),
    ("closed", "closed", None, "", 1, HookClosed, "has ended"),
    ("run-ended", "run-ended", None, "", 1, HookClosed, "has ended"),
    ("schema-mismatch", "pending", DECISION, "", {"approved": "maybe"}, HookPayloadInvalid, "does not match"),
    ("schema-missing-field", "pending", UNLOADED, "", {"by": "x"}, HookPayloadInvalid, "fields ['approved']"),
    ("schema-overflowing-tag", "pending", DECISION, "", OVERFLOW, HookPayloadInvalid, "does not match"),
]


@pytest.mark.parametrize(("state", "schema", "token", "payload", "error", "fragment"),
                         [c[1:] for c in HOOK_CASES], ids=[c[0] for c in HOOK_CASES])
def test_resume_hook_refuses(store, state, schema, token, payload, error, fragment) -> None:  # type: ignore[no-untyped-def]
    real, run_id = make_hook(store, state.replace("past-due", "pending"), schema,
                             expires_in=-1 if state == "past-due" else 600)
    hook_before, run_before = store.get_hook(hash_token(real)), store.get_run(run_id)
    expect(error, fragment, lambda: workflows.resume_hook(real if token == "" else token, payload))
    after = store.get_hook(hash_token(real))
    if state == "run-ended":  # the refusal tidies up: the hook of an ended run is closed, with no payload
        assert (after.status, after.payload, after.completed_at) == ("closed", None, None)
    else:
        assert after == hook_before  # status, payload ("first" for a used token) and completed_at unchanged
    assert store.get_run(run_id) == run_before


# -- list_runs -----------------------------------------------------------------------------------

LIST_CASES = [
    ("status-unknown", dict(status="bogus"), "status must be one of pending, delayed, running"),
    ("status-not-a-string", dict(status=5), "status must be one of"),
    ("limit-zero", dict(limit=0), "limit must be an int in 1..1000"),
    ("limit-too-big", dict(limit=1001), "limit must be an int in 1..1000"),
    ("limit-string", dict(limit="5"), "limit must be"),
    ("limit-bool", dict(limit=True), "limit must be"),
    ("workflow-not-a-name", dict(workflow=5), "workflow must be a non-empty string"),
    ("workflow-object", dict(workflow=object()), "workflow must be"),
    ("cursor-garbage", dict(cursor="garbage"), "invalid cursor 'garbage'"),
    ("cursor-not-a-string", dict(cursor=5), "invalid cursor 5"),
    ("cursor-status-out-of-range", dict(cursor="9:"), "invalid cursor '9:'"),
    ("cursor-negative-index", dict(cursor="-1:"), "invalid cursor '-1:'"),
    ("cursor-bad-inner", dict(cursor="0:%%%"), "invalid cursor '0:%%%'"),
    ("cursor-garbage-with-status", dict(status="pending", cursor="garbage!"), "invalid cursor 'garbage!'"),
    ("cursor-not-an-object", dict(workflow="sequence", cursor="WzFd"), "invalid cursor 'WzFd'"),
    ("since-not-a-number", dict(status="pending", created=workflows.TimeRange(since="yesterday")),  # type: ignore[arg-type]
     "since must be epoch seconds"),
    ("until-nan", dict(workflow="sequence", created=workflows.TimeRange(until=float("nan"))),
     "until must be epoch seconds"),
    ("cursor-tampered", dict(status="pending", cursor="eyJhIjogMX0="), "invalid cursor"),
]


@pytest.mark.parametrize(("case", "kwargs", "fragment"), LIST_CASES, ids=_case_ids(LIST_CASES))
def test_list_runs_rejects(store, case, kwargs, fragment) -> None:  # type: ignore[no-untyped-def]
    expect(SerializationError, fragment, lambda: workflows.list_runs(**kwargs))


def test_list_runs_of_an_unregistered_workflow_is_an_empty_page(store) -> None:  # type: ignore[no-untyped-def]
    # Runs outlive their code (and a CLI may not import it): an unknown name is a filter, not an error.
    page = workflows.list_runs(workflow="no_such_workflow")
    assert list(page) == [] and page.next_cursor is None


# -- schedules -----------------------------------------------------------------------------------

tick = schedule_flows.scheduled_tick
AWARE = datetime(2030, 1, 1, tzinfo=UTC)
CREATE_CASES = [
    ("unknown-workflow", dict(workflow="no_such_workflow", every=60), UnknownWorkflow, "'no_such_workflow'"),
    ("workflow-not-a-name", dict(workflow=5, every=60), InvalidSchedule, "workflow must be a registered name"),
    ("no-timetable", dict(), InvalidSchedule, "exactly one of cron or every"),
    ("cron-and-every", dict(cron="* * * * *", every=60), InvalidSchedule, "exactly one of cron or every"),
    ("cron-out-of-range", dict(cron="61 * * * *"), InvalidSchedule, "'61 * * * *'"),
    ("cron-three-fields", dict(cron="* * *"), InvalidSchedule, "need 5 fields"),
    ("cron-six-fields", dict(cron="0 * * * * *"), InvalidSchedule, "need 5 fields"),
    ("cron-step-zero", dict(cron="*/0 * * * *"), InvalidSchedule, "'*/0 * * * *'"),
    ("cron-hashed", dict(cron="H * * * *"), InvalidSchedule, "hashed (H) fields are not supported"),
    ("cron-never-fires", dict(cron="0 0 31 2 *"), InvalidSchedule, "never fires"),
    ("cron-unknown-alias", dict(cron="@never"), InvalidSchedule, "'@never'"),
    ("cron-not-a-string", dict(cron=5), InvalidSchedule, "not a string"),
    ("every-not-a-duration", dict(every="abc"), InvalidSchedule, "invalid every 'abc'"),
    ("every-zero", dict(every=0), InvalidSchedule, "every must be positive"),
    ("every-negative", dict(every="-5s"), InvalidSchedule, "invalid every '-5s'"),
    ("every-nan", dict(every=float("nan")), InvalidSchedule, "finite"),
    ("every-unknown-unit", dict(every="10x"), InvalidSchedule, "'10x'"),
    ("every-over-100-years", dict(every=1e12), InvalidSchedule, "at most 100 years"),
    ("every-a-list", dict(every=[60]), InvalidSchedule, "got list"),
    ("timezone-unknown", dict(cron="* * * * *", timezone="Mars/Base"), InvalidSchedule, "'Mars/Base'"),
    ("timezone-a-path", dict(cron="* * * * *", timezone="../../etc/passwd"), InvalidSchedule, "unknown time zone"),
    ("overlap-unknown", dict(every=60, overlap="sometimes"), InvalidSchedule, "'sometimes'"),
    ("args-not-json", dict(every=60, args=[object()]), SerializationError, "not JSON data"),
    ("args-a-string", dict(every=60, args="abc"), InvalidSchedule, "args must be a list"),
    ("kwargs-a-list", dict(every=60, kwargs=[1]), InvalidSchedule, "kwargs must be a dict"),
    ("args-oversize", dict(every=60, args=[BIG]), PayloadTooLarge, "over the limit"),
    ("id-bad-characters", dict(every=60, schedule_id="bad id!"), InvalidSchedule, "'bad id!'"),
    ("id-not-a-string", dict(every=60, schedule_id=5), InvalidSchedule, "invalid schedule id 5"),
    ("start-naive", dict(every=60, start_at=datetime(2030, 1, 1)), InvalidSchedule, "timezone-aware"),
    ("start-a-string", dict(every=60, start_at="2030-01-01"), InvalidSchedule, "must be a datetime"),
    ("end-before-start", dict(every=60, start_at=AWARE, end_at=AWARE - timedelta(days=1)), InvalidSchedule,
     "must be before end_at"),
    ("jitter-not-a-duration", dict(every=60, jitter="lots"), InvalidSchedule, "invalid jitter 'lots'"),
    ("jitter-over-100-years", dict(every=60, jitter=1e300), InvalidSchedule, "at most 100 years"),
    ("catchup-not-a-duration", dict(every=60, catchup_window="x"), InvalidSchedule, "catchup_window"),
    ("catchup-over-100-years", dict(every=60, catchup_window=1e300), InvalidSchedule, "at most 100 years"),
    ("paused-not-a-bool", dict(every=60, paused="no"), InvalidSchedule, "paused"),
]


@pytest.mark.parametrize(("case", "kwargs", "error", "fragment"), CREATE_CASES, ids=_case_ids(CREATE_CASES))
def test_create_schedule_rejects(store, case, kwargs, error, fragment) -> None:  # type: ignore[no-untyped-def]
    before = schedule_ids(store)
    kwargs = dict(kwargs)
    try:
        expect(error, fragment, lambda: workflows.create_schedule(kwargs.pop("workflow", tick), **kwargs))
    finally:
        created = schedule_ids(store) - before
        for schedule_id in created:  # keep the session clean even when the case fails
            store.delete_schedule(schedule_id)
    assert created == set()


@pytest.fixture()
def existing(store) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A paused schedule (beat leaves it alone) to aim bad calls at; deleted after."""
    info = workflows.create_schedule(tick, every="1h", args=["bad-input"], paused=True,
                                     schedule_id=f"bad-input-{uuid.uuid4().hex[:10]}")
    yield info.schedule_id
    store.delete_schedule(info.schedule_id)


S = "<existing>"
OPS_CASES = [
    ("create-id-taken", lambda s: workflows.create_schedule(tick, every=60, schedule_id=s), ScheduleAlreadyExists,
     "already exists"),
    ("update-cron", lambda s: workflows.update_schedule(s, cron="61 * * * *"), InvalidSchedule, "'61 * * * *'"),
    ("update-every", lambda s: workflows.update_schedule(s, every="abc"), InvalidSchedule, "'abc'"),
    ("update-no-timetable", lambda s: workflows.update_schedule(s, every=None), InvalidSchedule, "exactly one"),
    ("update-timezone", lambda s: workflows.update_schedule(s, timezone="Mars/Base"), InvalidSchedule, "Mars"),
    ("update-workflow", lambda s: workflows.update_schedule(s, workflow="no_such_workflow"), UnknownWorkflow,
     "'no_such_workflow'"),
    ("update-overlap", lambda s: workflows.update_schedule(s, overlap="x"), InvalidSchedule, "overlap policy 'x'"),
    ("update-args-not-json", lambda s: workflows.update_schedule(s, args=[object()]), SerializationError, "JSON"),
    ("update-args-oversize", lambda s: workflows.update_schedule(s, args=[BIG]), PayloadTooLarge, "over the limit"),
    ("trigger-overlap", lambda s: workflows.trigger_schedule(s, overlap="x"), InvalidSchedule, "overlap policy"),
    ("backfill-naive", lambda s: workflows.backfill_schedule(s, datetime(2030, 1, 1), datetime(2030, 1, 2)),
     InvalidSchedule, "timezone-aware"),
    ("backfill-strings", lambda s: workflows.backfill_schedule(s, "2030-01-01", "2030-01-02"), InvalidSchedule,  # type: ignore[arg-type]
     "timezone-aware datetime"),
    ("backfill-reversed", lambda s: workflows.backfill_schedule(s, AWARE, AWARE - timedelta(hours=2)),
     InvalidSchedule, "is after its end"),
    ("backfill-too-many", lambda s: workflows.backfill_schedule(s, AWARE - timedelta(days=3650), AWARE),
     InvalidSchedule, "more than 1000 fires"),
    ("backfill-overlap", lambda s: workflows.backfill_schedule(s, AWARE, AWARE + timedelta(hours=2), overlap="x"),
     InvalidSchedule, "overlap policy"),
]


@pytest.mark.parametrize(("call_", "error", "fragment"), [c[1:] for c in OPS_CASES], ids=[c[0] for c in OPS_CASES])
def test_schedule_call_on_existing_rejects(store, existing, call_, error, fragment) -> None:  # type: ignore[no-untyped-def]
    before, runs_before, ids_before = store.get_schedule(existing), run_ids(store, tick.name), schedule_ids(store)
    expect(error, fragment, lambda: call_(existing))
    assert store.get_schedule(existing) == before  # version, timetable, args and bookkeeping untouched
    assert run_ids(store, tick.name) == runs_before  # no fire started a run
    assert schedule_ids(store) == ids_before


UNKNOWN_CASES = [
    ("get", lambda s: workflows.get_schedule(s)),
    ("get-not-a-string", lambda s: workflows.get_schedule(5)),  # type: ignore[arg-type]
    ("update", lambda s: workflows.update_schedule(s, every=60)),
    ("pause", lambda s: workflows.pause_schedule(s)),
    ("resume", lambda s: workflows.resume_schedule(s)),
    ("delete", lambda s: workflows.delete_schedule(s)),
    ("delete-not-a-string", lambda s: workflows.delete_schedule(None)),  # type: ignore[arg-type]
    ("trigger", lambda s: workflows.trigger_schedule(s)),
    ("backfill", lambda s: workflows.backfill_schedule(s, AWARE, AWARE + timedelta(hours=1))),
]


@pytest.mark.parametrize("call_", [c[1] for c in UNKNOWN_CASES], ids=[c[0] for c in UNKNOWN_CASES])
def test_schedule_call_on_unknown_id_rejects(store, call_) -> None:  # type: ignore[no-untyped-def]
    ids_before = schedule_ids(store)
    expect(ScheduleNotFound, "no schedule with id", lambda: call_(GHOST))
    assert store.find_schedule(GHOST) is None  # no conditional update created the item
    assert schedule_ids(store) == ids_before


LIST_SCHEDULE_CASES = [
    ("limit-zero", dict(limit=0), "limit must be an int in 1..1000"),
    ("limit-string", dict(limit="5"), "limit must be"),
    ("state-unknown", dict(state="dead"), "state must be 'active' or 'paused'"),
    ("cursor-garbage", dict(cursor="garbage"), "cursor"),
    ("workflow-not-a-name", dict(workflow=5), "workflow"),
]


@pytest.mark.parametrize(("case", "kwargs", "fragment"), LIST_SCHEDULE_CASES, ids=_case_ids(LIST_SCHEDULE_CASES))
def test_list_schedules_rejects(store, case, kwargs, fragment) -> None:  # type: ignore[no-untyped-def]
    expect(WorkflowError, fragment, lambda: workflows.list_schedules(**kwargs))


# -- decorators ----------------------------------------------------------------------------------

DECORATOR_CASES: list[tuple[str, dict[str, Any], type[WorkflowError], str]] = [
    ("step", dict(retry=3), RegistrationError, "unknown @step option(s): retry"),
    ("step", dict(retries=-1), RegistrationError, "retries must be an int >= 0"),
    ("step", dict(retries="3"), RegistrationError, "retries must be an int"),
    ("step", dict(backoff=0.5), RegistrationError, "backoff must be a finite number >= 1"),
    ("step", dict(backoff=float("nan")), RegistrationError, "backoff must be a finite number"),
    ("step", dict(backoff=float("inf")), RegistrationError, "backoff must be a finite number"),
    ("step", dict(backoff=True), RegistrationError, "backoff"),
    ("step", dict(jitter=1), RegistrationError, "jitter must be a number in [0, 1)"),
    ("step", dict(jitter="x"), RegistrationError, "jitter"),
    ("step", dict(inline="no"), RegistrationError, "inline must be True or False"),
    ("step", dict(queue=""), RegistrationError, "@step queue '' is not a valid queue name"),
    ("step", dict(name=5), RegistrationError, "is not a valid name: use 1 to 200 characters"),
    ("step", dict(name=["a"]), RegistrationError, "is not a valid name: use 1 to 200 characters"),
    ("step", dict(name=""), RegistrationError, "is not a valid name: use 1 to 200 characters"),
    ("step", dict(retry_delay="soon"), InvalidDuration, "retry_delay 'soon'"),
    ("step", dict(max_delay=-1), InvalidDuration, "max_delay must be non-negative"),
    ("step", dict(timeout=0), InvalidDuration, "timeout must be positive"),
    ("step", dict(timeout="1 hour"), InvalidDuration, "timeout '1 hour'"),
    ("step", dict(timeout=[1]), InvalidDuration, "got list"),
    ("workflow", dict(max_duraton="1d"), RegistrationError, "unknown @workflow option(s): max_duraton"),
    ("workflow", dict(max_duration="forever"), InvalidDuration, "max_duration 'forever'"),
    ("workflow", dict(max_duration=0), InvalidDuration, "max_duration must be positive"),
    ("workflow", dict(max_duration="nan"), InvalidDuration, "max_duration must be a finite number"),
    ("workflow", dict(max_duration=1e300), InvalidDuration, "at most 100 years"),
    ("workflow", dict(name=5), RegistrationError, "@workflow name 5 is not a valid name"),
    ("workflow", dict(queue=5), RegistrationError, "@workflow queue 5 is not a valid queue name"),
    ("workflow", dict(schedule="61 * * * *"), InvalidSchedule, "'61 * * * *'"),
    ("workflow", dict(schedule=5), InvalidSchedule, "not a string"),
    ("workflow", dict(schedule="* * * * *", schedule_timezone="Mars/Base"), InvalidSchedule, "'Mars/Base'"),
    ("workflow", dict(schedule="* * * * *", schedule_overlap="sometimes"), InvalidSchedule, "'sometimes'"),
    ("workflow", dict(schedule_overlap="skip"), RegistrationError, "need schedule="),
]


@pytest.mark.parametrize(("kind", "options", "error", "fragment"), DECORATOR_CASES,
                         ids=[f"{c[0]}-{'-'.join(f'{k}={v}' for k, v in c[1].items())}" for c in DECORATOR_CASES])
def test_decorator_rejects(kind, options, error, fragment) -> None:  # type: ignore[no-untyped-def]
    decorator = workflows.step if kind == "step" else workflows.workflow
    before = {d.name for d in registry.workflows()}, {d.name for d in registry.steps()}

    def bad_input_victim() -> None:
        pass

    expect(error, fragment, lambda: decorator(**options)(bad_input_victim))
    assert ({d.name for d in registry.workflows()}, {d.name for d in registry.steps()}) == before


@pytest.mark.parametrize("target", [5, "name", None])
def test_decorating_a_non_function_rejects(target) -> None:  # type: ignore[no-untyped-def]
    decorators: list[Any] = [workflows.step, workflows.workflow]
    for decorator in decorators:
        expect(RegistrationError, "needs a function", lambda: decorator()(target))  # noqa: B023 - called at once


@pytest.mark.parametrize("kind", ["step", "workflow"])
def test_duplicate_name_rejects_and_keeps_the_first(kind) -> None:  # type: ignore[no-untyped-def]
    decorator, lookup = (workflows.step, registry.get_step) if kind == "step" else (workflows.workflow,
                                                                                   registry.get_workflow)
    name = f"bad_input_dup_{kind}"

    def first() -> None:
        pass

    def second() -> None:
        pass

    decorator(name=name)(first)
    expect(RegistrationError, f"name {name!r} is already used by", lambda: decorator(name=name)(second))
    assert lookup(name).fn is first


# -- HTTP, with the real store -------------------------------------------------------------------

HTTP_CASES = [
    # id, hook state, schema, body, status, error kind
    ("unknown-token", "unknown", None, b"1", 404, "HookNotFound"),
    ("used-token", "resumed", None, b"1", 409, "HookAlreadyResumed"),
    ("expired", "expired", None, b"1", 410, "HookExpired"),
    ("closed", "closed", None, b"1", 410, "HookClosed"),
    ("body-not-json", "pending", None, b"{nope", 422, "SerializationError"),
    ("schema-mismatch", "pending", DECISION, b'{"approved": "maybe"}', 422, "HookPayloadInvalid"),
    ("payload-over-limit", "pending", None, json.dumps(BIG).encode(), 413, "PayloadTooLarge"),
]


@pytest.mark.parametrize(("state", "schema", "body", "status", "kind"), [c[1:] for c in HTTP_CASES],
                         ids=[c[0] for c in HTTP_CASES])
def test_http_refuses(store, state, schema, body, status, kind) -> None:  # type: ignore[no-untyped-def]
    token, run_id = make_hook(store, "pending" if state == "unknown" else state, schema)
    sent = "unknown-" + secrets.token_urlsafe(16) if state == "unknown" else token
    hook_before, run_before = store.get_hook(hash_token(token)), store.get_run(run_id)
    response = call(http.create_app(imports=()), "POST", f"/hooks/{sent}", [body])
    assert (response.status, response.json()["error"]) == (status, kind), response.body
    assert sent not in response.body.decode()
    assert store.get_hook(hash_token(token)) == hook_before
    assert store.get_run(run_id) == run_before
