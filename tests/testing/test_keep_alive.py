"""History and join items are written expiring and kept alive while their run lives
(docs/retention.md, "Written expiring, kept alive"), in the testing kit's deleting world:
TTL deletes an item at its earliest moment as the virtual clock moves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.testing import lineage_flows as chains
from tests.testing import payload_expiry_flows as flows
from tests.unit import tag_flows
from workflows.core.replay.history_cache import HistoryCache
from workflows.core.storage import retention
from workflows.core.storage.plans import A, Put, Set, Update, plan
from workflows.core.storage.retention import expiring, keep_alive_age, write_expiry
from workflows.errors import ConfigurationError
from workflows.settings import Settings
from workflows.testing import WorkflowEnv

DAY = 86_400.0
SETTINGS = Settings(retention=30 * DAY)  # and the default horizon, 14 days


@pytest.fixture
def env() -> Iterator[WorkflowEnv]:
    flows.CALLS.clear()
    with WorkflowEnv(settings=SETTINGS) as kit:
        yield kit


def history_ttls(env: WorkflowEnv, run_id: str) -> list[float | None]:
    return [i.get("retain_until") for (r, _), i in env.store.events.items.items() if r == run_id]


def test_a_step_record_is_written_expiring_retention_and_horizon_later(env: WorkflowEnv) -> None:
    run = env.start(flows.expiry_grow_then_sleep, "ab", 1)
    written = env.clock.now()
    env.driver.settle()
    (ttl,) = history_ttls(env, run.run_id)  # the step's record (the sleep is not recorded yet)
    assert ttl == write_expiry(written, SETTINGS) == int(written + 44 * DAY)
    assert env.store.find_run(run.run_id).retain_until is None  # the live run's item carries none


def test_a_run_asleep_past_its_items_first_expiry_keeps_its_history(env: WorkflowEnv) -> None:
    """Written at day 0, the step's record would expire at day 44; the run wakes at day 60 in a worker
    that never saw it: beat's keep-alive pass renewed it, so the replay finds it and the step is not re-run."""
    run = env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.advance("59d")
    assert all(ttl is not None and ttl > env.clock.now() for ttl in history_ttls(env, run.run_id))
    env.engine.cache = HistoryCache(env.store)  # a cold worker
    assert env.run_until_complete(run) == 6
    assert flows.CALLS["expiry_grow"] == 1


def test_without_the_keep_alive_pass_ttl_deletes_a_sleeping_runs_history(env: WorkflowEnv,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """What the pass prevents: with it off, the step's record goes at day 44 and the run, woken at
    day 60 in a cold worker, runs its step a second time."""
    monkeypatch.setattr(retention, "keep_runs_alive", lambda engine, budget=None: 0)
    monkeypatch.setattr("workflows.testing.driver.keep_runs_alive", lambda engine, budget=None: 0)
    run = env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.advance("59d")
    assert history_ttls(env, run.run_id) == []
    env.engine.cache = HistoryCache(env.store)  # a cold worker wakes it at day 60
    env.advance("2d")
    broken = env.store.find_run(run.run_id)
    assert broken.status == "suspended" and broken.recoveries >= 1  # its replays contend; it is never done


def test_a_live_chains_first_run_keeps_its_history(env: WorkflowEnv) -> None:
    """The first run of a continue-as-new chain ended ``continued`` and has no TTL while the chain
    lives: its history is kept alive with it (a fork of it, or its page, must find it whole)."""
    first = env.start(chains.lineage_daily, 60)
    env.advance("59d")
    ttls = history_ttls(env, first.run_id)
    assert ttls and all(ttl is not None and ttl > env.clock.now() + SETTINGS.retention for ttl in ttls)


def test_keep_alive_never_moves_a_ttl_in_nor_adds_one(env: WorkflowEnv) -> None:
    run = env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.driver.settle()
    store, now = env.store, env.clock.now()
    key = next(k for k in store.events.items if k[0] == run.run_id)
    store.events.items[key]["retain_until"] = now + 900 * DAY  # pushed out further by someone
    store.commit(plan("put", Put("history", {"run_id": run.run_id, "seq": 7_000_999, "kind": "step",
                                             "retain_until": None})))
    store.events.items[(run.run_id, 7_000_999)].pop("retain_until")  # as written before this release
    store.commit(plan("put", Put("history", {"run_id": run.run_id, "seq": 8_000_999, "kind": "step",
                                             "retain_until": int(now + DAY)})))
    assert not store.keep_run_alive(run.run_id, now, int(now + 50 * DAY))  # created since: nothing to renew
    env.clock.advance(keep_alive_age(SETTINGS))
    renewed = env.clock.now()
    assert store.keep_run_alive(run.run_id, renewed, int(now + 50 * DAY))
    assert store.events.items[key]["retain_until"] == now + 900 * DAY  # never moved in
    assert "retain_until" not in store.events.items[(run.run_id, 7_000_999)]  # none added
    assert store.events.items[(run.run_id, 8_000_999)]["retain_until"] == int(now + 50 * DAY)  # renewed
    assert store.find_run(run.run_id).retain_until is None
    assert not store.keep_run_alive(run.run_id, renewed, int(now + 60 * DAY))  # renewed at that moment


def test_an_ended_run_is_not_kept_alive(env: WorkflowEnv) -> None:
    run = env.start(flows.expiry_grow_then_sleep, "ab", 1)
    env.run_until_complete(run)
    now = env.clock.now()
    assert not env.store.keep_run_alive(run.run_id, now + DAY, int(now + 50 * DAY))


def test_expiring_sets_the_ttl_of_history_and_join_writes_only() -> None:
    written = plan("w", Put("history", {"run_id": "r", "seq": 999}), Update("joins", ("r#0", 1), (Set("n", 1),)),
                   Update("runs", ("r",), (Set("cursor", 1),), A("cursor") < 1),
                   Put("history", {"run_id": "r", "seq": 1999, "retain_until": 5}),
                   Update("joins", ("r#0", 2), (Set("retain_until", 6),)))
    ops = expiring(written, 100).ops
    assert ops[0].item["retain_until"] == 100
    assert ops[1].actions[-1] == Set("retain_until", 100)
    assert ops[2] == written.ops[2]  # the run item: a live run's carries no TTL
    assert ops[3].item["retain_until"] == 5 and ops[4].actions == (Set("retain_until", 6),)  # set by the write
    assert expiring(written, None) is written  # retention off


@pytest.mark.parametrize(("text", "seconds"), [(None, 14 * DAY), ("3d", 3 * DAY), ("2h", 7200.0)])
def test_the_horizon_setting(text: str | None, seconds: float) -> None:
    env = {} if text is None else {"WORKFLOWS_RETENTION_HORIZON": text}
    assert Settings.from_env(env).retention_horizon == seconds


@pytest.mark.parametrize(("text", "message"), [("1h", "at least 2h"), ("soon", "WORKFLOWS_RETENTION_HORIZON")])
def test_a_bad_horizon_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings.from_env({"WORKFLOWS_RETENTION_HORIZON": text})


def test_a_run_with_nothing_written_without_a_ttl_ends_out_of_the_retention_index() -> None:
    """What sends an ending run to beat's sweep: anything written without a TTL (a hook, a tag, an
    idempotency key, a place in a chain, payloads in the bucket), or an end half a horizon or more after
    its items were last renewed (or written)."""
    from workflows.core.model.records import RunRecord
    from workflows.core.storage.retention import needs_sweep

    created, STEPS = 1_800_000_000.0, frozenset({"step", "sleep", "signal", "parallel"})
    plain = RunRecord(run_id="r", workflow="w", status="running", created_at=created)
    end = created + keep_alive_age(SETTINGS) - 1

    def swept(run: RunRecord = plain, *, at: float = end, status: str = "completed", ops: frozenset[str] = STEPS,
              bucket: bool = False, settings: Settings = SETTINGS) -> bool:
        return needs_sweep(run, status, at, settings, ops=set(ops), bucket=bucket)

    assert not swept()
    assert swept(ops=STEPS | {"hook"}) and swept(ops=STEPS | {"tags"})  # a hook's token, tags set by the run
    assert swept(bucket=True) and swept(status="continued")
    assert swept(RunRecord(**{**vars(plain), "tags": {"a": "b"}}))
    assert swept(RunRecord(**{**vars(plain), "idempotency_key": "k"}))
    assert swept(RunRecord(**{**vars(plain), "chain_head": "h"}))
    assert swept(at=created + keep_alive_age(SETTINGS))  # its items may expire too soon: stamp them
    assert not swept(RunRecord(**{**vars(plain), "stamped_at": created + DAY}), at=end + DAY)  # renewed since
    assert swept(settings=Settings(retention=None)) is True  # nothing expires: the index is not written anyway


def test_a_pending_signal_is_kept_alive_with_its_chain(env: WorkflowEnv) -> None:
    """Signals are written expiring too: one the chain has not taken yet (kept under the chain's first
    run) is renewed by the keep-alive pass with that run."""
    run = env.start(chains.lineage_daily_then_signal, 1)  # continues at day 1, then waits 30 days for "done"
    env.advance("2d")
    env.signal(run, "other", "x")  # stored under the chain's first run; the waiting run does not take it
    (written,) = [i["retain_until"] for (r, _), i in env.store.signal_items.items.items() if r == run.run_id]
    assert written == write_expiry(env.clock.now(), SETTINGS)
    env.advance("25d")
    (renewed,) = [i["retain_until"] for (r, _), i in env.store.signal_items.items.items() if r == run.run_id]
    assert renewed > written and renewed > env.clock.now() + SETTINGS.retention


def test_a_run_that_set_tags_itself_is_swept(env: WorkflowEnv) -> None:
    """Tags set by the run (``set_tags``) write index items without a TTL, which the run's record of
    the start does not show: the end finds the op in the history and sends the run to the sweep, which
    stamps them (simulator seed 13: an end that went by the start's tags left them without a TTL)."""
    run = env.start(tag_flows.tag_order, "o-1")
    assert env.run_until_complete(run) == {"stage": "paid", "order": "o-1"}
    ended = env.store.runs.items[(run.run_id,)]
    assert "retain_shard" in ended  # in the retention index
    env.advance("1h")  # beat's sweep stamps the tag index items
    tags = [i for i in env.store.run_tags.items.values() if i["run_id"] == run.run_id]
    assert tags and all(i.get("retain_until") == ended["retain_until"] for i in tags)


def test_runs_show_says_when_a_runs_items_expire(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    from workflows.cli import commands as cli

    run = env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.advance("10d")  # renewed by beat's keep-alive pass on the way
    capsys.readouterr()
    assert cli.main(["runs", "show", run.run_id]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("expires"))
    assert "never while it lives (history renewed by beat; last 2027-01-" in line, line
    env.run_until_complete(run)
    assert cli.main(["runs", "show", run.run_id]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("expires"))
    assert line.startswith("expires   2027-04-15") and "(the run; its history up to the horizon later)" in line, line


def test_a_run_woken_early_from_a_long_wait_keeps_what_it_writes_after(env: WorkflowEnv) -> None:
    """Renewals follow the run's life, not the deadline of the wait it was in: a run renewed during a
    wait with a year-long timeout, woken at day 10, records a step, then waits with no deadline; at
    day 60 a cold worker finds that record (written at day 10 to expire at day 54, renewed since). A
    renewal that took the wait's deadline as the run's next renewal lost it."""
    run = env.start(flows.expiry_wait_then_live_on, "ab")
    env.advance("10d")  # renewed on the way, while it waits
    assert env.store.find_run(run.run_id).stamped_at is not None
    env.signal(run, "early")
    env.advance("50d")
    assert all(ttl is not None and ttl > env.clock.now() for ttl in history_ttls(env, run.run_id))
    env.engine.cache = HistoryCache(env.store)  # a cold worker
    env.signal(run, "later")
    assert env.run_until_complete(run) == 4
    assert flows.CALLS["expiry_grow"] == 1


def test_an_operator_renews_live_runs_items_after_beat_was_down(env: WorkflowEnv,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Beat down from day 0 to day 43.5: the step's record, written at day 0, expires at day 44.
    ``workflows retention keep-alive`` renews it then (a whole pass, whatever beat's schedule), so the
    run, woken at day 60 in a cold worker, does not run its step again."""
    from workflows.cli.commands import main

    run = env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.driver.settle()
    env.clock.advance(43.5 * DAY)  # no beat: no keep-alive pass on the way
    capsys.readouterr()
    assert main(["retention", "keep-alive"]) == 0
    assert "renewed 1 live run(s)" in capsys.readouterr().out
    assert all(ttl is not None and ttl >= env.clock.now() + 30 * DAY for ttl in history_ttls(env, run.run_id))
    env.clock.advance(1 * DAY)
    env.driver.delete_expired()  # TTL deletes what was due by day 44.5
    env.engine.cache = HistoryCache(env.store)  # a cold worker
    assert env.run_until_complete(run) == 6
    assert flows.CALLS["expiry_grow"] == 1


def test_an_operator_stamps_ended_runs_with_their_ttl(env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    """``workflows retention sweep`` does beat's retention sweep now: a tagged run's index items get the
    run's TTL."""
    from workflows.cli.commands import main

    run = env.start(tag_flows.tag_order, "o-2")
    assert env.run_until_complete(run) == {"stage": "paid", "order": "o-2"}
    env.clock.advance(3600)  # past the retention delay, no beat tick
    tags = [i for i in env.store.run_tags.items.values() if i["run_id"] == run.run_id]
    assert tags and not any("retain_until" in i for i in tags)
    capsys.readouterr()
    assert main(["retention", "sweep"]) == 0
    assert "stamped 1 ended run(s) with their TTL" in capsys.readouterr().out
    ttl = env.store.runs.items[(run.run_id,)]["retain_until"]
    assert all(i.get("retain_until") == ttl for i in env.store.run_tags.items.values() if i["run_id"] == run.run_id)
    assert main(["retention", "sweep"]) == 0
    assert "stamped 0 ended run(s)" in capsys.readouterr().out


def test_the_operators_sweep_stamps_runs_ended_at_least_a_lease_ago_as_its_help_says(
        env: WorkflowEnv, capsys: pytest.CaptureFixture[str]) -> None:
    """The help, docs/cli.md and docs/retention.md say one thing: ended at least a lease ago."""
    from workflows.cli.commands import main

    with pytest.raises(SystemExit):
        main(["retention", "sweep", "--help"])
    assert "ended at least a lease (WORKFLOWS_LEASE_SECONDS) ago" in " ".join(capsys.readouterr().out.split())
    run = env.start(tag_flows.tag_order, "o-3")
    env.run_until_complete(run)
    env.clock.advance(SETTINGS.lease_seconds - 1)  # no beat tick
    assert main(["retention", "sweep"]) == 0
    assert "stamped 0 ended run(s)" in capsys.readouterr().out
    env.clock.advance(2)
    assert main(["retention", "sweep"]) == 0
    assert "stamped 1 ended run(s)" in capsys.readouterr().out


def test_the_operators_keep_alive_says_when_it_could_not_renew(env: WorkflowEnv, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A pass that cannot list the live runs (here: throttled; on AWS also a missing permission) logs it
    and goes on, as beat does; the operator's command then exits 1 and says so, not 0."""
    from workflows.cli.commands import main
    from workflows.errors import Throttled

    env.start(flows.expiry_grow_then_sleep, "ab", 60)
    env.driver.settle()

    def throttled(*args: object, **kwargs: object) -> None:
        raise Throttled("list runs: throttled")

    monkeypatch.setattr(env.store, "list_run_summaries", throttled)
    capsys.readouterr()
    assert main(["retention", "keep-alive"]) == 1
    out = capsys.readouterr()
    assert "renewed 0 live run(s)" in out.out and "1 failure(s) logged above" in out.err
