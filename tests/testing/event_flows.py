"""Workflows of the events and progress tests: events set between steps and waits, a stream, its bounds."""

from __future__ import annotations

from typing import Any

from workflows import StreamFull, set_event, sleep, step, wait_for_signal, workflow, write_stream


@step(name="events_work")
def work(n: int) -> int:
    return n * 10


@workflow(name="events_order")
def order(n: int) -> dict[str, Any]:
    set_event("stage", "started")
    write_stream({"done": 0})
    value = work(n)
    set_event("stage", "worked")
    set_event("value", {"n": value, "list": [1, 2]})
    write_stream({"done": 1})
    sleep("1h")
    offset = write_stream({"done": 2})
    set_event("stage", "done")
    return {"value": value, "last_offset": offset}


@workflow(name="events_waiting")
def waiting() -> str:
    set_event("ready", True)
    name: str = wait_for_signal("go")
    set_event("answer", name)
    return name


@workflow(name="events_none")
def none() -> int:
    return work(1)


@workflow(name="events_flood")
def flood(count: int, size: int) -> dict[str, Any]:
    written, refused = 0, None
    for i in range(count):
        try:
            write_stream("x" * size)
            written += 1
        except StreamFull as exc:
            refused = (i, str(exc))
            break
    return {"written": written, "refused": refused}


@workflow(name="events_bad_key")
def bad_key(key: Any) -> None:
    set_event(key, 1)


@workflow(name="events_then_work")
def then_work(n: int) -> int:
    set_event("stage", "before")
    write_stream("a")
    write_stream("b")
    value = work(n)
    write_stream("c")
    set_event("stage", "after")
    return value


@step(name="events_async_add")
async def async_add(n: int) -> int:
    return n + 1


@workflow(name="events_async")
async def in_async(n: int) -> int:
    set_event("stage", "started")  # a plain call in an async workflow, like set_tags
    value = await async_add(n)
    write_stream(value)
    await sleep(5)
    set_event("stage", "done")
    return value
