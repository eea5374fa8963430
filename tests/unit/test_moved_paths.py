"""Modules that moved keep their old import path for one release (issue 25): the old path is
the new module itself, with a ``DeprecationWarning``; the operational paths users type
(``celery -A workflows.app``, ``uvicorn workflows.http:app``, ``python -m workflows``, the
``workflows`` console script) work without one."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import workflows
from tests.conftest import ROOT

STRICT = [sys.executable, "-W", "error::DeprecationWarning"]


@pytest.mark.parametrize(("old", "new"), sorted(workflows.MOVED.items()))
def test_an_old_path_is_the_new_module_with_a_deprecation_warning(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__spec__ is not None and module.__spec__.name == new  # its own spec, not the alias's


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
