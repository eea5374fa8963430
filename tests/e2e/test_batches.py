"""Batch operations on real worker processes and beat: a batch signals, cancels and reruns the runs
its filter selects, and a batch whose driving process is killed mid-way is resumed from its cursor."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.conftest import Proc
from tests.e2e import batch_flows as flows
from tests.waiting import wait_for
from workflows import RunFilter, batch_cancel, batch_rerun, batch_signal, get_batch, list_runs
from workflows.cli.commands import main

pytestmark = pytest.mark.e2e


def _suspended(n: int, tag: str) -> list[Any]:
    runs = [flows.waiter.options(tags={"batch": tag}).start(i) for i in range(n)]
    wait_for(lambda: all(r.status() == "suspended" for r in runs), 60, what=f"{n} runs waiting for their signal")
    return runs


def _ended(batch_id: str) -> Any:
    wait_for(lambda: not get_batch(batch_id).is_live, 90, what=f"batch {batch_id} to end")
    return get_batch(batch_id)


def test_a_batch_signals_then_a_batch_cancels_the_runs_a_filter_selects(cluster, capsys) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    runs = _suspended(4, tag)
    signalled = batch_signal(RunFilter(tag=f"batch={tag}"), "go", "now", rate=50)
    assert _ended(signalled).counts() == {"selected": 4, "done": 4, "failed": 0, "skipped": 0}
    assert [r.result(timeout=60) for r in runs] == [{"x": i + 1, "got": "now"} for i in range(4)]
    more = _suspended(3, tag)
    capsys.readouterr()
    assert main(["batch", "cancel", "--tag", f"batch={tag}", "--workflow", "e2e_batch_waiter",
                 "--reason", "e2e", "--follow"]) == 0
    out = capsys.readouterr().out
    assert "state      completed" in out and "selected 7  done 3  failed 0  skipped 4" in out
    wait_for(lambda: all(r.status() == "cancelled" for r in more), 60, what="the cancelled runs to end")
    assert main(["batch", "list"]) == 0
    assert signalled in capsys.readouterr().out


def test_a_batch_rerun_starts_one_rerun_per_failed_run(cluster) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    failed = [flows.failing.options(tags={"batch": tag}).start(i) for i in range(3)]
    wait_for(lambda: all(r.status() == "failed" for r in failed), 60, what="three failed runs")
    batch_id = batch_rerun(RunFilter(tag=f"batch={tag}", workflow="e2e_batch_failing"))
    assert _ended(batch_id).counts() == {"selected": 3, "done": 3, "failed": 0, "skipped": 0}
    reruns = [r for r in list_runs(workflow="e2e_batch_failing", limit=1000) if r.forked_from in
              {f.run_id for f in failed}]
    assert sorted(r.forked_from for r in reruns) == sorted(f.run_id for f in failed)


def test_a_batch_whose_driver_is_killed_mid_way_is_resumed_from_its_cursor(cluster, proc_env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    tag = uuid.uuid4().hex[:8]
    runs = _suspended(12, tag)
    # one run a second, one run a chunk: the driver is killed after a few runs
    batch_id = batch_cancel(RunFilter(tag=f"batch={tag}"), reason="killed driver", rate=1)
    driver = Proc(["batch", "run", batch_id], proc_env, tmp_path / "driver.log")
    wait_for(lambda: get_batch(batch_id).done >= 2, 60, what="the driver to cancel two runs")
    driver.kill()  # SIGKILL, whatever it was doing: its claim expires with its lease
    assert get_batch(batch_id).is_live
    batch = _ended(batch_id)  # beat takes it from the cursor
    assert batch.state == "completed"
    # a run the killed driver cancelled before it could advance the cursor is taken again: it is
    # skipped if its cancel ended it meanwhile, cancelled again (harmless) otherwise
    assert (batch.selected, batch.done + batch.skipped, batch.failed) == (12, 12, 0)
    wait_for(lambda: all(r.status() == "cancelled" for r in runs), 60, what="every run cancelled")
