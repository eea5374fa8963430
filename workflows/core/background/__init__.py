"""Work on runs from outside their replay: beat firing schedules and timers, the sweeper that
recovers expired leases, orphaned payloads, forks and reruns, and update requests."""
