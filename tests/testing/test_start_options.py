"""A run's start options travel apart from the workflow's arguments (issue 25, item 4): a
workflow parameter named like an option is the workflow's; the old keywords still work, with
a DeprecationWarning, where they collide with nothing; value objects stand beside the keywords."""

from __future__ import annotations

import pytest

from tests.testing import options_flows as flows
from workflows import RetryPolicy, SchedulePolicy, StartOptions, apply_async, step
from workflows.core.model import registry
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


def test_a_timetable_stands_for_the_timetable_keywords(env: WorkflowEnv) -> None:
    from workflows import Timetable, create_schedule, update_schedule
    from workflows.errors import InvalidArguments, InvalidSchedule

    info = create_schedule(flows.plain, args=[1], timetable=Timetable(every="1h", timezone="Europe/Paris"),
                           policy=SchedulePolicy(overlap="buffer_all"))
    assert (info.every, info.timezone, info.overlap) == (3600.0, "Europe/Paris", "buffer_all")
    assert create_schedule(flows.plain, every="1h", args=[1], overlap="buffer_all").every == 3600.0  # the keywords
    with pytest.raises(InvalidSchedule, match="not both"):
        create_schedule(flows.plain, args=[1], timetable=Timetable(every="1h"), every="2h")
    with pytest.raises(InvalidSchedule, match="timetable must be a Timetable"):
        create_schedule(flows.plain, args=[1], timetable={"every": "1h"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArguments, match="unknown keyword.*no_such_option"):
        create_schedule(flows.plain, every="1h", args=[1], no_such_option=1)  # type: ignore[call-arg]
    assert update_schedule(info.schedule_id, every="2h", args=[5]).every == 7200.0
    assert update_schedule(info.schedule_id, overlap="skip").args == [5]
    with pytest.raises(InvalidArguments, match="paused"):  # pause_schedule does that
        update_schedule(info.schedule_id, paused=True)  # type: ignore[call-arg]


def test_a_time_range_bounds_the_listings_and_the_old_keywords_warn(env: WorkflowEnv) -> None:
    from workflows import TimeRange, count_runs, list_run_summaries, list_runs
    from workflows.errors import InvalidArguments

    run = flows.plain.start(1)
    env.run_until_complete(run)
    created = run.record().created_at
    inside, after = TimeRange(since=created - 1, until=created + 1), TimeRange(since=created + 1)
    assert [r.run_id for r in list_runs(workflow=flows.plain, created=inside)] == [run.run_id]
    assert list(list_runs(workflow=flows.plain, created=after)) == []
    assert [r.run_id for r in list_run_summaries(status="completed", created=inside)] == [run.run_id]
    assert count_runs("completed", created=inside) == {"completed": (1, False)}
    with pytest.warns(DeprecationWarning, match=r"created=TimeRange\(since=\.\.\.\)") as caught:
        assert list(list_runs(workflow=flows.plain, since=created + 1)) == []
    assert caught[0].filename == __file__  # the warning points at the caller
    with pytest.warns(DeprecationWarning, match="list_run_summaries"):
        assert [r.run_id for r in list_run_summaries(status="completed", until=created + 1)] == [run.run_id]
    with pytest.warns(DeprecationWarning, match="count_runs"):
        assert count_runs("completed", since=created + 1) == {"completed": (0, False)}
    with pytest.raises(InvalidArguments, match="not both"), pytest.warns(DeprecationWarning):
        list_runs(created=inside, since=created)
    with pytest.raises(InvalidArguments, match="unknown keyword"):
        list_runs(no_such_filter=1)


def test_the_typed_keywords_are_the_value_objects_fields() -> None:
    from workflows import schedules

    both = schedules.TIMETABLE_KEYWORDS | schedules.POLICY_KEYWORDS
    assert set(schedules.ScheduleKeywords.__annotations__) == both
    assert schedules.UPDATABLE == both - {"paused"} | {"workflow", "args", "kwargs"}
