"""A chaos soak of the real system: ``python -m workflows.soak`` (docs/soak.md).

The soak runs the local AWS server, real workers (threads and prefork), one beat and the hook
endpoint as processes, behind a fault front that loses responses, throttles, fails, resets and
slows requests; it kills workers and beat at random and restarts them, skews one clock per role,
drives a workload that uses every feature, and checks a ledger that every step body appends to.

Modules: ``config`` (the options), ``faults`` and ``proxy`` (the fault front), ``fleet`` and
``chaos`` (the processes and their kills), ``flows`` (the workload's workflows, imported by the
workers), ``ledger`` (what step bodies append), ``workload`` and ``interact`` (the driver),
``outcomes``, ``executions`` and ``inspect`` (the check), ``report``, ``cli``.
"""
