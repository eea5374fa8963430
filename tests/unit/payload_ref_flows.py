"""Workflows whose payloads go over a small payload threshold (driven by the testing kit)."""

from __future__ import annotations

from workflows import hook, parallel, step, wait_for_signal, workflow


@step
def double(text: str) -> str:
    return text + text


@step(inline=True)
def measure(text: str) -> int:
    return len(text)


@workflow
def large_everything(text: str) -> dict:
    doubled = double(text)                          # a large argument and a large result
    size = measure(doubled)                         # an inline step with a large argument
    branches = parallel(double.s(text), double.s("x"))
    signal = wait_for_signal("data")                # a large signal payload
    approval = hook("approve").wait()               # a large hook payload
    return {"doubled": doubled, "size": size, "branches": branches, "signal": signal, "approval": approval}
