"""The vocabulary every room speaks: records, kinds and statuses, control flow, failures, names,
the registries of workflows and steps, and the pure rules (children, limits, priority, leases,
recovery, tokens, buckets, prices). Nothing here calls a port."""
