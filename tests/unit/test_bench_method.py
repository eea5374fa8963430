"""The bench's method: alternating repeats, median ratios and their spread, the targets table (bench/)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.repeats import Ratio, alternation, median, paired_ratio
from bench.report import groups, growth, merged, ratio, summary
from bench.scenarios import Result
from bench.systems import Timing
from bench.targets import hot_key_target, targets, targets_table


def result(scenario: str, system: str, repeat: int, latencies: list[float], *, steps: int = 10,
           pool: str = "threads", processes: int = 1, cpu: float = 0.0, wall: float | None = None,
           steps_done: int | None = None, error: str | None = None,
           counts: list[dict[str, Any]] | None = None) -> Result:
    timing = Timing(latencies=latencies, wall=max(latencies, default=0.0) if wall is None else wall,
                    steps_done=steps_done)
    return Result(scenario, system, steps, max(len(latencies), 1), timing=timing, repeat=repeat, pool=pool,
                  processes=processes, cpu={"workers": cpu}, error=error, counts=counts or [])


def test_turns_alternate_the_systems_within_every_repeat() -> None:
    assert alternation(["workflows", "celery"], 3) == [(0, "workflows"), (0, "celery"), (1, "workflows"),
                                                       (1, "celery"), (2, "workflows"), (2, "celery")]
    assert alternation(["a"], 0) == []


def test_ratio_pairs_repeats_and_reports_median_and_spread() -> None:
    r = paired_ratio({0: 1.0, 1: 3.0, 2: 2.0}, {0: 2.0, 1: 2.0, 2: 2.0})
    assert r.per_repeat == (0.5, 1.5, 1.0)
    assert (r.median, r.low, r.high) == (1.0, 0.5, 1.5)
    assert r.text() == "1.00x (0.50-1.50)"
    assert r.to_json() == {"median": 1.0, "min": 0.5, "max": 1.5, "per_repeat": [0.5, 1.5, 1.0]}


def test_a_repeat_missing_on_either_side_is_left_out_of_the_ratio() -> None:
    r = paired_ratio({0: 1.0, 1: None, 2: 4.0}, {0: 2.0, 1: 2.0})
    assert r.per_repeat == (0.5,)
    assert r.text() == "0.50x"
    assert Ratio(()).text() == "—" and Ratio(()).median is None
    assert median([None, 3.0, 1.0, None, 2.0]) == 2.0 and median([None]) is None


def sequential_pair(ours: list[float], chain: list[float], scenario: str = "sequential") -> list[Result]:
    out = []
    for repeat, (mine, theirs) in enumerate(zip(ours, chain, strict=True)):
        out += [result(scenario, "workflows", repeat, [mine] * 3), result("sequential", "celery", repeat, [theirs] * 3)]
    return out


def test_inline_runs_are_compared_with_the_chain_of_the_same_repeat() -> None:
    results = sequential_pair([0.1, 0.5, 0.2], [0.4, 0.5, 1.0], scenario="sequential-inline")
    r = ratio(results, ("sequential-inline", "workflows", "threads", 1))
    assert r.per_repeat == (0.25, 1.0, 0.2)
    assert r.median == 0.25


def test_the_summary_keeps_the_median_p50_over_repeats() -> None:
    results = sequential_pair([0.1, 0.3, 0.2], [0.4, 0.4, 0.4])
    ours = next(s for s in summary(results) if s["system"] == "workflows")
    assert ours["repeats"] == 3 and ours["median_p50"] == 0.2
    assert ours["vs_celery"]["median"] == 0.5 and ours["vs_celery"]["min"] == 0.25


def test_prefork_figures_compare_with_celery_of_the_same_pool_and_processes() -> None:
    results = [result("throughput", "workflows", 0, [4.0], pool="prefork", processes=2),
               result("throughput", "celery", 0, [2.0], pool="prefork", processes=2),
               result("throughput", "celery", 0, [8.0])]
    assert ratio(results, ("throughput", "workflows", "prefork", 2)).per_repeat == (2.0,)
    assert len(groups(results)) == 3


def test_repeats_merge_into_one_result_for_the_request_figures() -> None:
    rows = [{"system": "wfb", "role": "worker", "service": "dynamodb", "operation": "PutItem", "requests": 10,
             "items": 0, "read_units": 0, "write_units": 10}]
    one = merged([result("sequential", "workflows", 0, [0.1], counts=rows, cpu=1.0),
                  result("sequential", "workflows", 1, [0.2], counts=rows, cpu=2.0)])
    assert one.steps == 20 and one.cpu["workers"] == 3.0 and len(one.counts) == 2


def test_a_history_run_given_up_counts_its_steps_done_and_is_a_miss() -> None:
    results = [result("history-100", "workflows", 0, [1.0], steps=100, cpu=0.5),
               result("history-10000", "workflows", 0, [], steps=10_000, cpu=40.0, wall=60.0, steps_done=2000,
                      error="timeout: 2000/10000 steps done in 60s (33.3 steps/s)")]
    g = growth(results, "dispatched")
    assert g is not None
    assert g["steps_done"] == 2000 and not g["completed"]
    assert abs(g["cpu_ratio"] - (40.0 / 2000) / (0.5 / 100)) < 1e-9
    assert abs(g["latency_ratio"] - (60.0 / 2000) / (1.0 / 100)) < 1e-9
    rows = [r for r in targets(results) if r["id"] == "3" and r["target"].startswith("dispatched")]
    assert [r["met"] for r in rows] == [False, False]
    assert "did not finish" in rows[0]["note"]


def test_targets_cover_one_to_eight_and_say_met_or_missed() -> None:
    results = sequential_pair([0.1, 0.1], [0.4, 0.4]) + [
        result("sequential", "workflows-sent", 0, [0.6]), result("sequential", "workflows-sent", 1, [0.5]),
        result("history-100", "workflows", 0, [1.0], steps=100, cpu=1.0),
        result("history-10000", "workflows", 0, [110.0], steps=10_000, cpu=100.0)]
    rows = targets(results)
    assert {r["id"] for r in rows} >= {"1", "2", "3", "4", "5", "7", "8"}
    by_name = {r["target"]: r for r in rows}
    assert by_name["steps in place: p50 / Celery chain p50"]["value"] == 0.25
    assert by_name["steps in place: p50 / Celery chain p50"]["met"] is True
    assert by_name["steps sent as messages: p50 / Celery chain p50"]["met"] is False  # 1.375x
    assert rows[0]["id"] == "1" and rows[0]["value"] == 2 and rows[0]["met"] is True
    table = targets_table(rows)
    assert "| 2 | steps in place: p50 / Celery chain p50 | 0.250 | <= 0.500 | yes |" in table


def test_a_scenario_measured_once_fails_target_one() -> None:
    results = sequential_pair([0.1, 0.1], [0.4, 0.4]) + [result("throughput", "workflows", 0, [5.0]),
                                                         result("throughput", "celery", 0, [4.0])]
    first = targets(results)[0]
    assert first["value"] == 1 and first["met"] is False and "throughput" in first["note"]


def test_target_eight_reads_the_hot_keys_when_the_front_reports_them() -> None:
    assert hot_key_target(None)["met"] is None
    assert "not measured" in hot_key_target(None)["note"]
    row = hot_key_target([{"key": "runs.by_status: running", "writes_per_second": 120.0},
                          {"key": "timers.by_due: 3", "writes_per_second": 700.0}])
    assert row["value"] == 700.0 and row["met"] is False and "timers.by_due" in row["note"]


def test_sizes_come_from_quick_or_full_then_repeats_and_set() -> None:
    from bench.__main__ import parse_args, plan_of

    plan = plan_of(parse_args(["--quick", "--repeats", "4", "--set", "history=100,2000", "--set", "wide=0",
                               "--set", "seq_runs=7", "--set", "prefork=1,2"]))
    assert (plan.repeats, plan.history, plan.wide, plan.seq_runs, plan.prefork) == (4, (100, 2000), None, 7, (1, 2))
    full = plan_of(parse_args([]))
    assert (full.repeats, full.history, full.wide, full.prefork) == (3, (100, 10_000), 10_000, (1, 2, 4))
    assert plan_of(parse_args(["--quick"])).repeats == 2


def test_fresh_tables_and_aws_latency_come_from_set_and_the_columns_flag() -> None:
    from bench.__main__ import columns_of, parse_args, plan_of

    args = parse_args(["--quick", "--set", "fresh=0", "--set", "aws.dynamodb.GetItem=9"])
    assert plan_of(args).fresh is False and plan_of(parse_args(["--quick"])).fresh is True
    columns = columns_of(args)
    assert list(columns) == ["moto", "aws"] and columns["moto"] == {}
    assert columns["aws"]["dynamodb.GetItem"] == 9.0 and columns["aws"]["sqs.SendMessage"] == 16.0
    assert list(columns_of(parse_args(["--aws-latency", "moto"]))) == ["moto"]


def test_each_column_pairs_its_own_repeats_and_both_show_side_by_side() -> None:
    from bench.columns import side_by_side, split
    from bench.engine_targets import engine_targets

    results = []
    for column, ours, theirs in (("moto", 2.0, 1.0), ("aws", 3.0, 2.0)):
        for repeat in range(2):
            for system, wall in (("workflows", ours), ("celery", theirs)):
                r = result("throughput", system, repeat, [wall] * 5, steps=1, wall=wall)
                r.column = column
                results.append(r)
    by = split(results)
    assert list(by) == ["moto", "aws"]
    assert ratio(by["moto"], ("throughput", "workflows", "threads", 1)).median == 2.0
    assert ratio(by["aws"], ("throughput", "workflows", "threads", 1)).median == 1.5
    table = side_by_side(results)
    assert "| throughput | workflows | threads | 1 | 2.000 | 2.00x (2.00-2.00) | 3.000 | 1.50x (1.50-1.50) |" in table
    burst = next(r for r in engine_targets(results) if r["target"].startswith("burst of one-step runs, threads"))
    assert burst["values"] == {"moto": 2.0, "aws": 1.5} and burst["met"] == {"moto": False, "aws": False}


class CountingHandle:
    """A run handle over a scripted sequence of stored runs, counting reads (as ``RunHandle`` reads the store)."""

    def __init__(self, statuses: list[str]) -> None:
        from workflows.core.model.records import RunRecord

        self.run_id, self.reads = "r1", 0
        self.runs = [RunRecord("r1", "single", status, 0.0, ended_at=9.5 if status == "completed" else None)
                     for status in statuses]

    def record(self) -> Any:
        self.reads += 1
        return self.runs[min(self.reads, len(self.runs)) - 1]

    def result(self, timeout: float | None = None, poll: float = 0.1) -> Any:
        while self.record().status != "completed":
            pass
        return 1


def test_the_bench_reads_a_finished_run_once_not_once_more_for_its_end_time() -> None:
    from bench.systems import Workflows

    handle = CountingHandle(["running", "completed"])
    assert Workflows._wait(handle, 2.0, timeout=5) == 7.5
    assert handle.reads == 2  # one read per poll; the read that saw the end gives the end time


def reads(n: int, role: str = "worker", operation: str = "GetItem") -> dict[str, Any]:
    """A counter row of ``n`` reads (``operation``) made by ``role``."""
    return {"system": "wfb", "role": role, "service": "dynamodb", "operation": operation, "requests": n,
            "items": n, "read_units": float(n), "write_units": 0}


def test_a_fan_outs_item_reads_per_extra_branch_leave_out_what_every_fan_out_reads() -> None:
    from bench.engine_targets import engine_targets

    def row_of(results: list[Result]) -> dict[str, Any]:
        return next(r for r in engine_targets(results) if r["target"].startswith("fan-out branch: item reads"))

    results = []
    for width in (100, 1000):
        for repeat in range(2):
            for system in ("workflows", "celery"):
                counts = [reads(2), reads(width // 100, operation="Query"), reads(30, "beat", "Query")] \
                    if system == "workflows" else []
                results.append(result(f"fan-out-{width}", system, repeat, [1.0], steps=width, counts=counts))
    row = row_of(results)
    assert row["values"] == {"moto": 0.0} and row["met"] == {"moto": True}
    assert "2.0 -> 2.0 GetItems per fan-out" in row["notes"]["moto"] and "1.0 -> 10.0" in row["notes"]["moto"]
    results.append(result("fan-out-1000", "workflows", 2, [1.0], steps=1000, counts=[reads(902)]))
    row = row_of(results)  # a read of the run by every branch of one repeat
    assert row["values"]["moto"] == pytest.approx((906 / 3 - 2) / 900) and row["met"] == {"moto": False}


def test_the_wide_fan_out_row_gives_its_time_or_the_time_it_was_given() -> None:
    from bench.engine_targets import engine_targets

    def row_of(results: list[Result]) -> dict[str, Any]:
        return next(r for r in engine_targets(results) if r["target"].startswith("widest one-off fan-out"))

    done = result("wide-fan-out-10000", "workflows", 0, [420.0], steps=10_000, counts=[reads(30_000)])
    chord = result("wide-fan-out-10000", "celery", 0, [], steps=10_000, error="item size exceeded")
    row = row_of([done, chord])
    assert row["values"] == {"moto": 420.0} and row["met"] == {"moto": True}
    assert "3.00 requests/branch" in row["notes"]["moto"] and "the chord did not complete" in row["notes"]["moto"]
    unfinished = result("wide-fan-out-10000", "workflows", 0, [], steps=10_000, wall=601.4,
                        error="timed out after 600 s")
    row = row_of([unfinished])
    assert row["values"] == {"moto": 601.4} and row["met"] == {"moto": False}
    assert "did not complete: timed out" in row["notes"]["moto"]
