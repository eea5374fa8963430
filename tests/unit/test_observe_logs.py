"""Structured logs: a line logged while a run resumes or a step runs carries the run id, the
workflow, the step and the position; the JSON format writes one object a line."""

from __future__ import annotations

import io
import json
import logging
from typing import Iterator

import pytest

from tests.replay import replay_flows  # noqa: F401 - registers replay_one_flaky
from tests.replay.ports import memory_engine
from tests.replay.test_replay import drain
from workflows import step, workflow
from workflows.core.model.registry import get_workflow
from workflows.core.replay.observer import Observers
from workflows.observe.logs import ContextFilter, JsonFormatter, LogContext, TextFormatter, configure_logging

flow_log = logging.getLogger("tests.observe_logs")


@step
def logs_add(a: int, b: int) -> int:
    flow_log.info("adding %d and %d", a, b)
    return a + b


@workflow
def logs_observed(n: int) -> int:
    total = logs_add(n, 1)
    flow_log.info("after the step")
    return logs_add(total, 1)


@pytest.fixture()
def lines() -> Iterator[io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def entries(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_lines_of_steps_and_replays_carry_the_run_fields(lines: io.StringIO) -> None:
    engine = memory_engine()
    engine.observer = Observers([LogContext()])
    run_id, _ = engine.create_run(get_workflow("logs_observed"), json.dumps([[1], {}]))
    drain(engine)
    mine = [e for e in entries(lines) if e["logger"] == "tests.observe_logs"]
    steps = [(e["message"], e["step"], e["pos"]) for e in mine if e["step"] is not None]
    assert steps == [("adding 1 and 1", "logs_add", 0), ("adding 2 and 1", "logs_add", 1)]
    replayed = [e for e in mine if e["message"] == "after the step"]
    assert replayed and all(e["pos"] == 0 and e["step"] is None for e in replayed)  # at op 0 (the step just done)
    assert {(e["run_id"], e["workflow"]) for e in mine} == {(run_id, "logs_observed")}


def test_an_engine_line_names_its_step(lines: io.StringIO) -> None:
    engine = memory_engine()
    engine.observer = LogContext()
    run_id, _ = engine.create_run(get_workflow("replay_one_flaky"), json.dumps([[3], {}]))
    drain(engine)
    retry = next(e for e in entries(lines) if e["logger"] == "workflows.steps")
    assert retry["message"].startswith("step replay_flaky of run")  # type: ignore[union-attr]
    assert (retry["run_id"], retry["workflow"], retry["step"], retry["pos"]) == \
        (run_id, "replay_one_flaky", "replay_flaky", 0)
    assert retry["level"] == "INFO"


def test_a_line_about_no_run_has_empty_fields(lines: io.StringIO) -> None:
    logging.getLogger("tests.observe_logs").warning("no run here")
    (entry,) = entries(lines)
    assert (entry["run_id"], entry["workflow"], entry["step"], entry["pos"]) == (None, None, None, None)


def test_the_text_format_appends_the_fields_to_the_handlers_own_line() -> None:
    out = io.StringIO()
    logger = logging.getLogger("tests.observe_text")
    logger.propagate = False
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger.addHandler(handler)
    configure_logging("text", logger)
    assert isinstance(handler.formatter, TextFormatter)
    from workflows.observe.logs import bind

    with bind(run_id="r-1", workflow="wf", step="s", pos=4):
        logger.warning("hello")
    logger.warning("outside")
    assert out.getvalue().splitlines() == ["WARNING hello [run_id=r-1 workflow=wf step=s pos=4]", "WARNING outside"]
    configure_logging("json", logger)
    logger.warning("as json")
    assert json.loads(out.getvalue().splitlines()[-1])["message"] == "as json"
