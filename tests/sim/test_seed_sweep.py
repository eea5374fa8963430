"""The deterministic simulator's sweep: thousands of seeded scenarios with faults run clean.

It runs the seeds in a pool of two processes, so it carries the ``e2e`` marker: the fast loop
(``-m "not e2e and not crash"``) leaves it to the full suite. In the full suite it runs beside
the other tests from the start (``tests/sim/sweep.py``); this test waits for its report.
"""

from __future__ import annotations

import re

import pytest

from tests.sim.sweep import SEEDS, Sweep

pytestmark = pytest.mark.e2e


#: The deleting world's long waits (days, by 6 h jumps) add events: 2,000 seeds measured 386 s with 2 jobs
#: on a shared 2-core machine (2.7 million events) before the fixes of issue 23 landed (failing seeds stop early).
@pytest.mark.timeout(1800)
def test_seeded_scenarios_with_faults_keep_every_invariant(seed_sweep: Sweep | None) -> None:
    sweep = seed_sweep or Sweep(SEEDS)  # run on its own: the sweep starts now
    code, report = sweep.report(timeout=1700)
    failed = re.findall(r"^seed (\d+): FAILED", report, re.MULTILINE)
    replay = f"\nreplay with: python -m workflows.sim --seed {failed[0]} --trace" if failed else ""
    assert failed == [] and code == 0, report[-4000:] + replay
    assert re.search(rf"^{SEEDS} seed\(s\), 0 failed, \d+ events", report, re.MULTILINE), report[-2000:]
