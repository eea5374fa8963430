"""One soak, phase by phase: set up, load under chaos, drain, check.

The duration runs from the start to the check: set-up, then waves of runs while the front
injects faults and the chaos kills processes, then a drain (no new runs, no kills, faults still
on) during which runs finish; then the faults stop, stragglers get a short grace, and the check
reads the stores, the ledger and the dead-letter queue.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from ..settings import Settings, configure
from .chaos import Chaos
from .config import SoakConfig
from .executions import Evidence, LedgerFindings, check_delayed, check_limits, check_recorded, check_repeats
from .interact import Entry
from .ledger import read_ledger, true_time
from .outcomes import Look, check_batch, check_entries, check_ticks, unsettled
from .report import Report
from .stack import ROOT, Stack
from .tasklog import task_ends
from .workload import SLEEPERS, Workload

GRACE = 15.0  # the last seconds of the drain, without faults, for runs still going
PROGRESS = 10.0  # seconds since a step body last wrote to the ledger for the drain to count as going on
BACKLOG = 24  # runs still going past which a wave is skipped: a slow machine gets fewer runs, not a backlog
EVIDENCE_RUNS = 10


def run_soak(config: SoakConfig, command: str) -> Report:
    """Run one soak and return its report (its directory is removed when it passed, unless kept)."""
    began = time.monotonic()
    directory = Path(tempfile.mkdtemp(prefix=f"workflows-soak-{config.seed}-"))
    stack = Stack.create(config, directory)
    report = Report(config.seed, command, directory=str(directory))
    try:
        stack.up()
        report.timings["set-up"] = time.monotonic() - began
        assert stack.front is not None
        os.environ.update(stack.settings_env(stack.front.url))
        configure(Settings.from_env())
        workload = load(stack, config, began, report)
        drain(stack, workload, began + config.duration)
        report.timings["drain"] = time.monotonic() - began - sum(report.timings.values())
        check(stack, workload, report)
        report.timings["check"] = time.monotonic() - began - sum(report.timings.values())
    finally:
        stack.fleet.stop_all()
        if stack.front is not None:
            stack.front.stop()
        configure(None)
    if report.passed and not config.keep:
        shutil.rmtree(directory, ignore_errors=True)
        report.directory = ""
    return report


def load(stack: Stack, config: SoakConfig, began: float, report: Report) -> Workload:
    """Waves of runs while the faults and the kills go on, until the drain."""
    stack.plan.enabled = True
    chaos = Chaos(stack.fleet, config.seed, config.kill_every)
    chaos.start()
    workload = Workload(config, stack.web_url, stack.directory)
    loaded, look, going, seen = time.monotonic(), Look(), list[Entry](), 0
    try:
        workload.begin()
        end, next_wave = began + config.duration - config.drain, time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() >= next_wave:
                going, seen = unsettled(look, going + workload.entries[seen:], end), len(workload.entries)
                if len(going) <= BACKLOG:
                    workload.wave()
                else:
                    report.skipped_waves += 1
                next_wave += config.wave_every
            time.sleep(0.2)
    finally:
        chaos.stop()
    report.timings["load"] = time.monotonic() - loaded
    return workload


def drain(stack: Stack, workload: Workload, until: float) -> None:
    """Let the runs finish: faults on until ``GRACE`` seconds before ``until``, then off; past
    ``until``, on for at most half a drain more while step bodies still run (a slow machine)."""
    workload.finish(timeout=max(5.0, until - GRACE - time.monotonic()))
    look, going = Look(), list(workload.entries)
    for faults_end in (until - GRACE, until):
        while time.monotonic() < faults_end and (going := unsettled(look, going, faults_end)):
            stack.fleet.reap()
            time.sleep(1.0)
        stack.plan.enabled = False
    cap = until + stack.config.drain / 2
    while going and time.monotonic() < cap and time.time() - ledger_written(stack) < PROGRESS:
        time.sleep(2.0)
        going = unsettled(look, going, cap)
    time.sleep(2.0)  # an abandoned child sleeps 2 s after its parent may have ended
    stack.fleet.reap()
    stack.fleet.stop_all(server=False)  # the check reads the stores alone


def ledger_written(stack: Stack) -> float:
    """When a step body last wrote to the ledger (0 if none has)."""
    return stack.ledger.stat().st_mtime if stack.ledger.exists() else 0.0


def check(stack: Stack, workload: Workload, report: Report) -> None:
    """Read everything and fill the report."""
    config, fleet, plan = stack.config, stack.fleet, stack.plan
    look = Look(settled=True)
    executions = read_ledger(stack.ledger)
    look.prefetch({e.run for e in executions} | {e.run_id for e in workload.entries})
    report.violations += check_entries(look, workload.entries, config.fan_out)
    report.ticks, problems = check_ticks(look)
    report.violations += problems + check_batch(workload.batch_id, SLEEPERS)
    ledger = LedgerFindings(executions=len(executions))
    lease = config.lease_seconds
    members = list(fleet.members.values())
    check_repeats(executions, Evidence(look.runs, fleet.killed_groups, plan.lost_sends, task_ends(members), lease),
                  ledger)
    check_recorded(executions, look.runs, ledger)
    spread = 2 * config.max_skew + 0.5
    check_limits(executions, fleet.killed_groups, spread, lease, ledger, true_time())
    check_delayed(executions, {e.run_id: e.start_at for e in workload.entries if e.start_at is not None}, spread,
                  ledger)
    report.ledger = ledger
    report.violations += ledger.violations
    report.states = Counter((look.kinds.get(run_id, "unlisted"), record.status) for run_id, record in look.runs.items())
    report.recoveries = sum(record.recoveries for record in look.runs.values())
    report.faults, report.faults_by_service, report.requests = plan.by_kind(), plan.by_service(), plan.requests
    report.kills = Counter(kill.role for kill in fleet.kills)
    report.skews = {m.name: m.skew for m in fleet.members.values() if m.skew}
    report.exits = [f"{e.name} (pid {e.pid}, exit code {e.code})" for e in fleet.exits]
    report.violations += [("", f"{text}: only the soak's kills may stop a process") for text in report.exits]
    report.driver_errors = workload.errors
    report.dead_letters = dead_letters()
    report.violations += [("", f"dead letter: {letter[:300]}") for letter in report.dead_letters]
    report.evidence = gather_evidence(stack, [run_id for run_id, _ in report.violations if run_id])


def dead_letters() -> list[str]:
    """What ``workflows dlq list`` shows (its own function, run here), one letter a line."""
    from ..celery.deadletter import list_dead_letters

    return [json.dumps(letter, default=str) for letter in list_dead_letters(100)]


def workflows_cli(stack: Stack, *args: str) -> str:
    """Run a ``workflows`` command against the server directly (no faults); its output."""
    done = subprocess.run([sys.executable, "-m", "workflows", *args], env=stack.process_env(stack.aws_url),
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def gather_evidence(stack: Stack, run_ids: list[str]) -> dict[str, str]:
    """``workflows runs show`` of the first violating runs, saved beside the ledger."""
    folder = stack.directory / "evidence"
    out = {}
    for run_id in list(dict.fromkeys(run_ids))[:EVIDENCE_RUNS]:
        folder.mkdir(exist_ok=True)
        path = folder / f"{run_id}.txt"
        path.write_text(workflows_cli(stack, "runs", "show", run_id))
        out[run_id] = str(path)
    return out
