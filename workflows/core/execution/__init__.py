"""A step's body running in a worker: one attempt, flow control (concurrency slots, rate tokens),
heartbeats, bodies that outlive their attempt, and the event loop of async bodies."""
