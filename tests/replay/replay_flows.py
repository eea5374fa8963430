"""Workflows for the replay unit tests: every op kind, importable by name."""

from __future__ import annotations

from typing import Any

from workflows import continue_as_new, hook, parallel, sleep, step, wait_for_signal, workflow
from workflows.core.execution.attempts import current_step
from workflows.errors import WaitTimeout

#: Hook tokens handed out by :func:`publish`.
TOKENS: dict[str, str] = {}
#: How many times each step body ran, by label.
RAN: dict[str, int] = {}


def ran(label: str) -> None:
    RAN[label] = RAN.get(label, 0) + 1


@step
def replay_double(x: int) -> int:
    ran(f"double{x}")
    return 2 * x


@step(inline=True)
def replay_inc(x: int) -> int:
    ran(f"inc{x}")
    return x + 1


@step(inline=True)
def replay_publish(key: str, token: str) -> None:
    TOKENS[key] = token


@workflow
def replay_every_op(key: str) -> dict[str, Any]:
    a = replay_double(1)
    b = replay_inc(a)
    sleep(30)
    approval = hook("approve", timeout=600)
    replay_publish(key, approval.token)
    decision = approval.wait()
    try:
        signal = wait_for_signal("go", timeout=60)
    except WaitTimeout:
        signal = "timed out"
    c, d = parallel(replay_double.s(10), replay_double.s(20))
    child = replay_child.start(b)
    return {"a": a, "b": b, "decision": decision, "signal": signal, "fan": [c, d], "child": child.result()}


@workflow
def replay_child(x: int) -> int:
    return replay_inc(x)


@workflow
def replay_chain(n: int) -> int:
    value = replay_inc(n)
    if n > 0:
        continue_as_new(n - 1)
    return value


@workflow
def replay_changed(flag: bool) -> int:
    return replay_double(1) if flag else replay_inc(1)


#: Called by :func:`replay_long_step` with its argument, if set (a test's view of "meanwhile").
MEANWHILE: list[Any] = []


@step(inline=True)
def replay_long_step(i: int) -> int:
    ran(f"long{i}")
    for action in MEANWHILE:
        action(i)
    return i


@workflow
def replay_inline_chain(n: int) -> int:
    return sum(replay_long_step(i) for i in range(n))


@workflow(max_duration=25)
def replay_inline_chain_deadline(n: int) -> int:
    return sum(replay_long_step(i) for i in range(n))




@workflow
def replay_child_first(x: int) -> int:
    return replay_child.start(x).result()


@workflow
def replay_ten(n: int) -> int:
    total = 0
    for _ in range(n):
        total = replay_double(total)
    return total


@workflow
def replay_ten_inline(n: int) -> int:
    total = 0
    for _ in range(n):
        total = replay_inc(total)
    return total


@workflow
def replay_fan(n: int) -> list[int]:
    return parallel(*(replay_double.s(i) for i in range(n)))




@step(retries=3, retry_delay=5.0, backoff=1.0, jitter=0.0)
def replay_flaky(x: int) -> int:
    """Fails its first attempt, then doubles ``x``."""
    info = current_step()
    ran(f"flaky{x}#{info.attempt if info else 0}")
    if info is not None and info.attempt == 1:
        raise RuntimeError("the first attempt fails")
    return 2 * x


@workflow
def replay_fan_flaky(n: int) -> list[int]:
    return parallel(*(replay_flaky.s(i) for i in range(n)))


@workflow
def replay_one_flaky(x: int) -> int:
    return replay_flaky(x)


@step(concurrency=1, retries=3, retry_delay=5.0, backoff=1.0, jitter=0.0)
def replay_limited_flaky(x: int) -> int:
    """:func:`replay_flaky` with a concurrency slot."""
    info = current_step()
    ran(f"limited_flaky{x}#{info.attempt if info else 0}")
    if info is not None and info.attempt == 1:
        raise RuntimeError("the first attempt fails")
    return 2 * x


@workflow
def replay_one_limited_flaky(x: int) -> int:
    return replay_limited_flaky(x)


@step(retries=1, retry_delay=0.1)
def replay_huge_error() -> None:
    raise RuntimeError("x" * 500_000)


@step(inline=True, retries=1, retry_delay=0.1)
def replay_huge_error_inline() -> None:
    raise RuntimeError("y" * 500_000)


@workflow
def replay_huge_errors(inline: bool) -> int:
    try:
        replay_huge_error_inline() if inline else replay_huge_error()
    except Exception as exc:  # the step failed: its (cut) error reaches the workflow
        return len(str(exc))
    return 0


@step(inline=True, retries=3, retry_delay=5.0, backoff=1.0, jitter=0.0)
def replay_inline_flaky(x: int) -> int:
    """An inline step that fails its first attempt, then doubles ``x``."""
    info = current_step()
    ran(f"inline_flaky{x}#{info.attempt if info else 0}")
    if info is not None and info.attempt == 1:
        raise RuntimeError("the first attempt fails")
    return 2 * x


@workflow
def replay_one_inline_flaky(x: int) -> int:
    return replay_inline_flaky(x)
