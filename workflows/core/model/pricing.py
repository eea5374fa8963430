"""AWS on-demand prices (us-east-1) and the estimated cost of counted requests.

The one place these numbers live: the benchmark prices its measurements with them, the
dashboard and the metrics price a run's counted requests with them.
"""

from __future__ import annotations

PRICE_WRITE_UNIT = 0.625  # $ per million DynamoDB on-demand write request units (1 KB)
PRICE_READ_UNIT = 0.125  # $ per million read request units (4 KB, strongly consistent)
PRICE_SQS_REQUEST = 0.40  # $ per million SQS requests (64 KB chunks)


def estimate_cost(ddb_reads: int, ddb_writes: int, sqs_requests: int) -> float:
    """Dollars for these requests, one billing unit each: a floor, since a transaction bills two
    write units per item, a write one unit per KB and a read one unit per 4 KB read."""
    return (ddb_writes * PRICE_WRITE_UNIT + ddb_reads * PRICE_READ_UNIT + sqs_requests * PRICE_SQS_REQUEST) / 1e6
