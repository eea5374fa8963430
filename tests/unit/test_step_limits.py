"""``@step`` flow-control options: rates, keys, and what is refused at decoration time."""

from __future__ import annotations

import pytest

from workflows import step
from workflows.core.model.limits import key_value, parse_rate
from workflows.errors import RegistrationError


@pytest.mark.parametrize(("text", "per_second"), [
    ("20/s", 20.0), ("100/m", 100 / 60), ("5/10s", 0.5), ("1/h", 1 / 3600), (3, 3.0), ("2 / minute", 2 / 60)])
def test_rates(text: object, per_second: float) -> None:
    assert parse_rate(text) == pytest.approx(per_second)


@pytest.mark.parametrize("bad", ["20", "x/s", "0/s", "-1/s", "1/0s", True, None, 0, float("inf")])
def test_bad_rates_are_refused(bad: object) -> None:
    with pytest.raises(RegistrationError):
        parse_rate(bad)


def test_a_key_names_a_parameter_and_needs_its_limit() -> None:
    def charge(customer: str, cents: int) -> None: ...

    with pytest.raises(RegistrationError, match="not a parameter"):
        step(concurrency=1, concurrency_key="client", name="flow_t1")(charge)
    with pytest.raises(RegistrationError, match="needs concurrency"):
        step(concurrency_key="customer", name="flow_t2")(charge)
    with pytest.raises(RegistrationError, match="need rate"):
        step(burst=3, name="flow_t3")(charge)
    with pytest.raises(RegistrationError, match="from 1 to 1000"):
        step(concurrency=0, name="flow_t4")(charge)
    with pytest.raises(RegistrationError, match="cannot be inline"):
        step(rate="1/s", inline=True, name="flow_t5")(charge)


def test_a_limited_step_keeps_its_limits() -> None:
    def ship(order: dict, carrier: str = "ups") -> None: ...

    limited = step(concurrency=3, concurrency_key="carrier", rate="10/s", burst=5, name="flow_t6")(ship)
    limits = limited.definition.limits
    assert limits is not None and (limits.concurrency, limits.rate, limits.burst) == (3, 10.0, 5.0)
    assert key_value(ship, "carrier", [{"id": 1}], {}) == "ups"  # defaults count
    assert key_value(ship, "order", [{"b": 1, "a": 2}], {}) == '{"a":2,"b":1}'  # JSON, keys sorted
