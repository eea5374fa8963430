"""A workflow of megabyte payloads, run by real workers (tests/e2e/test_large_payloads_s3.py)."""

from __future__ import annotations

from typing import Any

from workflows import step, wait_for_signal, workflow


@step
def grow(blob: str) -> str:
    """Double a text: a 1 MB argument makes a 2 MB result."""
    return blob + blob


@workflow
def big_data(blob: str) -> dict[str, Any]:
    doubled = grow(blob)
    received = wait_for_signal("data")
    return {"doubled": doubled, "received": received}


@step(concurrency=1, concurrency_key="customer", rate="50/s", rate_key="customer")
def per_customer(customer: str, blob: str) -> int:
    """A step limited per customer, whose arguments go to S3 (issue 23, item 3)."""
    return len(blob)


@workflow
def big_per_customer(customer: str, blob: str) -> int:
    return per_customer(customer, blob)
