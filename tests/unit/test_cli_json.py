"""JSON given on the command line (``runs start --args/--kwargs``, ``hooks resume --data``, ``runs signal
--data``, ``schedules create --args/--kwargs``), in process: every command parses it one way.

Hostile JSON is a usage error (exit 2, one line on stderr naming the option, no traceback),
found before anything is imported or stored: the client calls fail the test if reached.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from workflows import client, codec, schedules
from workflows.cli import commands as cli

LIMIT = sys.get_int_max_str_digits()
HUGE_INT = "1" * (LIMIT + 700)
DEEP_LIST = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000
TEN_THOUSAND_DEEP = "[" * 10_000 + "]" * 10_000
SCHEDULE = ["schedules", "create", "wf", "--every", "60"]
SIGNAL = ["runs", "signal", "run-1", "go"]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Record what would reach the client (and so the store) instead of calling it."""
    seen: list[tuple[Any, ...]] = []

    def start(workflow: str, *args: Any, idempotency_key: str | None = None, **kwargs: Any) -> Any:
        seen.append(("start", workflow, args, kwargs))
        codec.dumps([list(args), kwargs], what=f"arguments of workflow {workflow!r}")  # as the real start does
        return type("Run", (), {"run_id": "run-1"})()

    def resume_hook(token: str, payload: Any = None) -> Any:
        seen.append(("resume", token, payload))
        codec.dumps(payload, what="hook payload")
        return type("Run", (), {"run_id": "run-1"})()

    def send_signal(run_id: str, name: str, payload: Any = None) -> None:
        seen.append(("signal", run_id, name, payload))

    def create_schedule(workflow: str, **options: Any) -> Any:
        seen.append(("schedule", workflow, options["args"], options["kwargs"]))
        return type("Info", (), {"schedule_id": "s-1", "state": "active", "next_fire_at": None})()

    def apply_async(workflow: str, args: Any = (), kwargs: Any = None, *, idempotency_key: str | None = None,
                    tags: dict[str, str] | None = None, priority: str | None = None, delay: str | None = None,
                    start_at: Any = None) -> Any:
        return start(workflow, *args, **(kwargs or {}), **({"tags": tags} if tags else {}))

    monkeypatch.setattr(client, "start", start)
    monkeypatch.setattr(client, "apply_async", apply_async)
    monkeypatch.setattr(client, "send_signal", send_signal)
    monkeypatch.setattr(schedules, "create_schedule", create_schedule)
    monkeypatch.setattr(client, "resume_hook", resume_hook)
    monkeypatch.setattr(cli, "_imports", lambda: seen.append(("imports",)))
    return seen


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


BAD = [
    # id, argv, fragment of the one-line message
    ("args-huge-int", ["runs", "start", "wf", "--args", f"[{HUGE_INT}]"],
     f"error: --args is not valid JSON: an integer of {LIMIT + 700} digits is over the limit of {LIMIT}"),
    ("args-huge-negative-int", ["runs", "start", "wf", "--args", f"[-{HUGE_INT}]"], "error: --args is not valid JSON"),
    ("kwargs-huge-int", ["runs", "start", "wf", "--kwargs", f'{{"n": {HUGE_INT}}}'],
     "error: --kwargs is not valid JSON: an integer of"),
    ("args-deep", ["runs", "start", "wf", "--args", DEEP_LIST], "error: --args is not valid JSON: nested too deeply"),
    ("kwargs-deep", ["runs", "start", "wf", "--kwargs", DEEP_OBJECT],
     "error: --kwargs is not valid JSON: nested too deeply"),
    ("args-overflowing-number", ["runs", "start", "wf", "--args", "[1e400]"],
     "error: --args is not valid JSON: the number 1e400 is out of range"),
    ("args-long-overflowing-number", ["runs", "start", "wf", "--args", f"[{HUGE_INT}.5]"],
     "error: --args is not valid JSON: the number 111111111111111111111111... is out of range"),
    ("args-nan", ["runs", "start", "wf", "--args", "[NaN]"], "error: --args is not valid JSON: NaN is not JSON data"),
    ("kwargs-infinity", ["runs", "start", "wf", "--kwargs", '{"x": -Infinity}'],
     "error: --kwargs is not valid JSON: -Infinity is not JSON data"),
    ("args-syntax", ["runs", "start", "wf", "--args", "[oops"], "error: --args is not valid JSON: Expecting value"),
    ("args-not-a-list", ["runs", "start", "wf", "--args", "{}"], "error: --args must be a JSON list"),
    ("kwargs-not-an-object", ["runs", "start", "wf", "--kwargs", "[]"], "error: --kwargs must be a JSON object"),
    ("data-huge-int", ["hooks", "resume", "tok", "--data", HUGE_INT], "error: --data is not valid JSON: an integer of"),
    ("data-deep", ["hooks", "resume", "tok", "--data", DEEP_LIST],
     "error: --data is not valid JSON: nested too deeply"),
    ("data-deep-object", ["hooks", "resume", "tok", "--data", DEEP_OBJECT], "error: --data is not valid JSON: nested"),
    ("data-overflowing-number", ["hooks", "resume", "tok", "--data=-1E+400"],
     "error: --data is not valid JSON: the number -1E+400 is out of range"),
    ("data-nan", ["hooks", "resume", "tok", "--data", "NaN"], "error: --data is not valid JSON: NaN is not JSON data"),
    ("data-syntax", ["hooks", "resume", "tok", "--data", "{bad"], "error: --data is not valid JSON"),
    # schedules create and runs signal parse JSON the same way (schedules create showed tracebacks)
    ("schedule-args-deep", [*SCHEDULE, "--args", TEN_THOUSAND_DEEP],
     "error: --args is not valid JSON: nested too deeply"),
    ("schedule-args-huge-number", [*SCHEDULE, "--args", "[1e999999]"],
     "error: --args is not valid JSON: the number 1e999999 is out of range"),
    ("schedule-args-huge-int", [*SCHEDULE, "--args", f"[{'7' * 5000}]"],
     f"error: --args is not valid JSON: an integer of 5000 digits is over the limit of {LIMIT}"),
    ("schedule-args-syntax", [*SCHEDULE, "--args", "[oops"], "error: --args is not valid JSON: Expecting value"),
    ("schedule-args-not-a-list", [*SCHEDULE, "--args", "{}"], "error: --args must be a JSON list"),
    ("schedule-kwargs-deep", [*SCHEDULE, "--kwargs", DEEP_OBJECT], "error: --kwargs is not valid JSON: nested"),
    ("schedule-kwargs-nan", [*SCHEDULE, "--kwargs", '{"x": NaN}'], "error: --kwargs is not valid JSON: NaN"),
    ("schedule-kwargs-not-an-object", [*SCHEDULE, "--kwargs", "[]"], "error: --kwargs must be a JSON object"),
    ("signal-data-deep", [*SIGNAL, "--data", TEN_THOUSAND_DEEP], "error: --data is not valid JSON: nested too deeply"),
    ("signal-data-huge-number", [*SIGNAL, "--data", "1e999999"],
     "error: --data is not valid JSON: the number 1e999999 is out of range"),
    ("signal-data-huge-int", [*SIGNAL, "--data", "7" * 5000], "error: --data is not valid JSON: an integer of 5000"),
    ("signal-data-syntax", [*SIGNAL, "--data", "{bad"], "error: --data is not valid JSON"),
    ("hooks-data-deep-10k", ["hooks", "resume", "tok", "--data", TEN_THOUSAND_DEEP], "error: --data is not valid JSON"),
    ("hooks-data-huge-number", ["hooks", "resume", "tok", "--data", "1e999999"], "error: --data is not valid JSON"),
]


@pytest.mark.parametrize(("argv", "fragment"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_hostile_json_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str], calls: list[Any],
                                                argv: list[str], fragment: str) -> None:
    code, out, err = run(capsys, *argv)
    assert "Traceback" not in err
    assert (code, out) == (cli.EXIT_USAGE, "")
    assert err.startswith(fragment) and err.count("\n") == 1 and len(err) < 300, err
    assert calls == []  # nothing imported, nothing sent to the store


@pytest.mark.parametrize("text", ["[1e400]", f"[{HUGE_INT}]", DEEP_LIST, "[NaN]", "[1, 2"],
                         ids=["overflowing-number", "huge-int", "deep", "nan", "syntax"])
def test_the_helper_raises_a_usage_error_naming_the_option(text: str) -> None:
    with pytest.raises(cli.UsageError, match="^--opt "):
        cli.parse_json_option("--opt", text)


def test_the_helper_checks_the_kind() -> None:
    assert cli.parse_json_option("--args", "[1, {}]", list) == [1, {}]
    assert cli.parse_json_option("--kwargs", '{"a": null}', dict) == {"a": None}
    assert cli.parse_json_option("--data", '"x"') == "x"
    with pytest.raises(cli.UsageError, match="^--args must be a JSON list$"):
        cli.parse_json_option("--args", "{}", list)
    with pytest.raises(cli.UsageError, match="^--kwargs must be a JSON object$"):
        cli.parse_json_option("--kwargs", "1", dict)


def test_good_json_reaches_the_client(capsys: pytest.CaptureFixture[str], calls: list[Any]) -> None:
    biggest = "9" * LIMIT  # the largest integer JSON parses is also one the codec writes
    code, out, err = run(capsys, "runs", "start", "wf", "--args", f'[1, {biggest}, {{"__wf__": "date", "v": "x"}}]',
                         "--kwargs", '{"when": 1.5e300}')
    assert (code, out, err) == (0, "run-1\n", "")
    assert calls == [("imports",), ("start", "wf", (1, int(biggest), {"__wf__": "date", "v": "x"}), {"when": 1.5e300})]
    calls.clear()
    code, out, err = run(capsys, "hooks", "resume", "tok", "--data", f"[-{biggest}]")
    assert (code, err) == (0, "")
    assert calls == [("imports",), ("resume", "tok", [-int(biggest)])]
    assert codec.loads(codec.dumps([-int(biggest)])) == [-int(biggest)]


def test_json_the_codec_refuses_after_parsing_is_a_clean_refusal(capsys: pytest.CaptureFixture[str],
                                                                 calls: list[Any]) -> None:
    # parses (under the recursion limit) but is deeper than the codec accepts: exit 1, one line
    deep = "[" * (codec.MAX_DEPTH + 10) + "]" * (codec.MAX_DEPTH + 10)
    for argv in (["runs", "start", "wf", "--args", f"[{deep}]"], ["hooks", "resume", "tok", "--data", deep]):
        code, out, err = run(capsys, *argv)
        assert code == cli.EXIT_ERROR and out == "", err
        assert err.startswith("error: SerializationError: ") and "nested too deeply" in err, err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_good_json_of_schedules_create_and_runs_signal_reaches_the_library(capsys: pytest.CaptureFixture[str],
                                                                           calls: list[Any]) -> None:
    code, out, err = run(capsys, *SCHEDULE, "--args", "[1, [2]]", "--kwargs", '{"a": 1.5}')
    assert (code, err) == (0, ""), err
    assert calls == [("imports",), ("schedule", "wf", [1, [2]], {"a": 1.5})]
    calls.clear()
    code, out, err = run(capsys, *SIGNAL, "--data", '{"ok": true}')
    assert (code, out, err) == (0, "signal 'go' sent to run-1\n", "")
    assert calls == [("signal", "run-1", "go", {"ok": True})]


def test_tags_of_runs_start_reach_the_client(capsys: pytest.CaptureFixture[str], calls: list[Any]) -> None:
    code, out, err = run(capsys, "runs", "start", "wf", "--tag", "customer=c-1", "--tag", "expr=a=b")
    assert (code, out, err) == (0, "run-1\n", "")
    assert calls == [("imports",), ("start", "wf", (), {"tags": {"customer": "c-1", "expr": "a=b"}})]
    with pytest.raises(SystemExit) as exited:  # an argparse usage error
        cli.main(["runs", "start", "wf", "--tag", "novalue"])
    assert exited.value.code == 2 and "expected KEY=VALUE, got 'novalue'" in capsys.readouterr().err
