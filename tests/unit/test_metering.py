"""Requests per run: the in-memory meter, the run page's line and the Prometheus counters."""

from __future__ import annotations

import pytest

from workflows.core.model.pricing import estimate_cost
from workflows.core.model.records import RunRecord
from workflows.core.storage import metering
from workflows.core.storage.metering import Meter, Tally, attributed, count_dynamodb, count_sqs, current_run


@pytest.fixture()
def fresh_meter(monkeypatch: pytest.MonkeyPatch) -> Meter:
    """A meter of its own, so counts of other tests in this process do not leak in."""
    meter = Meter()
    monkeypatch.setattr(metering, "meter", meter)
    return meter


def test_requests_count_only_inside_an_attributed_context(fresh_meter: Meter) -> None:
    count_dynamodb("PutItem")
    count_sqs()
    assert current_run() is None
    with attributed("r-1"):
        assert current_run() == "r-1"
        count_dynamodb("PutItem")
        count_dynamodb("TransactWriteItems")
        count_dynamodb("Query")
        count_dynamodb("GetItem")
        count_dynamodb("DescribeTable")  # neither a read nor a write of items
        count_sqs()
    assert current_run() is None
    assert fresh_meter.waiting("r-1") == Tally(ddb_reads=2, ddb_writes=2, sqs_sends=1)


def test_nested_contexts_attribute_to_the_innermost_run(fresh_meter: Meter) -> None:
    with attributed("parent"):
        with attributed("child"):
            count_dynamodb("PutItem")
        count_dynamodb("GetItem")
    assert fresh_meter.waiting("child") == Tally(ddb_writes=1)
    assert fresh_meter.waiting("parent") == Tally(ddb_reads=1)


def test_a_flush_that_applied_takes_the_counts(fresh_meter: Meter) -> None:
    fresh_meter.count("r-1", Tally(ddb_writes=3))
    with metering.flush("r-1") as taken:
        assert taken.tally == Tally(ddb_writes=3)
        taken.applied = True
    assert not fresh_meter.waiting("r-1")


def test_a_flush_whose_write_did_not_apply_puts_the_counts_back(fresh_meter: Meter) -> None:
    fresh_meter.count("r-1", Tally(ddb_writes=3))
    with metering.flush("r-1") as taken:
        fresh_meter.count("r-1", Tally(sqs_sends=1))  # counted while the write was under way
    assert taken.tally == Tally(ddb_writes=3)
    assert fresh_meter.waiting("r-1") == Tally(ddb_writes=3, sqs_sends=1)
    with pytest.raises(RuntimeError):
        with metering.flush("r-1"):
            raise RuntimeError("the write raised")
    assert fresh_meter.waiting("r-1") == Tally(ddb_writes=3, sqs_sends=1)


def test_the_least_recently_counted_runs_are_dropped_past_the_bound() -> None:
    meter = Meter(max_runs=2)
    meter.count("a", Tally(ddb_writes=1))
    meter.count("b", Tally(ddb_writes=2))
    meter.count("a", Tally(ddb_reads=1))  # a is now the most recent
    meter.count("c", Tally(sqs_sends=1))
    assert not meter.waiting("b")
    assert meter.dropped == Tally(ddb_writes=2)
    assert meter.waiting("a") == Tally(ddb_reads=1, ddb_writes=1)
    assert meter.waiting("c") == Tally(sqs_sends=1)


def test_the_estimate_prices_each_request_as_one_billing_unit() -> None:
    assert estimate_cost(0, 0, 0) == 0
    assert estimate_cost(1_000_000, 0, 0) == pytest.approx(0.125)
    assert estimate_cost(0, 1_000_000, 0) == pytest.approx(0.625)
    assert estimate_cost(0, 0, 1_000_000) == pytest.approx(0.40)


def test_the_run_page_line_sums_dynamodb_and_prices_the_run() -> None:
    pytest.importorskip("starlette")
    from workflows.web.views import requests_line

    run = RunRecord(run_id="r", workflow="w", status="completed", created_at=0.0,
                    ddb_reads=4, ddb_writes=8, sqs_sends=2)
    assert requests_line(run) == "12 DynamoDB, 2 SQS; est. $0.000006"


def test_an_ended_run_adds_its_requests_and_cost_to_the_counters() -> None:
    pytest.importorskip("prometheus_client")
    from prometheus_client import REGISTRY

    from workflows.observe.metrics import Metrics

    def sample(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    before = (sample("workflows_run_requests_total", workflow="metered_flow", service="dynamodb"),
              sample("workflows_run_requests_total", workflow="metered_flow", service="sqs"),
              sample("workflows_run_cost_dollars_total", workflow="metered_flow"))
    run = RunRecord(run_id="r", workflow="metered_flow", status="completed", created_at=0.0, ended_at=1.0,
                    ddb_reads=10, ddb_writes=20, sqs_sends=3)
    Metrics().run_ended(run)
    assert sample("workflows_run_requests_total", workflow="metered_flow", service="dynamodb") - before[0] == 30
    assert sample("workflows_run_requests_total", workflow="metered_flow", service="sqs") - before[1] == 3
    assert sample("workflows_run_cost_dollars_total", workflow="metered_flow") - before[2] == pytest.approx(
        estimate_cost(10, 20, 3))
