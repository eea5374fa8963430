"""``python -m bench.dashboard``: how fast the dashboard answers the first page of runs over many stored runs.

Starts the counting AWS front (moto), writes ``--runs`` runs straight through the store's
run model (BatchWriteItem, 25 a request: no workflow executes), serves the dashboard in this
process (uvicorn on a free port) and times ``GET /runs``, unfiltered and filtered by status,
``--requests`` times each. Prints p50/p95 and writes them as JSON under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

from . import proxy
from .__main__ import RESULTS, commit, log, machine, versions
from .report import percentile
from .stack import Front

TOKEN = "bench-dashboard-token-0123456789"
#: The share of each status among the runs written (most runs of a busy system have ended).
MIX = (("completed", 0.80), ("failed", 0.08), ("suspended", 0.06), ("running", 0.04), ("pending", 0.02))
PAGES = ("/runs", "/runs?status=completed", "/runs?status=failed", "/runs?status=running")


def write_runs(count: int, span: float = 86400.0) -> dict[str, int]:
    """Write ``count`` runs created over the last ``span`` seconds, statuses in the ``MIX`` shares."""
    from workflows.core.model.records import RunRecord
    from workflows.runtime import get_engine

    store: Any = get_engine().store
    now, written = time.time(), dict.fromkeys((s for s, _ in MIX), 0)
    statuses = [s for s, share in MIX for _ in range(round(share * 1000))]
    with store.m.Run.batch_write() as batch:
        for i in range(count):
            status = statuses[i * 389 % len(statuses)]  # 389 is prime to 1000: an even spread
            created = now - span * (count - i) / count
            item = store.run_item(RunRecord(run_id=uuid.uuid4().hex, workflow=f"flow{i % 3}", status=status,
                                            created_at=created, args='[[1],{}]'))
            item.status = status
            if status in ("completed", "failed"):
                item.ended_at, item.lease_expires_at, item.lease_shard = created + 1.0, None, None
                item.result = "2" if status == "completed" else None
                item.error = "ValueError: boom" if status == "failed" else None
            batch.save(item)
            written[status] += 1
    return written


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The dashboard app on a free local port, served by uvicorn from a thread of this process."""
    import uvicorn

    from workflows.local.server import free_port
    from workflows.web import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(token=TOKEN), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def time_page(url: str, requests: int, front: Front) -> dict[str, Any]:
    """Seconds of ``requests`` sequential GETs of one page (after one untimed warm-up), and the
    DynamoDB requests one GET makes with the seconds moto took to answer them."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    seconds: list[float] = []
    rows: list[dict[str, Any]] = []
    proxy.reset_counts(front.url)
    cold = 0.0
    for i in range(requests + 1):
        began = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            body = response.read()
            if response.status != 200:
                raise RuntimeError(f"GET {url}: {response.status}")
        if i:
            seconds.append(time.perf_counter() - began)
        else:  # the first GET of a window also counts the runs by status (then reused for 30 s)
            cold = time.perf_counter() - began
            rows = [r for r in proxy.fetch_counts(front.url) if r["service"] == "dynamodb"]
    return {"requests": requests, "p50": percentile(seconds, 0.5), "p95": percentile(seconds, 0.95),
            "max": max(seconds), "first_with_counts": round(cold, 3), "bytes": len(body),
            "ddb_requests_per_get": {r["operation"]: r["requests"] for r in rows},
            "moto_seconds_per_get": round(sum(r["seconds"] for r in rows), 3)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs to store (default 10000)")
    parser.add_argument("--requests", type=int, default=20, help="timed GETs of each page (default 20)")
    parser.add_argument("--dynamodb", metavar="URL",
                        help="serve DynamoDB from this endpoint instead of moto behind the counting front "
                             "(e.g. dynalite, whose Query reads only the key range asked for; requests "
                             "are then not counted)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (default bench/results)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    front = Front(Path(tempfile.mkdtemp(prefix="bench-logs-")))
    try:
        os.environ.update({**front.env("client"), "WORKFLOWS_TABLE_PREFIX": "wfd-", "WORKFLOWS_QUEUE_PREFIX": "wfd-"})
        if args.dynamodb:
            os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = args.dynamodb
        from persistence.provision import create_tables
        from workflows.settings import Settings, configure

        configure(Settings.from_env())
        create_tables(Settings.from_env())
        began = time.monotonic()
        written = write_runs(args.runs)
        log(f"wrote {args.runs} runs in {time.monotonic() - began:.1f}s: {written}")
        with serving() as base:
            pages = {page: time_page(base + page, args.requests, front) for page in PAGES}
    finally:
        front.stop()
    server = "dynamodb endpoint" if args.dynamodb else "moto"
    lines = [f"| page | p50 | p95 | max | first GET, with counts | DynamoDB requests a GET | {server}'s seconds a GET |"
             "\n|---|---|---|---|---|---|---|"]
    lines += [f"| `GET {page}` | {f['p50']:.3f} s | {f['p95']:.3f} s | {f['max']:.3f} s | "
              f"{f['first_with_counts']:.3f} s | "
              f"{', '.join(f'{n} {op}' for op, n in f['ddb_requests_per_get'].items()) or 'not counted'} | "
              f"{f['moto_seconds_per_get']:.2f} s |" for page, f in pages.items()]
    text = "\n".join(lines)
    print(f"Dashboard over {args.runs} stored runs ({written}), {args.requests} requests a page:\n{text}")
    meta = {"machine": machine(), "versions": versions(), "started": stamp, "commit": commit(),
            "command": "python -m bench.dashboard" + (" --dynamodb URL (dynalite)" if args.dynamodb else ""),
            "dynamodb": "dynalite" if args.dynamodb else "moto", "runs": args.runs, "statuses": written}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"dashboard-{stamp}.json"
    path.write_text(json.dumps({"meta": meta, "pages": pages, "markdown": text}, indent=1))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
