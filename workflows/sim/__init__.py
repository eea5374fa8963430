"""A deterministic simulator of a whole deployment, to find what hand-picked tests miss.

The real engine code runs over the in-memory store and an SQS-like broker, with
several workers, beats and a client in one process. A seeded scheduler picks every
next event (deliver a message, step a task to its next port call, tick beat, act as
the client, move the clock) and every fault (crashes before or after a call, lost
responses retried, throttles, duplicate and delayed messages, clock skew, stalls that
let leases expire). After every event the liveness invariant is checked; at the end,
that every run ended as its workflow defines. A failing seed replays exactly::

    python -m workflows.sim --seeds 2000
    python -m workflows.sim --seed 1234 --trace
"""

from .faults import FaultPlan
from .runner import Outcome, run_seed, run_seeds

__all__ = ["FaultPlan", "Outcome", "run_seed", "run_seeds"]
