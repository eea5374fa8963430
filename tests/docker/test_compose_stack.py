"""The compose stack, built and run with Docker: ``python -m pytest -m docker`` (about 5 minutes).

One test, in the order a new user goes: build the image, ``up``, run the order workflow with
the documented ``docker compose run --rm cli`` commands, take the approval example's hook link
and resume it over the published port, scale to three workers and see them share a burst of 30
runs, ``docker kill`` the worker in the middle of a step and see the run complete with the step
recorded once, roll new code out to worker, beat and hooks with the emulator untouched, stop
(every container exits 0 on SIGTERM) and ``down`` (no container, no network left).

It runs no command with ``WORKFLOWS_HOOK_SECRET`` set (none needs it), publishes the host ports
on free ones (``LOCAL_AWS_PORT``, ``HOOKS_PORT``), and adds an override file that mounts this
directory into the containers as ``dockertests`` (``stack_flows``: a burst and a slow workflow;
``stack_probe``: client calls run in the ``cli`` container) and shortens the lease and the
visibility timeout, so the killed step's run is recovered in seconds rather than minutes.
Skipped when no Docker engine (with compose v2) answers. The phases' times are printed (``-s``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.waiting import wait_for
from workflows.local.server import free_port

pytestmark = [pytest.mark.docker, pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
IMAGE = "celery-durable-workflows:local"
MAX_IMAGE_BYTES = 350_000_000
TEST_ENV = {  # the same on every process that reads the settings
    "WORKFLOWS_IMPORTS": "examples.order,examples.approval,dockertests.stack_flows",
    "WORKFLOWS_LEASE_SECONDS": "6",
    "WORKFLOWS_VISIBILITY_TIMEOUT": "20",
    "WORKFLOWS_SWEEP_INTERVAL": "1",
}


def _docker_answers() -> str | None:
    """None when a Docker engine and compose v2 answer; else why not."""
    if shutil.which("docker") is None:
        return "no docker command"
    for argv in (["docker", "info", "--format", "{{.ServerVersion}}"], ["docker", "compose", "version"]):
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{' '.join(argv)}: {exc}"
        if done.returncode != 0:
            return f"{' '.join(argv)}: {(done.stderr or done.stdout).strip()[:200]}"
    return None


class Stack:
    """``docker compose`` on the repository's file plus the test's override, as one project."""

    def __init__(self, project: str, override: Path, env: dict[str, str]) -> None:
        self.project = project
        self.files = ["-f", str(ROOT / "docker-compose.yml"), "-f", str(override)]
        self.env = env
        self.times: dict[str, float] = {}

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["docker", "compose", "-p", self.project, *self.files, *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"docker compose {' '.join(args)} exited {done.returncode}:\n"
                                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def timed(self, phase: str, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        started = time.monotonic()
        done = self.compose(*args, timeout=timeout)
        self.times[phase] = time.monotonic() - started
        print(f"{phase}: {self.times[phase]:.1f} s")
        return done

    def cli(self, *args: str) -> str:
        """A documented command: ``docker compose run --rm cli ARGS``; its standard output."""
        return self.compose("run", "--rm", "cli", *args).stdout.strip()

    def probe(self, *args: str) -> Any:
        done = self.compose("run", "--rm", "--entrypoint", "python", "cli", "-m", "dockertests.stack_probe", *args)
        return json.loads(done.stdout.strip().splitlines()[-1])

    def ids(self, service: str, all_: bool = False) -> list[str]:
        return self.compose("ps", *(["-a"] if all_ else []), "-q", service).stdout.split()

    def leftovers(self) -> tuple[list[str], list[str]]:
        label = f"label=com.docker.compose.project={self.project}"
        containers = _docker("ps", "-a", "-q", "--filter", label).split()
        networks = _docker("network", "ls", "-q", "--filter", label).split()
        return containers, networks


def _docker(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return done.stdout


def _inspect(container: str, template: str) -> str:
    return _docker("inspect", "-f", template, container).strip()


def _override(path: Path) -> Path:
    mount = f"{HERE}:/app/dockertests:ro"
    services: dict[str, Any] = {name: {"environment": TEST_ENV, "volumes": [mount]}
                                for name in ("init", "worker", "beat", "hooks", "cli")}
    path.write_text(yaml.safe_dump({"services": services}))
    return path


@pytest.fixture()
def stack(tmp_path: Path) -> Iterator[Stack]:
    reason = _docker_answers()
    if reason is not None:
        pytest.skip(f"no Docker engine answers ({reason}); the compose stack's test needs one")
    env = {k: v for k, v in os.environ.items() if k != "WORKFLOWS_HOOK_SECRET" and not k.startswith("COMPOSE_")}
    env.update(LOCAL_AWS_PORT=str(free_port()), HOOKS_PORT=str(free_port()))
    stack = Stack(f"cdwtest{uuid.uuid4().hex[:8]}", _override(tmp_path / "override.yml"), env)
    try:
        yield stack
    finally:
        if stack.ids("aws", all_=True):
            logs = stack.compose("logs", "--no-color", "--tail", "60", check=False).stdout
            print(f"--- last lines of the stack's logs ---\n{logs[-20000:]}")
        stack.compose("down", "--remove-orphans", "--timeout", "5", check=False)


def test_compose_stack_builds_starts_runs_survives_a_kill_and_goes_down(stack: Stack) -> None:
    # Build: the one image, built once, and slim.
    stack.timed("build", "build")
    image_id = _inspect(IMAGE, "{{.Id}}")
    size = int(_inspect(IMAGE, "{{.Size}}"))
    print(f"image: {size / 1e6:.0f} MB")
    assert size <= MAX_IMAGE_BYTES, f"the image is {size / 1e6:.0f} MB"
    config = yaml.safe_load(stack.compose("config").stdout)
    assert [name for name, service in config["services"].items() if "build" in service] == ["aws"]

    # Up: the emulator healthy, init-aws done, worker, beat and hooks running; no secret given.
    stack.timed("up", "up", "-d")
    aws = stack.ids("aws")
    assert len(aws) == 1
    assert {_inspect(c, "{{.Image}}") for s in ("aws", "worker", "beat", "hooks") for c in stack.ids(s)} == {image_id}
    assert _inspect(stack.ids("init", all_=True)[0], "{{.State.ExitCode}}") == "0"

    # The order workflow, with the commands of docker-compose.yml's header.
    started = time.monotonic()
    order = stack.cli("runs", "start", "order", "--args", '["o-docker", 1999]')
    assert stack.probe("wait", order) == {"status": "completed", "result": {
        "receipt": "rcpt-o-docker-1999", "shipment": "shipped o-docker from east, west"}}
    assert "status    completed" in stack.cli("runs", "show", order)
    print(f"order run: {time.monotonic() - started:.1f} s")

    # The approval example: its link names the published hook port; resumed over it.
    approval = stack.cli("runs", "start", "expense_approval", "--args", '["exp-docker", 1250, "ana@example.com"]')
    link = stack.probe("link", approval)
    assert link.startswith(f"http://127.0.0.1:{stack.env['HOOKS_PORT']}/hooks/wh_"), link
    request = urllib.request.Request(link, data=json.dumps({"approved": True, "by": "ana"}).encode(),
                                     headers={"content-type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 202
    assert stack.probe("wait", approval) == {"status": "completed", "result": "expense exp-docker approved by ana"}

    # Restarting the other services, and `up` again with three workers, leave the emulator
    # (same container) and its state alone.
    stack.compose("restart", "worker", "beat", "hooks")
    stack.compose("up", "-d", "--scale", "worker=3")
    assert stack.ids("aws") == aws
    assert "status    completed" in stack.cli("runs", "show", order)

    # Three workers share a burst of 30 runs.
    workers = stack.ids("worker")
    assert len(workers) == 3
    hostnames = {_inspect(c, "{{.Config.Hostname}}"): c for c in workers}
    started = time.monotonic()
    results = stack.probe("burst", "30", "0.5")
    print(f"burst of 30 runs: {time.monotonic() - started:.1f} s")
    assert sorted(r["i"] for r in results) == list(range(30))
    ran = {h: sum(1 for r in results if r["worker"] == h) for h in hostnames}
    assert set(r["worker"] for r in results) == set(hostnames) and min(ran.values()) >= 1, ran

    # A worker killed (SIGKILL) in the middle of a step: the run completes, the step recorded once.
    tag = uuid.uuid4().hex[:10]
    slow = stack.cli("runs", "start", "slow_run", "--args", json.dumps([tag, 15]))

    def starts() -> dict[str, int]:
        marker = f"slow step {tag} started"
        counts = {}
        for container in stack.ids("worker", all_=True):
            logs = subprocess.run(["docker", "logs", container], capture_output=True, text=True, timeout=60)
            counts[container] = (logs.stdout + logs.stderr).count(marker)
        return counts

    victim = wait_for(lambda: next((c for c, n in starts().items() if n), None), timeout=180, poll=0.5,
                      what="the slow step starting on a worker")
    _docker("kill", victim)
    started = time.monotonic()
    assert stack.probe("wait", slow) == {"status": "completed", "result": f"slept {tag}"}
    print(f"killed worker's run completed {time.monotonic() - started:.1f} s after the kill")
    events = json.loads(stack.cli("runs", "events", slow, "--json"))
    outcomes = [e for e in events if e["type"].startswith("step_") and e["name"] == "slow"]
    assert [e["type"] for e in outcomes] == ["step_completed"], outcomes
    assert [e["type"] for e in events if e["type"].startswith("run_")] == ["run_started", "run_completed"]
    assert sum(starts().values()) >= 2  # at least once executed, exactly once recorded

    # New code for worker, beat and hooks (the documented rebuild; here a new image id under the
    # same tag): they are recreated on it, the emulator is not, and its state stays.
    new_id = _new_image_id(image_id)
    try:
        stack.compose("up", "-d", "--no-deps", "worker", "beat", "hooks")
        assert stack.ids("aws") == aws
        assert {_inspect(c, "{{.Image}}") for s in ("worker", "beat", "hooks") for c in stack.ids(s)} == {new_id}
        assert _inspect(aws[0], "{{.Image}}") == image_id
        assert "status    completed" in stack.cli("runs", "show", slow)
        again = stack.cli("runs", "start", "order", "--args", '["o-docker-2", 1]')
        assert stack.probe("wait", again)["status"] == "completed"

        # Stop: SIGTERM, and every container exits 0; none waits out its grace period.
        running = [c for s in ("aws", "worker", "beat", "hooks") for c in stack.ids(s)]
        stack.timed("stop", "stop")
        codes = {_inspect(c, "{{.Name}}"): _inspect(c, "{{.State.ExitCode}}") for c in running}
        assert set(codes.values()) == {"0"}, codes
        assert stack.times["stop"] < 30

        # Down: nothing left.
        stack.timed("down", "down")
        assert stack.leftovers() == ([], [])
    finally:
        stack.compose("down", "--timeout", "5", check=False)  # frees the new image
        _docker("tag", image_id, IMAGE)
        subprocess.run(["docker", "rmi", new_id], capture_output=True, timeout=120)


def _new_image_id(image_id: str) -> str:
    """Tag, as IMAGE, a new image with the same content and a new id (what a rebuild with new code does)."""
    done = subprocess.run(["docker", "build", "-q", "-t", IMAGE, "-"], input=f"FROM {IMAGE}\nLABEL test=rebuilt\n",
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    new_id = _inspect(IMAGE, "{{.Id}}")
    assert new_id != image_id
    return new_id
