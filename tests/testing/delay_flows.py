"""Workflows of the delayed start and child policy tests (issue 27, items 5 and 7)."""

from __future__ import annotations

from workflows import now, sleep, step, wait_for_signal, workflow


@step(name="delay_stamp")
def stamp(label: str) -> str:
    return label


@workflow(name="delay_report")
def report(label: str) -> dict[str, object]:
    """Records when it began (a deterministic value) and runs one step."""
    began = now().timestamp()
    return {"label": stamp(label), "began": began}


@workflow(name="delay_greeter")
def greeter() -> str:
    """Takes a signal sent before it started."""
    return str(wait_for_signal("name", timeout="1h"))


@workflow(name="delay_long_child", max_duration="2d")
def long_child(days: float) -> str:
    sleep(days * 86_400)
    return "done"


@workflow(name="delay_parent")
def parent(policy: str | None, wait: bool = False) -> str:
    """Starts a long child with ``policy`` and ends (after it, if ``wait``)."""
    child = long_child.options(parent_close_policy=policy).start(1)
    return str(child.result()) if wait else child.run_id


@workflow(name="delay_detaching_parent")
def detaching_parent() -> str:
    child = long_child.options(detached=True).start(1)
    return child.run_id


@workflow(name="delay_waits_on_detached")
def waits_on_detached() -> str:
    return str(long_child.options(detached=True).start(1).result())


@workflow(name="delay_parent_of_delayed")
def parent_of_delayed() -> str:
    """A child started an hour from now, waited for."""
    return str(report.options(delay="1h").start("child").result()["label"])


@workflow(name="delay_sleepy_parent")
def sleepy_parent(policy: str) -> str:
    """Starts a long child, then sleeps: the test cancels it meanwhile."""
    child = long_child.options(parent_close_policy=policy).start(1)
    sleep("1h")
    return child.run_id


@step(name="delay_slow_step")
def slow_step() -> str:
    return "stepped"


@workflow(name="delay_stepping_child")
def stepping_child() -> str:
    return str(slow_step())


@workflow(name="delay_parent_of_stepping")
def parent_of_stepping(policy: str) -> str:
    child = stepping_child.options(parent_close_policy=policy).start()
    sleep("1h")
    return child.run_id
