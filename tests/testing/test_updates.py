"""Updates (issue 27, item 2): handlers, validators, exactly-once, typed errors, in the kit."""

from __future__ import annotations

from typing import Any

import pytest

from tests.testing import update_flows as flows
from workflows import UpdateFailed, UpdateRefused, UpdateRunEnded, UpdateTimeout, update_run
from workflows.core.background.update_requests import lookup_answer
from workflows.core.model.embed import embed
from workflows.core.model.records import EventRecord, OpKind, SignalRecord
from workflows.core.replay.updates import REQUEST_NAME, request_key
from workflows.testing import WorkflowEnv


@pytest.fixture
def env() -> WorkflowEnv:
    with WorkflowEnv() as kit:
        yield kit


def updates_of(env: WorkflowEnv, run_id: str) -> list[tuple[int, str | None, str]]:
    return [(r.pos, r.name, r.status) for r in env.store.read_history(run_id) if r.kind == OpKind.UPDATE.value]


def test_a_handler_answers_while_the_run_waits_and_replays_give_the_same_state(env: WorkflowEnv) -> None:
    run = env.start(flows.cart, 2)
    assert run.update("add", "apple") == 1
    assert env.update(run, "add", "pear") == 2
    assert run.update("count") == 2
    env.signal(run, "checkout")
    # Each resume replayed the handlers from the history: the state is the one the answers saw.
    assert run.result() == {"items": ["apple", "pear"], "total": 10}
    assert updates_of(env, run.run_id) == [(0, "add", "completed"), (1, "add", "completed"),
                                           (2, "count", "completed")]


def test_a_validator_refuses_before_anything_is_recorded(env: WorkflowEnv) -> None:
    run = env.start(flows.cart, 1)
    with pytest.raises(UpdateRefused, match="non-empty string"):
        run.update("add", "")
    assert run.update("add", "apple") == 1
    with pytest.raises(UpdateRefused, match=r"the cart is full \(1 items\)"):
        run.update("add", "pear")
    with pytest.raises(UpdateRefused, match="no update handler 'nope'"):
        run.update("nope", 1)
    assert updates_of(env, run.run_id) == [(0, "add", "completed")]  # refusals are not in the history
    assert env.store.signals(run.run_id, REQUEST_NAME) == []  # and their requests are gone
    env.signal(run, "checkout")
    assert run.result()["items"] == ["apple"]


def test_a_failing_handler_fails_the_update_not_the_run(env: WorkflowEnv) -> None:
    run = env.start(flows.cart, 3)
    with pytest.raises(UpdateFailed, match="RuntimeError: the handler broke"):
        run.update("broken")
    with pytest.raises(UpdateFailed, match="DurableCallInUpdate"):
        run.update("durable")
    with pytest.raises(UpdateFailed, match="called continue_as_new"):
        run.update("restart")
    assert run.update("add", "apple") == 1
    env.signal(run, "checkout")
    assert run.result() == {"items": ["apple"], "total": 5}


def test_a_retry_with_the_same_id_returns_the_same_answer_and_runs_the_handler_once(env: WorkflowEnv) -> None:
    run = env.start(flows.cart, 5)
    assert run.update("add", "apple", update_id="order-1") == 1
    assert run.update("add", "apple", update_id="order-1") == 1  # answered already: not sent again
    # A retry stored after the answer (its first send's response lost meanwhile): never handled twice.
    request = env.store.signals(run.run_id, REQUEST_NAME)
    assert request == []
    assert run.update("add", "pear", update_id="order-2") == 2
    again = SignalRecord(run_id=run.run_id, signal_key=request_key("order-1"), name=REQUEST_NAME,
                         payload=embed({"id": "order-1", "name": "add"}, '"apple"'), sent_at=env.clock.now())
    assert env.store.put_update(again, run.run_id)
    assert run.update("count") == 2
    assert env.store.signals(run.run_id, REQUEST_NAME) == []  # the duplicate was dropped, unhandled
    env.signal(run, "checkout")
    assert run.result()["items"] == ["apple", "pear"]


def test_an_update_during_a_sleep_keeps_the_sleeps_due_time(env: WorkflowEnv) -> None:
    run = env.start(flows.sleeper)
    start = env.clock.now()
    env.advance("10m")
    assert run.update("note", "a") == 1
    assert env.clock.now() == start + 600  # answered without waiting for the sleep
    env.advance("20m")
    assert run.update("note", "b") == 2
    assert run.result() == ["a", "b"]
    assert env.clock.now() == start + 3600  # the sleep ended when it was due, not later


def test_a_timeout_raises_and_the_update_may_still_be_applied_later(env: WorkflowEnv) -> None:
    run = env.start(flows.late_handler)
    with pytest.raises(UpdateTimeout, match="may still apply it"):
        run.update("note", "early", update_id="early", timeout="10m")
    env.advance("1h")  # the handler is declared after the sleep: the stored request is handled
    answer = lookup_answer(env.store, run.run_id, "early")
    assert answer is not None and answer.status == "completed"
    assert run.update("note", "early", update_id="early") == 1  # the same id: the same answer
    env.signal(run, "done")
    assert run.result() == ["early"]


def test_a_run_that_ended_answers_with_a_typed_error(env: WorkflowEnv) -> None:
    run = env.start(flows.quick)
    assert run.result() == 5
    with pytest.raises(UpdateRunEnded, match="has ended"):
        run.update("note", 1)
    with pytest.raises(UpdateRunEnded):
        update_run(run.run_id, "note", 1, timeout=0)


def test_an_update_sent_again_after_the_run_ended_returns_its_stored_answer(env: WorkflowEnv) -> None:
    """docs/updates.md: a retry with an answered id is read from the run's history even after the run
    ended (a refusal or failure raised again), until the run's items expire; a new id: UpdateRunEnded."""
    from workflows.errors import RunNotFound

    run = env.start(flows.cart, 1)
    assert run.update("add", "apple", update_id="a-1") == 1
    with pytest.raises(UpdateRefused):
        run.update("add", "pear", update_id="a-2")  # the cart is full
    with pytest.raises(UpdateFailed):
        run.update("broken", update_id="a-3")
    env.signal(run, "checkout")
    assert run.result() == {"items": ["apple"], "total": 5}
    history = env.store.read_history(run.run_id)
    env.advance("10d")
    assert run.update("add", "apple", update_id="a-1") == 1
    assert update_run(run.run_id, "add", "apple", update_id="a-1", timeout=0) == 1
    with pytest.raises(UpdateRefused, match=r"the cart is full \(1 items\)"):
        update_run(run.run_id, "add", "pear", update_id="a-2")
    with pytest.raises(UpdateFailed, match="the handler broke"):
        update_run(run.run_id, "broken", update_id="a-3")
    with pytest.raises(UpdateRunEnded, match="has ended"):
        update_run(run.run_id, "add", "plum", update_id="a-4")
    assert env.store.read_history(run.run_id) == history  # nothing handled or stored again
    assert env.store.signals(run.run_id, REQUEST_NAME) == []
    env.advance("31d")  # past the retention (30 days): the run's item expired
    with pytest.raises(RunNotFound):
        update_run(run.run_id, "add", "apple", update_id="a-1")


def test_a_run_cancelled_before_it_answers_raises_run_ended(env: WorkflowEnv) -> None:
    run = env.start(flows.late_handler)
    with pytest.raises(UpdateTimeout):
        run.update("note", "x", update_id="x", timeout="1m")
    env.cancel(run)
    env.run_until_idle()
    with pytest.raises(UpdateRunEnded, match=r"has ended \(cancelled\)"):
        run.update("note", "x", update_id="x")
    with pytest.raises(UpdateRunEnded, match="ended \\(cancelled\\) before it answered update 'x'"):
        lookup_answer(env.store, run.run_id, "x")  # what a client polling for the answer gets


def test_updates_follow_a_continue_as_new_chain_once(env: WorkflowEnv) -> None:
    run = env.start(flows.chain, 0, [])
    assert run.update("note", "a", update_id="u1") == 0
    env.signal(run, "next")
    env.run_until_idle()
    assert run.update("note", "a", update_id="u1") == 0  # answered by the first run: not run again
    # A retry of u1 stored after the first run continued (its answer was not seen yet): never handled again.
    again = SignalRecord(run_id=run.run_id, signal_key=request_key("u1"), name=REQUEST_NAME,
                         payload=embed({"id": "u1", "name": "note"}, '"a"'), sent_at=env.clock.now())
    successor = env.store.get_run(run.run_id).continued_to
    assert successor and env.store.put_update(again, successor)
    assert run.update("note", "b") == 1  # the chain's current run answers new ones
    env.signal(run, "next")
    assert run.result() == ["a", "b"]  # the successor got ["a"] as an argument, then "b"


def test_the_cli_sends_an_update_and_prints_the_answer(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    from workflows.cli import commands as cli

    run = env.start(flows.cart, 2)
    assert run.update("add", "apple", update_id="cli-1") == 1
    capsys.readouterr()
    # The same id: the answer given (the kit drives no worker, so a new update would wait for one).
    assert cli.main(["runs", "update", run.run_id, "add", "--payload", '"apple"', "--id", "cli-1"]) == 0
    assert capsys.readouterr().out == "1\n"
    assert cli.main(["runs", "update", run.run_id, "add", "--payload", "{bad", "--timeout", "0"]) != 0
    assert "--payload" in capsys.readouterr().err
    assert cli.main(["runs", "show", run.run_id]) == 0 and cli.main(["runs", "events", run.run_id]) == 0
    assert "update" in capsys.readouterr().out  # the handled update is in the history shown
    env.signal(run, "checkout")
    run.result()
    assert cli.main(["runs", "update", run.run_id, "add", "--payload", '"pear"']) == 1
    assert "UpdateRunEnded" in capsys.readouterr().err


def test_a_wait_whose_position_an_update_took_first_replays_instead(env: WorkflowEnv) -> None:
    """Another resume records an update at the position this resume's signal wait is recording:
    the wait must not read the update's record as its signal; the resume re-reads and replays."""
    from workflows.core.model.records import event_seq
    from workflows.core.replay.updates import answer_seq

    run = env.start(flows.echo)
    env.run_until_idle()  # waiting for "go" at position 0
    reads: list[str] = []

    def race(request: str, apply: Any) -> Any:
        if request == "read signals":
            reads.append(request)
            if len(reads) == 2:  # the wait's read (after the frontier's read of requests): the other resume wins
                now = env.clock.now()
                won = EventRecord(run_id=run.run_id, seq=event_seq(0), kind="update", status="completed", at=now,
                                  name="note", data=embed({"id": "race"}, '"x"'))
                answer = EventRecord(run_id=run.run_id, seq=answer_seq("race"), kind="update",
                                     status="completed", at=now, name="race", data="1")
                gone = SignalRecord(run_id=run.run_id, signal_key=request_key("race"), name=REQUEST_NAME,
                                    payload=None, sent_at=now)
                assert env.store.answer_update(won, answer, gone)
        return apply()

    env.store.interceptor = race
    env.signal(run, "go", "yes")
    assert run.result() == {"seen": ["x"], "go": "yes"}
    assert updates_of(env, run.run_id) == [(0, "note", "completed")]


def test_an_exported_run_with_updates_replays_clean_and_a_missing_handler_is_non_determinism(
        env: WorkflowEnv) -> None:
    from workflows import NonDeterminismError, wait_for_signal, workflow
    from workflows.export import export_run
    from workflows.testing import redefinable, replay

    run = env.start(flows.echo)
    assert run.update("note", "x") == 1
    env.signal(run, "go", "yes")
    assert run.result() == {"seen": ["x"], "go": "yes"}
    export = export_run(env.store, run.run_id)
    assert replay(export).ending == "returned"
    with redefinable():
        @workflow(name="updates_echo")
        def changed() -> dict[str, Any]:
            return {"go": wait_for_signal("go")}  # the handler is gone

        with pytest.raises(NonDeterminismError, match="update note"):
            replay(export)


def test_handlers_work_in_an_async_workflow(env: WorkflowEnv) -> None:
    run = env.start(flows.async_notes)
    assert run.update("note", "a") == 1
    env.advance("1h")
    assert run.update("note", "b") == 2
    env.signal(run, "go", "yes")
    assert run.result() == {"seen": ["a", "b"], "go": "yes"}


def test_a_patch_decided_after_an_update_at_the_same_point_replays_the_same(env: WorkflowEnv) -> None:
    run = env.start(flows.with_patch)
    env.run_until_idle()  # the step sent the update; the run handled it at patched()'s position, then waits
    assert updates_of(env, run.run_id) == [(1, "note", "completed")]
    env.signal(run, "go", "yes")  # a replay: patched() must see its marker after the update
    assert run.result() == {"seen": ["x"], "new": True, "go": "yes"}


def send_after_the_frontiers_read(env: WorkflowEnv, run_id: str, go: Any) -> None:
    """Send update "x" (id a) now; then, right after the next resume's frontier has read the requests
    waiting, update "y" (id b) and the signal "go" with ``go``."""
    from workflows.client import signal_run
    from workflows.core.background.update_requests import send_update

    send_update(env.engine, run_id, "note", "x", "a")
    reads: list[str] = []

    def late(request: str, apply: Any) -> Any:
        result = apply()
        if request == "read signals" and not reads:
            reads.append(request)  # the frontier's read of requests is done: the client sends now
            send_update(env.engine, run_id, "note", "y", "b")
            signal_run(env.engine, run_id, "go", go)
        return result

    env.store.interceptor = late


def test_an_update_sent_before_the_signal_a_wait_takes_is_handled_before_it(env: WorkflowEnv) -> None:
    """The resume reads the requests waiting (only "a"); then the client sends update "b" and the
    signal; the wait reads the signal: "b" must be handled before it (found by seed 945)."""
    run = env.start(flows.echo)
    env.run_until_idle()
    send_after_the_frontiers_read(env, run.run_id, "yes")
    assert run.result() == {"seen": ["x", "y"], "go": "yes"}
    assert updates_of(env, run.run_id) == [(0, "note", "completed"), (1, "note", "completed")]


def test_an_update_sent_after_another_is_handled_after_it_whatever_the_senders_clocks(env: WorkflowEnv) -> None:
    """A client restarted with its clock behind sends "y" after "x" was stored: both wait for the run
    together, and "x" is handled first (simulator seed 25948 handled "y" first: the order was the
    senders' clocks)."""
    from workflows.core.background.update_requests import send_update

    run = env.start(flows.echo)
    env.driver.settle()
    send_update(env.engine, run.run_id, "note", "x", "a")
    env.clock.time -= 3.1  # the next sender's clock is behind the first's
    send_update(env.engine, run.run_id, "note", "y", "b")
    env.signal(run, "go", "now")
    assert run.result() == {"seen": ["x", "y"], "go": "now"}


def test_a_request_whose_put_lost_a_conflict_while_the_clock_moved_is_written_again(env: WorkflowEnv) -> None:
    """DynamoDB cancels a transaction with a reason per item: the request's put in a conflict with
    another transaction (not its condition) and the anchor's clock passed by a signal stored
    meanwhile. Only a failed condition on the put means "stored already"; this request is written
    again, after the signal."""
    from workflows.memory.tables import ConditionFailed

    run = env.start(flows.echo)
    env.driver.settle()
    store = env.store
    refused: list[str] = []

    def conflicted(name: str, apply: Any) -> Any:
        if name == "put update" and not refused:
            env.clock.advance(1.0)  # another sender, a second later, stores a signal: the clock moves on
            refused.append(store.put_signal(run.run_id, "go", '"now"').signal_key)
            raise ConditionFailed(["TransactionConflict", "ConditionalCheckFailed"])
        return apply()

    store.interceptor = conflicted
    request = SignalRecord(run_id=run.run_id, signal_key=request_key("u1"), name=REQUEST_NAME,
                           payload=embed({"id": "u1", "name": "note"}, '"x"'), sent_at=store.now())
    assert store.put_update(request, run.run_id) is True
    store.interceptor = None
    (stored,) = store.signals(run.run_id, REQUEST_NAME)
    assert stored.order_number > int(refused[0].split("#")[1])


def test_a_fork_answers_the_updates_it_copied_as_the_original_did(env: WorkflowEnv) -> None:
    run = env.start(flows.cart, 3)
    assert run.update("add", "apple", update_id="order-1") == 1
    fork = run.fork(1)  # copies the update record at position 0
    # The fork replays that update, so it counts it as answered: the same id gets the same answer,
    # not a request dropped as a retry and a caller left to time out.
    assert fork.update("add", "apple", update_id="order-1", timeout="5s") == 1
    assert fork.update("add", "pear") == 2
    env.signal(fork, "checkout")
    assert fork.result() == {"items": ["apple", "pear"], "total": 10}


def test_a_race_without_step_candidates_answers_updates_while_it_waits(env: WorkflowEnv) -> None:
    run = env.start(flows.race, False)
    start = env.clock.now()
    env.advance("10m")
    assert run.update("note", "a") == 1
    assert env.clock.now() == start + 600  # answered at once, not when the race is decided
    assert run.result() == {"won": 1, "seen": ["a"]}  # the timer won
    assert env.clock.now() == start + 3600  # at its due time: the update did not move it


def test_an_update_sent_before_a_races_winning_signal_is_handled_before_the_race_returns(env: WorkflowEnv) -> None:
    from workflows.client import signal_run
    from workflows.core.background.update_requests import send_update

    run = env.start(flows.race, False)
    env.driver.settle()  # the race waits (no time skipped: its timer is not due)
    send_update(env.engine, run.run_id, "note", "x", "a")
    signal_run(env.engine, run.run_id, "go", "now")
    assert run.result() == {"won": 0, "seen": ["x"]}


def test_a_race_with_a_step_candidate_handles_updates_once_it_is_decided(env: WorkflowEnv) -> None:
    run = env.start(flows.race, True)
    env.run_until_idle()  # the step candidate ran and won: the race is decided, the run ended
    assert run.result() == {"won": 2, "seen": []}


def test_an_update_sent_just_before_a_races_winning_signal_is_handled_before_the_race_returns(
        env: WorkflowEnv) -> None:
    """The race's resume reads the requests waiting (only "a"); then the client sends update "b" and the
    signal; the race reads the signal: "b" must be handled before the race returns it (seed 12806)."""
    run = env.start(flows.race, False)
    env.driver.settle()
    send_after_the_frontiers_read(env, run.run_id, "now")
    assert run.result() == {"won": 0, "seen": ["x", "y"]}


def test_a_lease_renewed_after_updates_moved_the_wait_on_names_the_stored_cursor(env: WorkflowEnv) -> None:
    """Updates handled at a wait move the replay's cursor on, not the stored one: a lease renewal due
    meanwhile must name the stored cursor, or it is refused and the resume drops the run it holds
    (the reconciler then recovers it, counted; simulator seed 17795)."""
    from workflows.core.background.update_requests import send_update

    run = env.start(flows.echo)
    env.driver.settle()
    send_update(env.engine, run.run_id, "note", "x", "a")
    send_update(env.engine, run.run_id, "note", "y", "b")

    def slow(request: str, apply: Any) -> Any:
        if request == "answer update":  # each handled update takes 40 % of a lease: a renewal comes due
            env.clock.advance(env.engine.settings.lease_seconds * 0.4)
        return apply()

    env.store.interceptor = slow
    env.driver.settle()
    env.store.interceptor = None
    record = run.record()
    assert (record.status, record.lease_expires_at, record.recoveries) == ("suspended", None, 0)
    env.signal(run, "go", "yes")
    assert run.result() == {"seen": ["x", "y"], "go": "yes"}
