"""Schedules fired by real beat processes, run by a real worker."""

from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

import pytest

from tests.e2e import schedule_flows as flows
from tests.e2e.flows import executions
from tests.waiting import holds_within, wait_for
from workflows import create_schedule, delete_schedule, get_schedule, pause_schedule, resume_schedule
from workflows.client import iter_runs

pytestmark = pytest.mark.e2e

POLICIES = ("skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all")


def runs_of(schedule_id: str, workflow: str) -> list[Any]:
    """The runs a schedule started, oldest first."""
    runs = [r for r in iter_runs(workflow=workflow, limit=200) if r.schedule_id == schedule_id]
    return sorted(runs, key=lambda r: r.created_at)


def test_two_beats_start_each_fire_once_and_pause_resume_without_backfill(cluster, spawn) -> None:
    second_beat = spawn("beat", "--loglevel", "INFO")
    token = uuid.uuid4().hex[:8]
    tag = f"two-beats-{token}"
    schedule_id = f"e2e-two-beats-{token}"
    wait_for(lambda: "beat: Starting" in second_beat.output() or second_beat.popen.poll() is not None, 30,
             what="the second beat starts ticking")
    assert second_beat.popen.poll() is None, second_beat.output()
    # allow_all: a run still running when the next fire comes must not hide that fire.
    create_schedule(flows.scheduled_tick, every="2s", args=[tag], schedule_id=schedule_id, overlap="allow_all")
    try:
        wait_for(lambda: len(runs_of(schedule_id, "scheduled_tick")) >= 9, 60, poll=0.5, what="nine fires")
        pause_schedule(schedule_id)
        paused_at = time.time()
        assert holds_within(lambda: not get_schedule(schedule_id).running, 15)
        runs = runs_of(schedule_id, "scheduled_tick")
        fires = [r.fire_time for r in runs]
        assert len(runs) >= 8, fires
        assert len(set(fires)) == len(fires), "a fire time started two runs"
        assert sorted(fires) == [min(fires) + 2 * k for k in range(len(fires))], f"a fire was missed: {fires}"
        assert all(r.status == "completed" for r in runs_of(schedule_id, "scheduled_tick"))
        assert executions(tag) == len(runs), "a scheduled run executed twice"
        assert max(fires) <= paused_at

        time.sleep(5)  # the time is the test: paused, at least two fire times pass
        assert len(runs_of(schedule_id, "scheduled_tick")) == len(runs), "a paused schedule fired"
        resumed_at = time.time()  # taken before the call: the first fire after it may come while it returns
        resume_schedule(schedule_id)
        assert holds_within(lambda: len(runs_of(schedule_id, "scheduled_tick")) > len(runs), 10)
        after = [r.fire_time for r in runs_of(schedule_id, "scheduled_tick")][len(runs):]
        assert all(f > resumed_at for f in after), f"resume backfilled fires of the pause: {after}"
        won = sum(" -> run " in line for line in second_beat.output().splitlines())
        print(f"\ntwo beats: {len(runs)} fires, one run each; the second beat started {won} of them; "
              f"run durations {[round(r.ended_at - r.created_at, 2) for r in runs]}")
    finally:
        delete_schedule(schedule_id)
        second_beat.kill()


@pytest.fixture(scope="module")
def overlap_runs(cluster) -> Iterator[dict[str, tuple[Any, list[Any]]]]:
    """One schedule per overlap policy, firing every second a workflow that lasts 2 s or more, for 12 s.

    A catch-up window keeps a late beat tick (the suite's machine may be busy) from
    skipping fires: here only the overlap policy decides.
    """
    token = uuid.uuid4().hex[:8]
    ids = {policy: f"e2e-{policy}-{token}" for policy in POLICIES}
    for policy, schedule_id in ids.items():
        create_schedule(flows.scheduled_slow, every="1s", args=[schedule_id, 2.0], overlap=policy,
                        catchup_window="1m", schedule_id=schedule_id)
    try:
        time.sleep(12)  # the time is the test: 12 s of fires under each policy
        # A busy machine's beat may fire fewer in that window: go on until allow_all has the 4 runs its
        # test reads (the other tests read lower bounds and shapes, which a longer window keeps).
        wait_for(lambda: len(runs_of(ids["allow_all"], "scheduled_slow")) >= 4, 120, poll=0.5,
                 what="allow_all's fourth run")
        for schedule_id in ids.values():
            pause_schedule(schedule_id)
        assert holds_within(lambda: not any(get_schedule(s).running for s in ids.values()), 20)
        yield {policy: (get_schedule(s), runs_of(s, "scheduled_slow")) for policy, s in ids.items()}
    finally:
        for schedule_id in ids.values():
            delete_schedule(schedule_id)


def overlapping(runs: list[Any]) -> bool:
    """Whether some run started before the one before it ended."""
    return any(later.created_at < earlier.ended_at for earlier, later in zip(runs, runs[1:], strict=False))


def test_allow_all_runs_overlap(overlap_runs) -> None:
    info, runs = overlap_runs["allow_all"]
    assert len(runs) >= 4 and overlapping(runs)
    assert all(r.status == "completed" for r in runs) and info.skipped == 0


def test_skip_never_overlaps_and_skips(overlap_runs) -> None:
    info, runs = overlap_runs["skip"]
    assert len(runs) >= 2 and not overlapping(runs)
    assert info.skipped >= 2 and info.buffered == []
    assert all(r.status == "completed" for r in runs)


def test_buffer_one_starts_one_buffered_fire_when_the_run_ends(overlap_runs) -> None:
    info, runs = overlap_runs["buffer_one"]
    assert len(runs) >= 2 and not overlapping(runs)
    assert info.skipped >= 1 and len(info.buffered) <= 1
    late = [r for r in runs[1:] if r.created_at - r.fire_time > 0.5]
    assert late, "no run started from the buffer"


def test_buffer_all_keeps_every_fire(overlap_runs) -> None:
    info, runs = overlap_runs["buffer_all"]
    assert len(runs) >= 2 and not overlapping(runs)
    assert info.skipped == 0
    fires = sorted([r.fire_time for r in runs] + [b.timestamp() for b in info.buffered])
    assert fires == [fires[0] + k for k in range(len(fires))], "a fire was dropped"


def replaced_runs_were_cancelled(runs: list[Any]) -> bool:
    """Every run a fire found running was cancelled: a run that ended before the next one was
    created may have completed (a busy beat's fires can come more than a run's length apart)."""
    return all(earlier.status == "cancelled" or earlier.ended_at <= later.created_at
               for earlier, later in zip(runs, runs[1:], strict=False)) and \
        any(r.status == "cancelled" for r in runs[:-1])


def test_cancel_other_cancels_then_starts_after_the_end(overlap_runs) -> None:
    info, runs = overlap_runs["cancel_other"]
    assert len(runs) >= 3 and not overlapping(runs)
    assert replaced_runs_were_cancelled(runs), [r.status for r in runs]


def test_terminate_other_cancels_and_starts_at_once(overlap_runs) -> None:
    info, runs = overlap_runs["terminate_other"]
    assert len(runs) >= 3 and overlapping(runs)
    assert replaced_runs_were_cancelled(runs), [r.status for r in runs]


def test_declared_schedule_was_synced_by_beat(cluster) -> None:
    info = get_schedule("declared:new_year_report")
    assert info.declared and info.cron == "0 0 1 1 *" and info.overlap == "buffer_one"
