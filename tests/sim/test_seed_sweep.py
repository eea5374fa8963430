"""The deterministic simulator's sweep: thousands of seeded scenarios with faults run clean.

It runs the seeds in a pool of two processes, so it carries the ``e2e`` marker: the fast loop
(``-m "not e2e and not crash"``) leaves it to the full suite.
"""

from __future__ import annotations

import os

import pytest

from workflows.sim import run_seeds

pytestmark = pytest.mark.e2e

#: Seeds the test command runs (the issue asks CI for at least 2,000).
SEEDS = int(os.environ.get("WORKFLOWS_SIM_SEEDS", "2000"))


#: The deleting world's long waits (days, by 6 h jumps) add events: 2,000 seeds measured 386 s with 2 jobs
#: on a shared 2-core machine (2.7 million events) before the fixes of issue 23 landed (failing seeds stop early).
@pytest.mark.timeout(1800)
def test_seeded_scenarios_with_faults_keep_every_invariant() -> None:
    failed = [(o.seed, o.violations) for o in run_seeds(range(SEEDS), jobs=2) if o.violations]
    assert failed == [], f"replay with: python -m workflows.sim --seed {failed[0][0]} --trace"
