"""A run's start options travel apart from the workflow's arguments (issue 25, item 4): a
workflow parameter named like an option is the workflow's; the old keywords still work, with
a DeprecationWarning, where they collide with nothing; value objects stand beside the keywords."""

from __future__ import annotations

import pytest

from tests.testing import options_flows as flows
from workflows import RetryPolicy, SchedulePolicy, StartOptions, apply_async, step
from workflows.core import registry
from workflows.errors import InvalidDebounce, RegistrationError
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def test_a_parameter_named_tags_is_the_workflows_argument(env: WorkflowEnv, recwarn: pytest.WarningsRecorder) -> None:
    run = flows.tagged_gift.start("o-1", tags=["gift", "eu"])
    assert env.run_until_complete(run) == "o-1:gift,eu"
    assert run.record().tags in ({}, None)  # no search tags: the keyword was the argument
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_options_then_start_keeps_both_apart(env: WorkflowEnv) -> None:
    run = flows.tagged_gift.options(tags={"shop": "eu"}, idempotency_key="k-1").start("o-2", tags=["gift"])
    assert env.run_until_complete(run) == "o-2:gift"
    assert run.record().tags == {"shop": "eu"}
    again = flows.tagged_gift.options(idempotency_key="k-1").start("o-2", tags=["other"])
    assert again.run_id == run.run_id  # same key, same run


def test_apply_async_takes_args_kwargs_and_options_like_celery(env: WorkflowEnv) -> None:
    run = flows.tagged_gift.apply_async(["o-3"], {"tags": ["x"]}, tags={"shop": "us"})
    assert env.run_until_complete(run) == "o-3:x"
    assert run.record().tags == {"shop": "us"}
    by_name = apply_async("options_plain", [1], idempotency_key="k-2")
    assert env.run_until_complete(by_name) == 2
    assert env.apply_async(flows.plain, [1], idempotency_key="k-2").run_id == by_name.run_id


def test_an_old_option_keyword_still_works_with_a_deprecation_warning(env: WorkflowEnv) -> None:
    with pytest.warns(DeprecationWarning, match=r"wf\.options\(tags=\.\.\.\)") as caught:
        run = flows.plain.start(1, tags={"shop": "eu"})
    assert caught[0].filename == __file__  # the warning points at the caller
    assert env.run_until_complete(run) == 2
    assert run.record().tags == {"shop": "eu"}
    with pytest.warns(DeprecationWarning):
        assert env.start(flows.plain, 5, idempotency_key="k-3").run_id == \
            flows.plain.options(idempotency_key="k-3").start(5).run_id


def test_start_options_are_checked_as_before(env: WorkflowEnv) -> None:
    with pytest.raises(InvalidDebounce):
        flows.plain.options(debounce_key="k").start(1)  # a key without a window
    with pytest.raises(TypeError):
        flows.plain.options(no_such_option=1)
    assert StartOptions(tags={"a": "b"}).replace(idempotency_key="k").idempotency_key == "k"


def test_a_retry_policy_stands_for_the_retry_keywords() -> None:
    with registry.scope():
        policy = RetryPolicy(retries=5, retry_delay=2.0, backoff=3.0, max_delay=60.0, jitter=0.0)
        defined = step(name="options_retry_policy", retry_policy=policy)(lambda: None)
        assert defined.definition.retry == policy
        with pytest.raises(RegistrationError, match="not both"):
            step(name="options_retry_both", retry_policy=policy, retries=2)(lambda: None)
        with pytest.raises(RegistrationError, match="RetryPolicy"):
            step(name="options_retry_bad", retry_policy={"retries": 2})(lambda: None)


def test_a_schedule_policy_stands_for_the_policy_keywords(env: WorkflowEnv) -> None:
    from workflows import create_schedule
    from workflows.errors import InvalidSchedule

    info = create_schedule(flows.plain, every="1h", args=[1],
                           policy=SchedulePolicy(overlap="buffer_one", catchup_window="1d", paused=True))
    assert (info.overlap, info.catchup_window, info.state) == ("buffer_one", 86400.0, "paused")
    with pytest.raises(InvalidSchedule, match="not both"):
        create_schedule(flows.plain, every="1h", args=[1], overlap="skip", paused=True, policy=SchedulePolicy())
