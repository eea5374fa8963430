"""The soak's report: runs by end state, faults by kind, kills by role, repeats by excuse, violations."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from .config import FAULT_KINDS, KILLED_ROLES
from .executions import EXCUSES, LedgerFindings

Violation = tuple[str, str]


@dataclass
class Report:
    """Everything the soak measured and found."""

    seed: int
    command: str
    states: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, status)
    faults: dict[str, int] = field(default_factory=dict)
    faults_by_service: dict[str, dict[str, int]] = field(default_factory=dict)
    requests: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    exits: list[str] = field(default_factory=list)
    skews: dict[str, float] = field(default_factory=dict)
    ledger: LedgerFindings = field(default_factory=LedgerFindings)
    recoveries: int = 0
    ticks: int = 0
    skipped_waves: int = 0
    dead_letters: list[str] = field(default_factory=list)
    driver_errors: list[str] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    evidence: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    directory: str = ""

    @property
    def passed(self) -> bool:
        """No violation."""
        return not self.violations

    def write(self, out: TextIO) -> None:
        """Print the report."""
        line = lambda text="": print(text, file=out)  # noqa: E731 - a local shorthand
        line(f"soak seed {self.seed}: {'PASSED' if self.passed else 'FAILED'}")
        line(f"  reproduce: {self.command}")
        line("  phases (s): " + ", ".join(f"{k} {v:.0f}" for k, v in self.timings.items()))
        line(f"runs by end state ({sum(self.states.values())} runs, {self.ticks} of them schedule fires; "
             f"{self.skipped_waves} waves skipped while the runs before were still going):")
        kinds = sorted({kind for kind, _ in self.states})
        for kind in kinds:
            by = {status: n for (k, status), n in sorted(self.states.items()) if k == kind}
            line(f"  {kind:16} " + ", ".join(f"{status} {n}" for status, n in by.items()))
        line(f"faults injected ({sum(self.faults.values())} of {self.requests} AWS requests):")
        line("  " + ", ".join(f"{kind} {self.faults.get(kind, 0)}" for kind in FAULT_KINDS))
        for service, kinds_n in self.faults_by_service.items():
            line(f"    {service:9} " + ", ".join(f"{k} {n}" for k, n in kinds_n.items()))
        line("kills by role: " + ", ".join(f"{role} {self.kills.get(role, 0)}" for role in KILLED_ROLES))
        line("clock skews (s): " + ", ".join(f"{name} {skew:+.2f}" for name, skew in self.skews.items()))
        line(f"step executions: {self.ledger.executions}; recoveries recorded on runs: {self.recoveries}")
        line("duplicates by excuse: " + ", ".join(f"{e} {self.ledger.repeats.get(e, 0)}" for e in EXCUSES))
        line(f"limits: at most {self.ledger.most_at_once} limited bodies at once; rate: {self.ledger.most_in_window}")
        line(f"dead letters: {len(self.dead_letters)}")
        for text in self.exits:
            line(f"  process exited by itself: {text}")
        for text in self.driver_errors[:20]:
            line(f"  driver: {text}")
        line(f"violations: {len(self.violations)}")
        for run_id, what in self.violations[:50]:
            where = f" (history: {self.evidence[run_id]})" if run_id in self.evidence else ""
            line(f"  {run_id or '-'}: {what}{where}")
        if len(self.violations) > 50:
            line(f"  ... and {len(self.violations) - 50} more")
        if self.directory:
            line(f"logs, ledger and manifest: {self.directory}")
