"""Workflows the dashboard's browser tests start; workers import this module by name."""

from __future__ import annotations

from tests.e2e.flows import bump, counter_dir
from workflows import hook, step, workflow


@step(retries=2, retry_delay=0.1, backoff=1.0)
def always_fails(tag: str) -> str:
    """Fails every attempt, with HTML in its error."""
    bump(tag)
    raise RuntimeError(f"<b>boom</b> in {tag}")


@workflow
def doomed(tag: str) -> str:
    """Fails after three attempts of its one step."""
    return always_fails(tag)


@step
def shout(text: str) -> str:
    return text


@workflow
def echo(text: str) -> str:
    """Returns its argument through a step (a payload of the test's choosing)."""
    return shout(text)


@step
def hand_over(tag: str, token: str) -> None:
    """Give the token to the test through a file: no recorded result or argument holds it."""
    (counter_dir() / f"token-{tag}").write_text(token)


@workflow
def quiet_approval(tag: str) -> object:
    """A hook whose token is recorded nowhere in the run's history."""
    approval = hook("approve", timeout=120)
    hand_over(tag, approval.token)
    return approval.wait()
