"""Child workflows and continue-as-new.

``report`` starts one linked child run per region and waits for each durably;
``paginate`` walks pages with continue-as-new so each run's history stays short.
Run it on the embedded local stack:  python -m examples.children
"""

from __future__ import annotations

from workflows import continue_as_new, step, workflow


@step
def sales(region: str) -> int:
    """Fetch one region's sales."""
    return {"eu": 120, "us": 300, "apac": 80}[region]


@workflow
def region_total(region: str) -> int:
    """One region, as its own run."""
    return sales(region)


@workflow
def report(regions: list) -> dict:
    """Start a child per region (they run in parallel), then collect their results."""
    children = [region_total.start(region) for region in regions]
    return {region: child.result() for region, child in zip(regions, children, strict=True)}


@step
def fetch_page(page: int) -> list:
    """One page of records (three pages in all)."""
    return list(range(page * 10, page * 10 + 10)) if page < 3 else []


@workflow
def paginate(page: int, running_total: int) -> int:
    """Sum every page; each page is a new run linked to the previous one."""
    rows = fetch_page(page)
    if not rows:
        return running_total
    continue_as_new(page + 1, running_total + sum(rows))
    return running_total  # not reached: continue_as_new ends this run


if __name__ == "__main__":
    from workflows.local.embedded import embedded_stack

    with embedded_stack():
        run = report.start(["eu", "us", "apac"])
        print("report:", run.result(timeout=60), "children:", [c.run_id for c in run.children()])
        chain = paginate.start(0, 0)
        print("paginate:", chain.result(timeout=60), "runs in chain:", len(chain.chain()))
