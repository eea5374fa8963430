"""Workflows of the updates tests: a cart answering updates while it waits, a sleep, a chain."""

from __future__ import annotations

from typing import Any

from workflows import continue_as_new, on_update, parallel, sleep, step, wait_for_signal, workflow

CALLS: list[str] = []  # every first run of the cart's "add" handler (replays run it too: see handled())


@step(name="updates_price")
def price(count: int) -> int:
    return count * 5


@workflow(name="updates_cart")
def cart(limit: int) -> dict[str, Any]:
    items: list[str] = []

    def add(item: str) -> int:
        items.append(item)
        return len(items)

    def check(item: Any) -> None:
        if not isinstance(item, str) or not item:
            raise ValueError("an item is a non-empty string")
        if len(items) >= limit:
            raise ValueError(f"the cart is full ({limit} items)")

    def broken(_: Any) -> None:
        raise RuntimeError("the handler broke")

    def durable(_: Any) -> int:
        return price(1)  # a step call: not allowed in a handler

    on_update("add", add, validator=check)
    on_update("broken", broken)
    on_update("durable", durable)
    on_update("count", lambda _: len(items))
    on_update("restart", lambda _: continue_as_new(limit))  # not allowed in a handler
    wait_for_signal("checkout")
    return {"items": items, "total": price(len(items))}


@workflow(name="updates_sleeper")
def sleeper() -> list[Any]:
    seen: list[Any] = []
    on_update("note", lambda value: seen.append(value) or len(seen))
    sleep("1h")
    return seen


@workflow(name="updates_late_handler")
def late_handler() -> list[Any]:
    seen: list[Any] = []
    sleep("1h")  # no handler yet: a request waits
    on_update("note", lambda value: seen.append(value) or len(seen))
    wait_for_signal("done")
    return seen


@workflow(name="updates_chain")
def chain(round_: int, seen: list[Any]) -> list[Any]:
    on_update("note", lambda value: seen.append(value) or round_)
    wait_for_signal("next")
    if round_ == 0:
        continue_as_new(1, seen)
    return seen


@workflow(name="updates_quick")
def quick() -> int:
    on_update("note", lambda value: value)
    return price(1)


@workflow(name="updates_echo")
def echo() -> dict[str, Any]:
    seen: list[Any] = []
    on_update("note", lambda value: seen.append(value) or len(seen))
    go = wait_for_signal("go")
    return {"seen": seen, "go": go}


@workflow(name="updates_async")
async def async_notes() -> dict[str, Any]:
    seen: list[Any] = []
    on_update("note", lambda value: seen.append(value) or len(seen))
    await sleep("1h")
    go = await wait_for_signal("go")
    return {"seen": seen, "go": go}


@step(name="updates_poke")
def poke(note: str) -> None:
    """Send this run an update from a step: it is handled at the workflow's next durable call."""
    from workflows.core.background.update_requests import send_update
    from workflows.core.execution.attempts import current_step
    from workflows.runtime import get_engine

    info = current_step()
    assert info is not None
    send_update(get_engine(), info.run_id, "note", note, f"poke-{note}")


@workflow(name="updates_patched")
def with_patch() -> dict[str, Any]:
    from workflows import patched

    seen: list[Any] = []
    on_update("note", lambda value: seen.append(value) or len(seen))
    parallel(poke.s("x"))  # a branch (never run in place): the update waits for it, then is handled at patched()
    new = patched("after-poke")
    go = wait_for_signal("go")
    return {"seen": seen, "new": new, "go": go}


@workflow(name="updates_race")
def race(with_step: bool) -> dict[str, Any]:
    """Notes taken while a first_of race waits: on a signal and an hour's timer, and a step if asked."""
    from workflows import first_of, signal, timer

    seen: list[Any] = []
    on_update("note", lambda value: seen.append(value) or len(seen))
    candidates = [signal("go"), timer("1h"), *([price.s(1)] if with_step else [])]
    won = first_of(*candidates)
    return {"won": won.index, "seen": list(seen)}
