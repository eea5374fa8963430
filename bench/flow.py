"""``python -m bench.flow [--seconds S]``: flow control at its limits, on the counting AWS front.

Eight threads (two workers of four threads) contend for each limit through the DynamoDB
store, as step attempts do in a worker: a concurrency limit of 2, one of 1 per key (4 keys),
and a rate of 20/s. A thread refused a slot waits a randomised spell (a retry timer in the
engine); a thread refused a token waits until its reserved token is due. It prints, per limit,
the throughput at the limit, the most holders seen at once, and the DynamoDB requests per
acquired slot or token (every request on the flow table, refused attempts included).
"""

from __future__ import annotations

import argparse
import random
import threading
import time
import uuid
from typing import Any, Callable

from . import proxy
from .stack import Front, store_on_front

THREADS = 8
BODY_SECONDS = 0.05


class Tally:
    """Admissions and the most bodies running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.admitted = self.running = self.peak = 0

    def enter(self) -> None:
        with self.lock:
            self.admitted += 1
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self) -> None:
        with self.lock:
            self.running -= 1


def _slots(store: Any, limit_of: Callable[[int], str], capacity: int, tally: Tally, stop: float,
           index: int) -> None:
    while time.monotonic() < stop:
        holder, limit = uuid.uuid4().hex, limit_of(index)
        slot = store.acquire_slot(limit, capacity, holder, store.now() + 30)
        if slot is None:
            time.sleep(random.uniform(0.05, 0.15))  # the engine's randomised wait for a slot
            continue
        tally.enter()
        time.sleep(BODY_SECONDS)
        tally.leave()
        store.release_slot(limit, slot, holder)


def _tokens(store: Any, bucket: str, rate: float, tally: Tally, stop: float, index: int) -> None:
    while time.monotonic() < stop:
        holder = uuid.uuid4().hex
        while (wait := store.take_token(bucket, rate, 1.0, holder)) > 0:
            time.sleep(wait)  # the engine's timer, due when the reserved token is
        if time.monotonic() < stop:
            tally.enter()
            tally.leave()


def scenario(front: Front, name: str, seconds: float, work: Callable[[Tally, float, int], None]) -> dict[str, Any]:
    """Run ``work`` on THREADS threads for ``seconds``; its throughput and flow-table requests."""
    proxy.reset_counts(front.url)
    tally, stop = Tally(), time.monotonic() + seconds
    threads = [threading.Thread(target=work, args=(tally, stop, i)) for i in range(THREADS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    rows = [r for r in proxy.fetch_counts(front.url) if r.get("service") == "dynamodb"]
    requests = sum(r["requests"] for r in rows)
    return {"scenario": name, "admitted": tally.admitted, "per_second": tally.admitted / elapsed,
            "peak": tally.peak, "requests_per_admission": requests / max(1, tally.admitted),
            "writes_per_admission": sum(r["requests"] for r in rows if r["operation"] in
                                        ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"))
            / max(1, tally.admitted)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.flow", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each scenario (default 15)")
    args = parser.parse_args(argv)
    with store_on_front("flow", "wfb-") as (front, store):
        tag = uuid.uuid4().hex[:6]
        results = [
            scenario(front, "concurrency=2 (global)", args.seconds,
                     lambda t, s, i: _slots(store, lambda _: f"step:{tag}", 2, t, s, i)),
            scenario(front, "concurrency=1 per key (4 keys)", args.seconds,
                     lambda t, s, i: _slots(store, lambda k: f"step:{tag}#k{k % 4}", 1, t, s, i)),
            scenario(front, "rate=20/s", args.seconds,
                     lambda t, s, i: _tokens(store, f"rate:{tag}", 20.0, t, s, i)),
        ]
    print(f"{'scenario':32} {'admitted':>8} {'per s':>7} {'peak':>5} {'DDB req/adm':>12} {'writes/adm':>11}")
    for r in results:
        print(f"{r['scenario']:32} {r['admitted']:8d} {r['per_second']:7.1f} {r['peak']:5d} "
              f"{r['requests_per_admission']:12.2f} {r['writes_per_admission']:11.2f}")


if __name__ == "__main__":
    main()
