"""The soak's stack: the environment of its processes, and bringing them up in order.

The local AWS server listens on a port of its own; every other process (and the soak's driver)
reaches it only through the fault front. One process per role runs with a skewed clock: the
second threads worker, beat and the hook endpoint (``skew/sitecustomize.py``).
"""

from __future__ import annotations

import functools
import os
import random
import secrets
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import workflows

from ..celery.config import RESUME_QUEUE, STEP_QUEUE
from ..local.server import free_port
from .config import SoakConfig
from .faults import FaultPlan
from .fleet import Fleet, Member, answers, wait_until
from .flows import SENT_QUEUE
from .ledger import LEDGER_ENV
from .proxy import FaultFront

ROOT = Path(workflows.__file__).resolve().parents[1]
SKEW_DIR = Path(__file__).resolve().parent / "skew"
SKEW_ENV = "WORKFLOWS_SOAK_CLOCK_SKEW"
PREFIX = "soak-"


def endpoints(url: str) -> dict[str, str]:
    """The AWS variables that point every SDK client of a process at ``url``."""
    return {"AWS_ENDPOINT_URL": url, "AWS_ENDPOINT_URL_DYNAMODB": url, "AWS_ENDPOINT_URL_SQS": url,
            "AWS_ENDPOINT_URL_S3": url, "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "soak",
            "AWS_SECRET_ACCESS_KEY": "soak"}


@dataclass
class Stack:
    """The processes of one soak and what they share."""

    config: SoakConfig
    directory: Path
    fleet: Fleet
    plan: FaultPlan
    aws_url: str = ""
    front: FaultFront | None = None
    web_url: str = ""

    @classmethod
    def create(cls, config: SoakConfig, directory: Path) -> Stack:
        """A stack whose processes are not started yet."""
        (directory / "logs").mkdir(parents=True, exist_ok=True)
        return cls(config, directory, Fleet(ROOT), FaultPlan(config.seed, config.rates))

    @property
    def ledger(self) -> Path:
        """The ledger's file."""
        return self.directory / "ledger.jsonl"

    def settings_env(self, url: str) -> dict[str, str]:
        """The workflows settings every process shares, with AWS at ``url``."""
        return {**endpoints(url), "WORKFLOWS_TABLE_PREFIX": PREFIX, "WORKFLOWS_QUEUE_PREFIX": PREFIX,
                "WORKFLOWS_IMPORTS": "workflows.soak.flows", "WORKFLOWS_SWEEP_INTERVAL": "0.5",
                "WORKFLOWS_LEASE_SECONDS": f"{self.config.lease_seconds:g}", "WORKFLOWS_VISIBILITY_TIMEOUT": "20",
                "WORKFLOWS_POLL_WAIT_SECONDS": "1", "WORKFLOWS_DEFER_SECONDS": "1",
                "WORKFLOWS_PAYLOAD_THRESHOLD_BYTES": "8192", LEDGER_ENV: str(self.ledger)}

    def process_env(self, url: str, skew: float = 0.0) -> dict[str, str]:
        """A child process's environment: this one's, minus AWS and workflows settings, plus the soak's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORKFLOWS_"))}
        env.update(self.settings_env(url), PYTHONUNBUFFERED="1", WORKFLOWS_HOOK_SECRET=self.hook_secret,
                   WORKFLOWS_DASHBOARD_TOKEN=self.dashboard_token)
        path = [str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        if skew:
            path.insert(0, str(SKEW_DIR))
            env[SKEW_ENV] = f"{skew:.3f}"
        env["PYTHONPATH"] = os.pathsep.join(path)
        return env

    def __post_init__(self) -> None:
        self.hook_secret = secrets.token_urlsafe(32)
        self.dashboard_token = secrets.token_urlsafe(24)

    def up(self) -> None:
        """Start the server, create the tables and queues, start the front and every process."""
        port = free_port()
        self.aws_url = f"http://127.0.0.1:{port}"
        aws = self.fleet.start(self.fleet.add(self._member("aws", "aws", ["local-aws", "--port", str(port)])))
        wait_until(lambda: answers(self.aws_url), 60, "the local AWS server", aws)
        done = subprocess.run([sys.executable, "-m", "workflows", "init-aws"], env=self.process_env(self.aws_url),
                              cwd=ROOT, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"init-aws failed:\n{done.stdout}\n{done.stderr}")
        self.front = FaultFront(self.aws_url, self.plan).start()
        for member in self.members(random.Random(f"skew-{self.config.seed}")):
            self.fleet.start(self.fleet.add(member))
        web = self.fleet.members["web"]
        wait_until(lambda: answers(f"{self.web_url}/healthz"), 90, "the hook endpoint", web)
        for member in self.fleet.members.values():
            if member.role.startswith("worker"):
                wait_until(functools.partial(_ready, member), 120, f"{member.name} to be ready", member)

    def _member(self, name: str, role: str, args: list[str], skew: float = 0.0) -> Member:
        """A member reaching AWS through the front (the server itself: directly)."""
        url = self.front.url if self.front is not None else self.aws_url
        return Member(name, role, args, self.process_env(url, skew), self.directory / "logs" / f"{name}.log", skew)

    def members(self, rng: random.Random) -> list[Member]:
        """The web endpoint, beat and the workers, one per role with a skewed clock."""
        def skew() -> float:
            return rng.choice((-1, 1)) * rng.uniform(min(0.5, self.config.max_skew), self.config.max_skew)

        web_port = free_port()
        self.web_url = f"http://127.0.0.1:{web_port}"
        out = [self._member("web", "web", ["web", "--host", "127.0.0.1", "--port", str(web_port)], skew=skew()),
               self._member("beat", "beat", ["beat", "--loglevel", "INFO"], skew=skew())]
        all_queues = f"{RESUME_QUEUE},{STEP_QUEUE},{SENT_QUEUE}"
        others_sent = self.config.threads_workers > 1 or self.config.prefork_workers > 0
        worker_skew = skew()
        for i in range(1, self.config.threads_workers + 1):
            queues = f"{RESUME_QUEUE},{STEP_QUEUE}" if i == 1 and others_sent else all_queues
            member = self._member(f"threads-{i}", "worker-threads", _worker_args(f"threads-{i}", "threads", 4, queues),
                                  skew=worker_skew if i == 2 else 0.0)
            if i == 2:
                member.env["WORKFLOWS_IN_PLACE_SECONDS"] = "0"  # every step of its resumes goes as a message
            out.append(member)
        for i in range(1, self.config.prefork_workers + 1):
            out.append(self._member(f"prefork-{i}", "worker-prefork",
                                    _worker_args(f"prefork-{i}", "prefork", 2, all_queues),
                                    skew=worker_skew if self.config.threads_workers < 2 and i == 1 else 0.0))
        return out


def _ready(member: Member) -> bool:
    """Whether a worker polls its queues (Celery prints "ready.")."""
    return "ready." in member.output()


def _worker_args(name: str, pool: str, concurrency: int, queues: str) -> list[str]:
    return ["worker", "--pool", pool, "-c", str(concurrency), "-n", f"{name}@%h", "-Q", queues, "--loglevel", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]
