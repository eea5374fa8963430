"""``python -m workflows.soak``: the command line of the chaos soak (docs/soak.md)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Sequence

from .config import SoakConfig, parse_rates, parse_workers


def build_parser() -> argparse.ArgumentParser:
    """The soak's options."""
    p = argparse.ArgumentParser(prog="python -m workflows.soak",
                                description="Run the real system under injected faults and kills, then check a ledger.")
    p.add_argument("--seed", type=int, default=1, help="seed of the workload, the faults, the kills and the skews")
    p.add_argument("--duration", type=float, default=180.0, help="seconds from the start to the check (default 180)")
    p.add_argument("--workers", default="threads=2,prefork=1", help="worker processes by pool (threads=2,prefork=1)")
    p.add_argument("--rates", default="", help="fault rates, e.g. lose=0.01,throttle=0.02,error=0.01,reset=0.01,"
                                               "latency=0.004 (kinds not named keep these defaults)")
    p.add_argument("--kill-every", type=float, default=20.0, help="mean seconds between two kills (default 20)")
    p.add_argument("--wave-every", type=float, default=8.0, help="seconds between two waves of runs (default 8)")
    p.add_argument("--fan-out", type=int, default=100, help="width of the wide fan-out (default 100)")
    p.add_argument("--keep", action="store_true", help="keep the soak's directory even when it passes")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one soak; print its report; exit 1 on any violation, 2 on bad options."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        threads, prefork = parse_workers(args.workers)
        rates = parse_rates(args.rates)
    except ValueError as exc:
        parser.error(str(exc))
    if args.duration < 60:
        parser.error("--duration must be at least 60 seconds")
    config = SoakConfig(seed=args.seed, duration=args.duration, threads_workers=threads, prefork_workers=prefork,
                        rates=rates, kill_every=args.kill_every, wave_every=args.wave_every, fan_out=args.fan_out,
                        keep=args.keep)
    from .run import run_soak

    given = shlex.join(list(argv if argv is not None else sys.argv[1:]))
    command = f"python -m workflows.soak {given}".strip()
    report = run_soak(config, command)
    report.write(sys.stdout)
    return 0 if report.passed else 1
