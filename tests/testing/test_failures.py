"""Failures keep their type: a step's exception recorded as structured JSON (type, qualified name,
message, traceback, cause chain, bounded), declared classes rebuilt and raised in the workflow, the
same on replay; records written before (error text only) still replay."""

from __future__ import annotations

import json

import pytest

from tests.testing import failure_flows as flows
from tests.testing.guide_blocks import guide_example
from workflows import RunFailed, StepFailed, declare_error, step
from workflows.cli import commands as cli
from workflows.core.model.failures import MAX_FAILURE_CHARS, Failure, capture, parse, rebuild, step_failure
from workflows.core.model.records import OpKind
from workflows.errors import RegistrationError
from workflows.export import export_run
from workflows.testing import WorkflowEnv, replay


@pytest.fixture(autouse=True)
def _reset_seen() -> None:
    flows.SEEN.clear()


def test_a_declared_failure_is_caught_by_type_with_its_state(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_caught, "declined")
    assert run.result() == {"caught": "Declined", "args": ["card declined"], "balance": 12, "cause": "StepFailed"}
    step = workflow_env.steps(run)[0]
    assert step.status == "failed" and step.error == "Declined: card declined"
    assert step.failure is not None and step.failure.qualname == "tests.testing.failure_flows.Declined"
    assert step.failure.declared == "tests.testing.failure_flows.Declined"
    assert "_charge" in step.failure.chain[0].traceback  # where it was raised


def test_an_undeclared_subclass_is_rebuilt_as_its_declared_base(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_caught, "too_big")
    assert run.result()["caught"] == "Declined"  # TooBig is not declared: its nearest declared base
    assert workflow_env.steps(run)[0].failure.type == "TooBig"  # type: ignore[union-attr]


def test_an_undeclared_failure_raises_step_failed_with_its_cause_chain(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_caught, "chained")
    assert run.result() == {"caught": "StepFailed", "type": "Undeclared",
                            "chain": [["Undeclared", None], ["KeyError", "cause"]]}
    context = workflow_env.start(flows.fail_caught, "context").result()
    assert context["chain"] == [["Undeclared", None], ["ValueError", "context"]]


def test_an_inline_step_and_a_steps_errors_list_raise_declared_types(workflow_env: WorkflowEnv) -> None:
    assert workflow_env.start(flows.fail_inline_caught, "declined").result() == "declined 12"
    assert workflow_env.start(flows.fail_listed_caught).result() == "caught listed on the step"


def test_an_uncaught_declared_failure_fails_the_run_with_its_text(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_uncaught, "declined")
    workflow_env.run_until_idle()
    record = workflow_env.store.get_run(run.run_id)
    assert record.status == "failed" and record.error == "Declined: card declined"


def test_a_fan_out_returns_its_branches_exceptions_typed(workflow_env: WorkflowEnv) -> None:
    assert workflow_env.start(flows.fail_branches).result() == ["Declined", "StepFailed", "charged"]


def test_the_replay_raises_what_the_first_execution_raised() -> None:
    with WorkflowEnv() as env:
        run = env.start(flows.fail_caught, "declined")
        run.result()
        export = export_run(env.store, run.run_id)
    flows.SEEN.clear()
    assert replay(export).ending == "returned"
    assert flows.SEEN == [("Declined", ("card declined",), 12)]


def test_a_record_written_before_failures_kept_their_type_still_replays(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_caught, "chained")
    run.result()
    export = export_run(workflow_env.store, run.run_id)
    for record in export["history"]:
        if record["kind"] == OpKind.STEP.value and record["status"] == "failed":
            record["data"] = None  # today's record: the error text only
    flows.SEEN.clear()
    assert replay(export).ending == "returned"
    assert flows.SEEN == [("StepFailed", None)]


def test_a_failure_is_json_and_bounded() -> None:
    def deep(n: int) -> None:
        if n == 0:
            raise ValueError("x" * 50_000)
        deep(n - 1)

    try:
        try:
            deep(200)
        except ValueError as inner:
            raise RuntimeError("y" * 50_000) from inner
    except RuntimeError as exc:
        failure = capture(exc)
    text = failure.to_json()
    assert len(text) <= MAX_FAILURE_CHARS and json.loads(text)["failure"]["chain"][0]["type"] == "RuntimeError"
    assert parse(text) == failure and [link.relation for link in failure.chain] == [None, "cause"]
    assert all(len(link.traceback) <= 1500 and len(link.message) <= 1000 for link in failure.chain)


def test_a_failure_naming_an_undeclared_class_imports_nothing() -> None:
    failure = Failure.from_dict({"chain": [{"type": "system", "qualname": "os.system", "message": "ls"}],
                                 "declared": "os.system", "state": {"args": ["ls"]}})
    assert rebuild(failure) is None
    raised = step_failure("s", "system: ls", failure.to_json())
    assert isinstance(raised, StepFailed) and raised.failure == failure


def test_a_declaration_must_be_an_exception_class() -> None:
    with pytest.raises(RegistrationError, match="Exception subclass"):
        declare_error(int)  # type: ignore[type-var]
    with pytest.raises(RegistrationError, match="list of exception classes"):
        @step(errors=flows.Listed)  # type: ignore[call-overload]
        def listed_alone() -> None: ...


def test_a_step_failed_repr_keeps_todays_text() -> None:
    assert str(step_failure("charge", "KeyError: 'x'", None)) == "step 'charge' failed: KeyError: 'x'"


def test_the_cli_and_the_run_page_show_the_chain(workflow_env: WorkflowEnv, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from workflows.cli import commands as cli

    run = workflow_env.start(flows.fail_uncaught, "chained")
    workflow_env.run_until_idle()
    capsys.readouterr()
    assert cli.main(["runs", "show", run.run_id]) == 0
    out = capsys.readouterr().out
    assert "error=Undeclared: lookup failed\n        tests.testing.failure_flows.Undeclared: lookup failed\n" in out
    assert "        caused by:\n        builtins.KeyError: 'missing'\n" in out and "in _charge" in out
    pytest.importorskip("starlette", reason="SKIPPED LOUDLY: starlette is not installed (pip install -e '.[dev]')")
    from tests.unit.test_web_tags import TOKEN, get
    from workflows.web import create_app

    monkeypatch.setenv("WORKFLOWS_DASHBOARD_TOKEN", TOKEN)
    status, body = get(create_app(TOKEN), f"/runs/{run.run_id}")
    assert status == 200 and 'id="failure-chain"' in body
    chain = body[body.index('id="failure-chain"'):body.index("</pre>", body.index('id="failure-chain"'))]
    assert "Undeclared: lookup failed\n" in chain and "\ncaused by:\nbuiltins.KeyError: &#39;missing&#39;" in chain
    assert 'class="failure-chain"' in body  # the steps table's chain too


def test_the_guide_example_runs() -> None:
    with WorkflowEnv() as env:
        example = guide_example("Failures keep their type")
        checkout = example["pay_order"]
        assert env.start(checkout, "empty", 500).result() == {"declined": "insufficient funds", "balance": 12}
        name = example["__name__"]
        assert env.start(checkout, "offline", 500).result() == {
            "failed": "GatewayDown", "chain": [f"{name}.GatewayDown", "builtins.ConnectionError"]}
        assert env.start(checkout, "visa", 500).result() == {"receipt": "receipt-visa"}


def test_a_run_that_raised_a_declared_error_fails_typed_for_its_client(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_raises_declared, 7)
    workflow_env.run_until_idle()
    with pytest.raises(RunFailed) as caught:
        run.result()
    failed = caught.value
    assert failed.error == "Declined: over the limit"
    assert isinstance(failed.cause, flows.Declined) and failed.cause.balance == 7
    assert failed.__cause__ is failed.cause and failed.failure.type == "Declined"
    assert "in fail_raises_declared" in failed.failure.describe_chain()  # its traceback is kept


def test_a_run_failed_by_its_steps_declared_error_carries_it_and_the_step_failure(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_uncaught, "declined")
    workflow_env.run_until_idle()
    with pytest.raises(RunFailed) as caught:
        run.result()
    assert isinstance(caught.value.cause, flows.Declined) and caught.value.cause.balance == 12
    chain = caught.value.failure.chain  # raised at the step's call, from the StepFailed, from the step's own
    assert [(link.type, link.relation) for link in chain] == [
        ("Declined", None), ("StepFailed", "cause"), ("Declined", "cause")]
    assert "in _charge" in chain[-1].traceback  # the step body's traceback, recorded by its worker


def test_an_undeclared_error_keeps_its_type_name_without_a_cause(workflow_env: WorkflowEnv) -> None:
    run = workflow_env.start(flows.fail_uncaught, "chained")
    workflow_env.run_until_idle()
    with pytest.raises(RunFailed) as caught:
        run.result()
    assert caught.value.cause is None and caught.value.failure.type == "StepFailed"
    text = caught.value.failure.describe_chain()  # the step's chain follows the StepFailed
    assert "caused by:\ntests.testing.failure_flows.Undeclared: lookup failed" in text
    assert "caused by:\nbuiltins.KeyError: 'missing'" in text


def test_a_childs_declared_error_reaches_its_parent_typed(workflow_env: WorkflowEnv) -> None:
    assert workflow_env.start(flows.fail_parent_of, "declined").result() == {
        "status": "failed", "cause": "Declined", "balance": 12, "type": "Declined"}
    assert workflow_env.start(flows.fail_parent_of, "chained").result() == {
        "status": "failed", "cause": None, "balance": None, "type": "StepFailed"}
    assert workflow_env.start(flows.fail_race_child, "declined").result() == {"cause": "Declined"}


def test_runs_show_prints_a_failed_runs_chain_not_its_failure_data(workflow_env: WorkflowEnv,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = workflow_env.start(flows.fail_raises_declared, 3)
    workflow_env.run_until_idle()
    capsys.readouterr()
    assert cli.main(["runs", "show", run.run_id]) == 0
    out = capsys.readouterr().out
    assert "failure   tests.testing.failure_flows.Declined: over the limit\n" in out
    assert '{"failure"' not in out and not any(line.startswith("result") for line in out.splitlines())
