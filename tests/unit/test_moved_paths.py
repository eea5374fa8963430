"""Modules that moved keep their old import path for one release (issue 25): the old path is
the new module itself, with a ``DeprecationWarning``; the operational paths users type
(``celery -A workflows.app``, ``uvicorn workflows.http:app``, ``python -m workflows``, the
``workflows`` console script) work without one."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from typing import Any

import pytest

import workflows
from tests.conftest import ROOT

STRICT = [sys.executable, "-W", "error::DeprecationWarning"]


CHECK_MOVED = """
import importlib, json, sys, warnings
import workflows
seen = {}
for old, new in sorted(workflows.MOVED.items()):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    seen[old] = {"same": module is importlib.import_module(new), "spec": module.__spec__.name,
                 "warnings": [(w.category.__name__, str(w.message), w.filename) for w in caught
                              if issubclass(w.category, DeprecationWarning)]}
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def moved() -> dict[str, Any]:
    """Each old path imported in a fresh interpreter (a moved module's own imports register workflows)."""
    out = subprocess.run([sys.executable, "-c", CHECK_MOVED], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize(("old", "new"), sorted(workflows.MOVED.items()))
def test_an_old_path_is_the_new_module_with_a_deprecation_warning(moved: dict[str, Any], old: str, new: str) -> None:
    seen = moved[old]
    assert seen["same"] and seen["spec"] == new  # the new module itself, with its own spec
    [(category, message, filename)] = seen["warnings"]
    assert category == "DeprecationWarning" and message.startswith(f"{old} moved to {new}")
    assert filename == "<string>"  # the importing line, not the import machinery


def test_from_import_of_a_moved_module_warns_at_the_importing_line() -> None:
    sys.modules.pop("workflows.tasks", None)
    vars(workflows).pop("tasks", None)  # an earlier import set the attribute
    with pytest.warns(DeprecationWarning) as caught:
        from workflows import tasks  # noqa: F401 - the import is the test
    assert caught[0].filename == __file__


@pytest.mark.parametrize(("old", "new"), sorted(workflows.STABLE.items()))
def test_an_operational_path_imports_without_a_warning(old: str, new: str) -> None:
    out = subprocess.run([*STRICT, "-c", f"import {old} as m, {new} as n; assert m is n; print(type(m.app).__name__)"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_the_celery_app_path_serves_celery_without_a_warning() -> None:
    out = subprocess.run([*STRICT, "-m", "celery", "-A", "workflows.app", "report"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "broker_transport" in out.stdout and "workflows.celery.sqs.Transport" in out.stdout


def test_the_command_line_paths_work_without_a_warning() -> None:
    script = "from workflows.cli import main; raise SystemExit(main(['--help']))"  # the console script's entry
    for argv in (["-m", "workflows", "--help"], ["-c", script]):
        out = subprocess.run([*STRICT, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "usage: workflows" in out.stdout


def test_an_unknown_module_is_still_a_module_not_found_error() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("workflows.no_such_module")


def test_the_old_celeryconfig_path_still_holds_the_configuration() -> None:
    code = ("import warnings\nwarnings.simplefilter('ignore')\nimport workflows.celeryconfig as c\n"
            "print(c.task_serializer, c.accept_content, c.broker_url.split(':')[0])")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["json", "['json']", "sqs"]


def test_beat_schedules_serves_its_old_names_with_a_deprecation_warning() -> None:
    code = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from beat.schedules import apply_fire, fire_due_schedules, sync_declared_schedules
from beat.declared import sync_declared_schedules as declared
from workflows.core.background.firing import apply_fire as moved, fire_due_schedules as due
print(json.dumps([apply_fire is moved and fire_due_schedules is due and sync_declared_schedules is declared,
                  [(w.category.__name__, w.filename) for w in caught]]))
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    same, warned = json.loads(out.stdout.splitlines()[-1])
    assert same and warned == [["DeprecationWarning", "<string>"]]


def test_renamed_names_keep_their_old_spelling_with_a_deprecation_warning() -> None:
    from workflows import client, export

    with pytest.warns(DeprecationWarning, match="complete_hook") as caught:
        assert client.resume_hook_on is client.complete_hook  # a hook is completed; a resume is a run's replay
    assert caught[0].filename == __file__
    with pytest.warns(DeprecationWarning, match="FORMAT_VERSION"):
        assert export.VERSION == export.FORMAT_VERSION
    with pytest.raises(AttributeError):
        client.no_such_name  # noqa: B018 - the lookup is the test
