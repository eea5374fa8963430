"""Bad input at every ``workflows`` command, each run as a subprocess (``python -m workflows``).

Each case must exit non-zero (2 for a usage error, 1 for a refused operation) with a
one-line message naming the problem on stderr, and no traceback. The commands run
concurrently against the session's moto server (no worker needed); the stored state
they could touch (runs, hooks, signals, schedules) is read before and after all of them.
See docs/reliability.md, "Bad input".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from persistence import get_store
from tests.e2e import schedule_flows
from workflows import create_schedule
from workflows.core.model.records import HookRecord, RunEnding, Suspension
from workflows.core.model.tokens import new_token
from workflows.core.ops.waits import hash_token
from workflows.runtime import get_engine

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
GHOST = f"ghost-{uuid.uuid4().hex}"
SMALL_LIMIT = {"WORKFLOWS_MAX_PAYLOAD_BYTES": "1000"}
BAD_IMPORTS = {"WORKFLOWS_IMPORTS": "no_such_module"}
HUGE_INT = "1" * 5000  # over Python's 4300-digit limit on converting text to int
DEEP = "[" * 50_000 + "]" * 50_000  # past the recursion limit, and under Linux's 128 KB limit on one argument
DEEP_OBJECT = '{"a":' * 20_000 + "1" + "}" * 20_000
PAST_CODEC = "[" * 600 + "]" * 600  # JSON parses it; the codec refuses more than 500 levels


@dataclass(frozen=True)
class Case:
    """One command line; an argument ``{token}``, ``{used}``, ``{schedule}``... names a prepared thing."""

    id: str
    argv: tuple[str, ...]
    code: int
    stderr: str  # a fragment the message must contain
    env: dict[str, str] = field(default_factory=dict)


def case(id_: str, *argv: str, code: int = 1, stderr: str, env: dict[str, str] | None = None,
         xfail: str | None = None) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(Case(id_, argv, code, stderr, env or {}), id=id_, marks=marks)


USAGE = 2
CASES = [
    # usage errors: argparse (or click, for worker and beat) refuses before anything runs
    case("no-command", code=USAGE, stderr="the following arguments are required: command"),
    case("unknown-command", "bogus", code=USAGE, stderr="invalid choice: 'bogus'"),
    case("runs-no-subcommand", "runs", code=USAGE, stderr="required: runs_cmd"),
    case("runs-show-no-id", "runs", "show", code=USAGE, stderr="required: run_id"),
    case("runs-list-bad-status", "runs", "list", "--status", "bogus", code=USAGE, stderr="invalid choice: 'bogus'"),
    case("runs-list-limit-zero", "runs", "list", "--limit", "0", code=USAGE, stderr="--limit: must be in 1..1000"),
    case("runs-list-limit-word", "runs", "list", "--limit", "ten", code=USAGE, stderr="not an integer: 'ten'"),
    case("runs-start-args-not-json", "runs", "start", "scheduled_tick", "--args", "[oops", code=USAGE,
         stderr="--args is not valid JSON"),
    case("runs-start-args-not-a-list", "runs", "start", "scheduled_tick", "--args", "{}", code=USAGE,
         stderr="--args must be a JSON list"),
    case("runs-start-kwargs-not-an-object", "runs", "start", "scheduled_tick", "--kwargs", "[]", code=USAGE,
         stderr="--kwargs must be a JSON object"),
    case("runs-start-args-nan", "runs", "start", "scheduled_tick", "--args", "[NaN]", code=USAGE,
         stderr="--args is not valid JSON: NaN is not JSON data"),
    case("runs-start-args-huge-int", "runs", "start", "scheduled_tick", "--args", f"[{HUGE_INT}]", code=USAGE,
         stderr="--args is not valid JSON: an integer of 5000 digits is over the limit of 4300"),
    case("runs-start-kwargs-huge-int", "runs", "start", "scheduled_tick", "--kwargs", f'{{"n": {HUGE_INT}}}',
         code=USAGE, stderr="--kwargs is not valid JSON: an integer of 5000 digits"),
    case("runs-start-args-overflowing-number", "runs", "start", "scheduled_tick", "--args", "[1e400]", code=USAGE,
         stderr="--args is not valid JSON: the number 1e400 is out of range"),
    case("runs-start-args-deep", "runs", "start", "scheduled_tick", "--args", DEEP, code=USAGE,
         stderr="--args is not valid JSON: nested too deeply"),
    case("runs-start-kwargs-deep", "runs", "start", "scheduled_tick", "--kwargs", DEEP_OBJECT, code=USAGE,
         stderr="--kwargs is not valid JSON: nested too deeply"),
    case("hooks-resume-bad-json", "hooks", "resume", "{token}", "--data", "{bad", code=USAGE,
         stderr="--data is not valid JSON"),
    case("hooks-resume-nan", "hooks", "resume", "{token}", "--data", "NaN", code=USAGE,
         stderr="NaN is not JSON data"),
    case("hooks-resume-huge-int", "hooks", "resume", "{token}", "--data", HUGE_INT, code=USAGE,
         stderr="--data is not valid JSON: an integer of 5000 digits is over the limit of 4300"),
    case("hooks-resume-overflowing-number", "hooks", "resume", "{token}", "--data", "1e400", code=USAGE,
         stderr="--data is not valid JSON: the number 1e400 is out of range"),
    case("hooks-resume-deep", "hooks", "resume", "{token}", "--data", DEEP, code=USAGE,
         stderr="--data is not valid JSON: nested too deeply"),
    case("hooks-resume-deep-object", "hooks", "resume", "{token}", "--data", DEEP_OBJECT, code=USAGE,
         stderr="--data is not valid JSON: nested too deeply"),
    case("hooks-list-no-run", "hooks", "list", code=USAGE, stderr="--run"),
    case("dlq-list-limit-zero", "dlq", "list", "--limit", "0", code=USAGE, stderr="--limit: must be in 1..1000"),
    case("dlq-purge-extra-argument", "dlq", "purge", "everything", code=USAGE,
         stderr="unrecognized arguments: everything"),
    case("local-aws-bad-port", "local-aws", "--port", "99999", code=USAGE, stderr="--port: must be in 1..65535"),
    case("demo-negative-sleep", "demo", "--sleep", "-5", code=USAGE, stderr="must be non-negative, got '-5'"),
    case("demo-sleep-not-a-duration", "demo", "--sleep", "soon", code=USAGE, stderr="'soon' is not a duration"),
    case("worker-unknown-option", "worker", "--no-such-option", code=USAGE, stderr="No such option"),
    case("worker-bad-concurrency", "worker", "--concurrency", "abc", code=USAGE, stderr="'--concurrency'"),
    case("beat-unknown-option", "beat", "--no-such-option", code=USAGE, stderr="No such option"),
    case("schedules-create-no-timetable", "schedules", "create", "scheduled_tick", code=USAGE,
         stderr="one of the arguments --cron --every is required"),
    case("schedules-create-cron-and-every", "schedules", "create", "scheduled_tick", "--every", "60", "--cron",
         "* * * * *", code=USAGE, stderr="not allowed with argument"),
    case("schedules-create-bad-overlap", "schedules", "create", "scheduled_tick", "--every", "60", "--overlap",
         "sometimes", code=USAGE, stderr="invalid choice: 'sometimes'"),
    case("schedules-create-bad-start", "schedules", "create", "scheduled_tick", "--every", "60", "--start-at",
         "yesterday", code=USAGE, stderr="not an ISO 8601 time: 'yesterday'"),
    case("schedules-list-bad-state", "schedules", "list", "--state", "dead", code=USAGE,
         stderr="invalid choice: 'dead'"),
    case("schedules-backfill-bad-time", "schedules", "backfill", "{schedule}", "--start", "soon", "--end",
         "2030-01-01", code=USAGE, stderr="not an ISO 8601 time: 'soon'"),
    # refused operations: a WorkflowError, printed as "error: <Type>: <message>"
    case("runs-show-unknown", "runs", "show", GHOST, stderr=f"RunNotFound: no run with id '{GHOST}'"),
    case("runs-show-too-long", "runs", "show", "r" * 600, stderr="SerializationError: run_id must be"),
    case("runs-events-unknown", "runs", "events", GHOST, stderr="RunNotFound"),
    case("runs-cancel-unknown", "runs", "cancel", GHOST, stderr=f"RunNotFound: no run with id '{GHOST}'"),
    case("runs-start-unknown-workflow", "runs", "start", "no_such_workflow",
         stderr="UnknownWorkflow: unknown workflow 'no_such_workflow'"),
    case("runs-start-args-past-codec-depth", "runs", "start", "scheduled_tick", "--args", f"[{PAST_CODEC}]",
         stderr="SerializationError: arguments of workflow 'scheduled_tick' is nested too deeply"),
    case("runs-start-oversize", "runs", "start", "scheduled_tick", "--args", json.dumps(["x" * 2000]),
         env=SMALL_LIMIT, stderr="PayloadTooLarge"),
    case("runs-start-empty-key", "runs", "start", "scheduled_tick", "--args", '["t"]', "--key", "",
         stderr="idempotency_key must be a non-empty string"),
    case("runs-list-bad-cursor", "runs", "list", "--cursor", "garbage", stderr="invalid cursor 'garbage'"),
    case("runs-list-bad-cursor-with-status", "runs", "list", "--status", "pending", "--cursor", "garbage!",
         stderr="invalid cursor 'garbage!'"),
    case("runs-list-bad-setting", "runs", "list", env={"WORKFLOWS_MAX_PAYLOAD_BYTES": "lots"},
         stderr="ConfigurationError: invalid workflows setting: invalid literal for int() with base 10: 'lots'"),
    case("hooks-resume-unknown", "hooks", "resume", new_token(), stderr="HookNotFound"),
    case("hooks-resume-used", "hooks", "resume", "{used}", "--data", "2", stderr="HookAlreadyResumed"),
    case("hooks-resume-expired", "hooks", "resume", "{expired}", stderr="HookExpired: hook 'approve' expired"),
    case("hooks-resume-run-ended", "hooks", "resume", "{closed}", stderr="HookClosed"),
    case("hooks-resume-oversize", "hooks", "resume", "{token}", "--data", json.dumps("x" * 2000), env=SMALL_LIMIT,
         stderr="PayloadTooLarge: hook payload is 2002 bytes, over the limit of 1000 bytes"),
    case("hooks-resume-past-codec-depth", "hooks", "resume", "{token}", "--data", PAST_CODEC,
         stderr="SerializationError: hook payload is nested too deeply"),
    case("hooks-resume-bad-imports", "hooks", "resume", "{token}", env=BAD_IMPORTS,
         stderr="ConfigurationError: cannot import 'no_such_module' (named in WORKFLOWS_IMPORTS)"),
    case("hooks-list-unknown-run", "hooks", "list", "--run", GHOST, stderr="RunNotFound"),
    case("init-aws-bad-imports", "init-aws", env=BAD_IMPORTS, stderr="cannot import 'no_such_module'"),
    case("worker-bad-imports", "worker", env=BAD_IMPORTS, stderr="cannot import 'no_such_module'"),
    case("beat-bad-imports", "beat", env=BAD_IMPORTS, stderr="cannot import 'no_such_module'"),
    case("reconcile-bad-imports", "reconcile", env=BAD_IMPORTS, stderr="cannot import 'no_such_module'"),
    case("schedules-show-unknown", "schedules", "show", GHOST,
         stderr=f"ScheduleNotFound: no schedule with id '{GHOST}'"),
    case("schedules-create-unknown-workflow", "schedules", "create", "no_such_workflow", "--every", "60",
         stderr="UnknownWorkflow: unknown workflow 'no_such_workflow'"),
    case("schedules-create-bad-cron", "schedules", "create", "scheduled_tick", "--cron", "61 * * * *",
         stderr="InvalidSchedule: invalid cron expression '61 * * * *'"),
    case("schedules-create-bad-every", "schedules", "create", "scheduled_tick", "--every", "abc",
         stderr="InvalidSchedule: invalid every 'abc'"),
    case("schedules-create-args-not-json", "schedules", "create", "scheduled_tick", "--every", "60", "--args",
         "{bad", code=USAGE, stderr="--args is not valid JSON"),  # parsed as 'runs start' parses it
    case("schedules-create-kwargs-not-object", "schedules", "create", "scheduled_tick", "--every", "60",
         "--kwargs", "[]", code=USAGE, stderr="--kwargs must be a JSON object"),
    case("schedules-create-args-oversize", "schedules", "create", "scheduled_tick", "--every", "60", "--args",
         json.dumps(["x" * 2000]), env=SMALL_LIMIT, stderr="PayloadTooLarge"),
    case("schedules-create-id-taken", "schedules", "create", "scheduled_tick", "--every", "60", "--id",
         "{schedule}", stderr="ScheduleAlreadyExists"),
    case("schedules-list-limit-zero", "schedules", "list", "--limit", "0", stderr="limit must be an int in 1..1000"),
    case("schedules-pause-unknown", "schedules", "pause", GHOST, stderr="ScheduleNotFound"),
    case("schedules-resume-unknown", "schedules", "resume", GHOST, stderr="ScheduleNotFound"),
    case("schedules-delete-unknown", "schedules", "delete", GHOST, stderr="ScheduleNotFound"),
    case("schedules-trigger-unknown", "schedules", "trigger", GHOST, stderr="ScheduleNotFound"),
    case("schedules-backfill-unknown", "schedules", "backfill", GHOST, "--start", "2030-01-01", "--end",
         "2030-01-02", stderr="ScheduleNotFound"),
    case("schedules-backfill-reversed", "schedules", "backfill", "{schedule}", "--start", "2030-01-02", "--end",
         "2030-01-01", stderr="is after its end"),
    case("schedules-backfill-too-many", "schedules", "backfill", "{schedule}", "--start", "2000-01-01", "--end",
         "2030-01-01", stderr="more than 1000 fires"),
    case("schedules-list-bad-cursor", "schedules", "list", "--cursor", "garbage", stderr="cursor"),
    case("schedules-create-bad-imports", "schedules", "create", "scheduled_tick", "--every", "60", env=BAD_IMPORTS,
         stderr="no_such_module"),
]


def _quiet_run(store, status: str = "suspended") -> str:  # type: ignore[no-untyped-def]
    """A stored run that nothing resumes: suspended without a lease (or ended)."""
    run_id = f"bad-cli-{uuid.uuid4()}"
    store.create_run(get_engine().new_run_record(run_id, "approval", "[[],{}]"))
    assert store.suspend_run(run_id, Suspension(0, {"kind": "hook_wait"}), 0)
    if status != "suspended":
        store.finish_run(run_id, RunEnding(status, result="null"))
    return run_id


def _hook(store, run_id: str, expires_in: float = 600) -> str:  # type: ignore[no-untyped-def]
    token = new_token()
    record = HookRecord(token_hash=hash_token(token), run_id=run_id, pos=0, name="approve", status="pending",
                        created_at=time.time(), expires_at=time.time() + expires_in)
    store.create_hook(record, None, run_id, 0, json.dumps({"token": token, "hash": record.token_hash}))
    return token


def _snapshot(store, world: dict[str, str]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Everything a refused command could have written, read from the store."""
    schedules, cursor = [], None
    while True:
        page = store.list_schedules(limit=1000, cursor=cursor)
        schedules += [(s.schedule_id, s.revision, s.state, s.args, s.spec) for s in page]
        if not (cursor := page.next_cursor):
            break
    runs = [r.run_id for r in store.list_runs(workflow="scheduled_tick", limit=1000)]
    return {
        "runs": {r: store.get_run(r) for r in (world["run"], world["used_run"], world["expired_run"])},
        "hooks": {t: store.get_hook(hash_token(world[t])) for t in ("token", "used", "expired", "closed")},
        "signals": store.signals(world["run"], "go"),
        "schedules": sorted(schedules, key=str),
        "scheduled_runs": sorted(runs),
        "ghost": (store.find_run(GHOST), store.find_schedule(GHOST)),
    }


@pytest.fixture(scope="module")
def store(settings):  # type: ignore[no-untyped-def]
    """The session's store, for the module-scoped fixtures below."""
    return get_store(settings)


@pytest.fixture(scope="module")
def world(store) -> Any:  # type: ignore[no-untyped-def]
    """Prepared targets: a pending hook, a used one, an expired one, one of an ended run, a paused schedule."""
    run, used_run, expired_run = _quiet_run(store), _quiet_run(store), _quiet_run(store)
    ended_run = _quiet_run(store)
    closed = _hook(store, ended_run)  # a hook left pending by a run that then ended
    store.finish_run(ended_run, RunEnding("completed", result="null"))
    used = _hook(store, used_run)
    store.complete_hook(hash_token(used), '"first"')  # it wakes the run (one write): make it quiet again
    assert store.suspend_run(used_run, Suspension(0, {"kind": "hook_wait"}), store.get_run(used_run).wake_seq)
    schedule = create_schedule(schedule_flows.scheduled_tick, every="1h", args=["bad-cli"], paused=True,
                               schedule_id=f"bad-cli-{uuid.uuid4().hex[:10]}").schedule_id
    prepared = {"run": run, "used_run": used_run, "expired_run": expired_run, "token": _hook(store, run),
                "used": used, "expired": _hook(store, expired_run, expires_in=-1), "closed": closed,
                "schedule": schedule}
    yield prepared
    store.delete_schedule(schedule)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "workflows", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.fixture(scope="module")
def outcomes(world, store) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """Run every case at once (they are independent refusals); snapshot the store around them."""
    cases: list[Case] = [p.values[0] for p in CASES]
    before = _snapshot(store, world)

    def fill(c: Case) -> list[str]:
        return [world.get(a[1:-1], a) if a.startswith("{") and a.endswith("}") else a for a in c.argv]

    with ThreadPoolExecutor(4) as pool:
        done = dict(zip([c.id for c in cases], pool.map(lambda c: _run(fill(c), c.env), cases), strict=True))
    # Every case was refused; only "hooks-resume-run-ended" may tidy up: it closes the hook of the ended run.
    after = _snapshot(store, world)
    return {"done": done, "before": before, "after": after}


@pytest.mark.parametrize("case", CASES)
def test_cli_rejects(case: Case, outcomes) -> None:  # type: ignore[no-untyped-def]
    result = outcomes["done"][case.id]
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == case.code, (result.returncode, result.stderr)
    assert case.stderr in result.stderr, result.stderr
    if case.code == 1:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr


def test_cli_bad_input_leaves_stored_state_unchanged(world, outcomes) -> None:  # type: ignore[no-untyped-def]
    before, after = outcomes["before"], outcomes["after"]
    closed = after["hooks"].pop("closed")
    assert (closed.status, closed.payload, closed.completed_at) == ("closed", None, None)
    before["hooks"].pop("closed")
    assert after == before
    assert after["hooks"]["used"].payload == '"first"' and after["hooks"]["token"].status == "pending"
    assert after["ghost"] == (None, None)
