"""Run scenarios by seed, deterministically."""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from typing import Iterator

from ..memory import MemoryStore
from .faults import FaultPlan


@dataclasses.dataclass
class Outcome:
    """What one seed did."""

    seed: int
    violations: list[str]
    trace: list[str]
    steps: int
    runs: int


def plan_for(seed: int) -> FaultPlan:
    """The faults of a seed: every fourth seed only loses responses (and reorders and
    repeats messages), so every lease expiry in it must be explained by a queue wait."""
    return FaultPlan.lost_responses() if seed % 4 == 3 else FaultPlan()


def run_seed(seed: int, faults: FaultPlan | None = None, runs: int = 4,
             store_class: type[MemoryStore] = MemoryStore) -> Outcome:
    """Play one scenario; the same seed always plays the same scenario."""
    from .world import Scale, World

    ids = random.Random(seed ^ 0x5EED)
    real_uuid4 = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=ids.getrandbits(128), version=4)  # ids drawn by the seed
    random.seed(seed)  # retry jitter
    try:
        world = World(seed, scale=Scale(runs=runs), faults=faults or plan_for(seed), store_class=store_class).run()
    finally:
        uuid.uuid4 = real_uuid4
    return Outcome(seed, world.violations, world.trace, world.steps, len(world.store.runs.items))


def run_seeds(seeds: range, faults: FaultPlan | None = None, jobs: int = 1) -> Iterator[Outcome]:
    """Play scenarios, in ``jobs`` processes (each seed plays the same wherever it runs)."""
    if jobs <= 1:
        for seed in seeds:
            yield run_seed(seed, faults)
        return
    import functools
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(jobs, initializer=_quiet) as pool:
        yield from pool.imap(functools.partial(run_seed, faults=faults), seeds, chunksize=16)


def _quiet() -> None:
    import logging

    logging.getLogger("workflows").setLevel(logging.CRITICAL)  # the simulator reports what matters


def main(argv: list[str] | None = None) -> int:
    """``python -m workflows.sim``: run seeds, report the failing ones (exit 1 if any)."""
    import argparse

    _quiet()

    parser = argparse.ArgumentParser(prog="python -m workflows.sim", description=__doc__)
    parser.add_argument("--seeds", type=int, default=200, help="how many seeds to run (from --first)")
    parser.add_argument("--first", type=int, default=0, help="the first seed")
    parser.add_argument("--seed", type=int, help="run just this seed (and print its trace)")
    parser.add_argument("--no-faults", action="store_true", help="no injected faults")
    parser.add_argument("--trace", action="store_true", help="print the fault trace of failing seeds")
    parser.add_argument("--jobs", type=int, default=1, help="processes to run seeds in")
    args = parser.parse_args(argv)
    faults = FaultPlan.none() if args.no_faults else None
    seeds = range(args.seed, args.seed + 1) if args.seed is not None else range(args.first, args.first + args.seeds)
    started, failed, events = time.monotonic(), 0, 0
    for outcome in run_seeds(seeds, faults, args.jobs):
        events += outcome.steps
        if outcome.violations:
            failed += 1
            print(f"seed {outcome.seed}: FAILED")
            for violation in outcome.violations:
                print(f"  {violation}")
            if args.trace or args.seed is not None:
                for line in outcome.trace:
                    print(f"    {line}")
    elapsed = time.monotonic() - started
    print(f"{len(seeds)} seed(s), {failed} failed, {events} events, {elapsed:.1f}s")
    return 1 if failed else 0
