"""Session fixtures: a real moto server over HTTP (fresh table/queue prefix per session), and
real `workflows worker` / `workflows beat` processes against it."""

from __future__ import annotations

import functools
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests.sim.sweep import TEST_ID as SWEEP_TEST
from tests.sim.sweep import Sweep
from tests.waiting import wait_for
from workflows.settings import Settings, configure

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
SEED_SWEEP = pytest.StashKey[Sweep]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the simulator's seed sweep now when the session runs its test (``tests/sim/sweep.py``)."""
    if any(item.nodeid == SWEEP_TEST for item in session.items):
        session.config.stash[SEED_SWEEP] = Sweep()


def pytest_sessionfinish(session: pytest.Session) -> None:
    sweep = session.config.stash.get(SEED_SWEEP, None)
    if sweep is not None:
        sweep.stop()


@pytest.fixture(scope="session")
def seed_sweep(request: pytest.FixtureRequest) -> Sweep | None:
    """The sweep started with the session, if it was."""
    return request.config.stash.get(SEED_SWEEP, None)


def _need(module: str) -> None:
    try:
        __import__(module)
    except ImportError:
        if IN_CI:
            pytest.fail(f"{module} is required in CI (pip install -e '.[dev]')")
        pytest.skip(f"SKIPPED LOUDLY: {module} is not installed; these tests need a local AWS server")


@pytest.fixture(scope="session", autouse=True)
def one_botocore_loader() -> Iterator[None]:
    """Every botocore session of the test process shares one data loader, so botocore's own
    JSON files (service models, endpoints) are parsed once. PynamoDB makes a botocore session
    per table model and thread, and each parsed the DynamoDB model again: about 1.5 s of CPU for
    every set of tables or store a test builds. Nothing else changes: requests still go over
    HTTP to the moto server, through the same clients."""
    import botocore.session

    original = botocore.session.create_loader
    botocore.session.create_loader = functools.lru_cache(maxsize=None)(original)
    try:
        yield
    finally:
        botocore.session.create_loader = original


@pytest.fixture(scope="session")
def aws_env() -> Iterator[dict[str, str]]:
    """Start the local AWS server once and point this process (and its children) at it."""
    _need("moto")
    from workflows.local.server import LocalAWS

    server = LocalAWS().start()
    session = uuid.uuid4().hex[:8]
    env = {**server.environ(), "WORKFLOWS_TABLE_PREFIX": f"t{session}-", "WORKFLOWS_QUEUE_PREFIX": f"q{session}-",
           "WORKFLOWS_SWEEP_INTERVAL": "0.25", "WORKFLOWS_LEASE_SECONDS": "6", "WORKFLOWS_VISIBILITY_TIMEOUT": "20",
           "WORKFLOWS_POLL_WAIT_SECONDS": "1", "WORKFLOWS_HOOK_SECRET": secrets.token_urlsafe(32),
           "WORKFLOWS_DEFER_SECONDS": "1",
           "WORKFLOWS_IMPORTS": "tests.e2e.flows,tests.e2e.hook_flows,tests.e2e.schedule_flows,"
                                "tests.e2e.dashboard_flows,tests.e2e.async_flows,tests.e2e.flow_limit_flows,"
                                "tests.e2e.version_flows,tests.e2e.run_gate_flows,tests.e2e.name_flows,"
                                "tests.e2e.priority_flows,tests.e2e.event_flows,tests.e2e.det_flows,"
                                "tests.e2e.failure_flows,tests.e2e.first_flows,"
                                "tests.e2e.delay_flows,tests.e2e.batch_flows,tests.e2e.update_flows"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    configure(Settings.from_env())
    try:
        yield env
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        configure(None)
        server.stop()


@pytest.fixture(scope="session")
def settings(aws_env: dict[str, str]) -> Settings:
    """Settings of the session, with every table and queue created."""
    from persistence.provision import create_queues, create_tables

    current = Settings.from_env()
    create_tables(current)
    create_queues(current, ["payments"])
    return current


@pytest.fixture()
def store(settings: Settings):  # type: ignore[no-untyped-def]
    """The store of the session."""
    from persistence import get_store

    return get_store(settings)


ROOT = Path(__file__).resolve().parents[1]


class Proc:
    """A `workflows` subprocess (worker or beat) killable by its own PID."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.handle = open(log, "ab")
        self.popen = subprocess.Popen([sys.executable, "-m", "workflows", *args], cwd=ROOT, env=env,
                                      stdout=self.handle, stderr=subprocess.STDOUT)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, sig)
        try:
            self.popen.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGKILL)
            self.popen.wait()
        self.handle.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until a worker polls its queues (Celery prints "ready."): a message sent before
        that waits in its queue while the worker boots, and may outlive its run's lease."""
        wait_for(lambda: "ready." in self.output() or self.popen.poll() is not None, timeout,
                 what="the worker is ready")
        assert self.popen.poll() is None, self.output()


@pytest.fixture(scope="session")
def proc_env(settings, aws_env) -> dict[str, str]:  # type: ignore[no-untyped-def]
    counters = tempfile.mkdtemp(prefix="wf-counters-")
    os.environ["WORKFLOWS_TEST_COUNTERS"] = counters
    return {**os.environ, **aws_env, "WORKFLOWS_TEST_COUNTERS": counters, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="session")
def spawn(proc_env, tmp_path_factory) -> Iterator:  # type: ignore[no-untyped-def]
    """Start `workflows worker` / `workflows beat` processes; all are stopped at session end."""
    procs: list[Proc] = []
    logs = tmp_path_factory.mktemp("procs")

    def start(kind: str, *extra: str, env: dict[str, str] | None = None) -> Proc:
        args = [kind, *extra] if kind == "beat" else [kind, "--loglevel", "INFO", "-c", "4", *extra]
        proc = Proc(args, {**proc_env, **(env or {})}, logs / f"{kind}-{len(procs)}.log")
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.kill(signal.SIGTERM)


@pytest.fixture(scope="session")
def cluster(spawn):  # type: ignore[no-untyped-def]
    """One worker and one beat for the whole session."""
    # Queue "crashy" is left to the workers that the crash tests start and kill.
    worker = spawn("worker", "-Q", "workflows,steps,payments")
    beat = spawn("beat")
    worker.wait_ready()
    assert beat.popen.poll() is None, beat.output()
    return {"worker": worker, "beat": beat}
