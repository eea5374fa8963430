"""What a run passes before its first op, and whether this worker serves it: delayed starts,
debounce windows, workflow-level limits, code versions and deferral."""
