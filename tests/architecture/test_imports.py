"""Import hygiene: every module imports on its own, the core never loads an adapter library,
and ``import workflows`` stays cheap. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import workflows

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ["workflows", "persistence", "beat"]
ADAPTER_LIBRARIES = ["celery", "kombu", "boto3", "botocore", "pynamodb", "opentelemetry", "prometheus_client"]
#: Modules that start something when imported, by design (the console entry point).
SKIP = {"workflows.__main__", "workflows.sim.__main__"}  # (the simulator runs 200 seeds)


def all_modules() -> list[str]:
    found = []
    for package in PACKAGES:
        found.append(package)
        path = [str(ROOT / package)]
        for info in pkgutil.walk_packages(path, prefix=f"{package}."):
            if info.name not in SKIP:
                found.append(info.name)
    return sorted(found)


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def loaded_after(statement: str) -> set[str]:
    out = fresh(f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


#: Libraries the project's modules import, loaded once before the forks (a fresh interpreter per
#: module spent ~20 s loading them again): none of them imports the project.
PRELOADED = ["celery", "kombu", "boto3", "botocore", "pynamodb", "pydantic", "croniter", "starlette", "jinja2"]
#: One interpreter loads the libraries, then imports each project module in a forked child that
#: starts with no project module loaded: what a fresh interpreter would see of the project. As many
#: children at once as there are cores.
IMPORT_EACH_IN_A_FORK = """
import importlib, json, os, sys
for library in LIBRARIES:
    try:
        importlib.import_module(library)
    except ImportError:
        pass
assert not [m for m in sys.modules if m.split(".")[0] in ("workflows", "persistence", "beat")]
failures, running, waiting = {}, {}, list(reversed(MODULES))

def collect():
    pid, _ = os.waitpid(-1, 0)
    name, read = running.pop(pid)
    with os.fdopen(read, "rb") as answer:
        message = answer.read().decode()
    if message:
        failures[name] = message

while waiting or running:
    if waiting and len(running) < (os.cpu_count() or 1):
        name = waiting.pop()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                importlib.import_module(name)
                message = ""
            except BaseException as exc:
                message = f"{type(exc).__name__}: {exc}"
            os.write(write, message.encode()[:4000])
            os._exit(0)
        os.close(write)
        running[pid] = (name, read)
    else:
        collect()
print(json.dumps(failures))
"""


def test_every_module_imports_on_its_own() -> None:
    modules = all_modules()
    assert len(modules) > 40
    code = f"LIBRARIES = {PRELOADED!r}\nMODULES = {modules!r}\n{IMPORT_EACH_IN_A_FORK}"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == {}


def core_modules() -> list[str]:
    return [m for m in all_modules() if m.startswith(("workflows.core", "workflows.memory"))]


@pytest.mark.parametrize("module", ["workflows.core", "workflows.memory"])
def test_the_core_and_the_memory_ports_load_no_adapter_library(module: str) -> None:
    imports = "\n".join(f"import {m}" for m in core_modules() if m.startswith(module))
    loaded = loaded_after(imports)
    assert sorted(lib for lib in ADAPTER_LIBRARIES if lib in loaded) == []
    assert not any(m == "persistence" or m.startswith("persistence.") for m in loaded)


def test_import_workflows_is_cheap() -> None:
    loaded = loaded_after("import workflows")
    assert [lib for lib in ["celery", "boto3", "pynamodb", "pydantic"] if lib in loaded] == []
    assert "workflows.client" not in loaded


def test_the_errors_module_loads_nothing_else_of_the_library() -> None:
    loaded = loaded_after("import workflows.errors")
    assert sorted(m for m in loaded if m.startswith(("workflows.", "persistence", "beat"))) == ["workflows.errors"]


def test_public_names_resolve_lazily() -> None:
    out = fresh("import workflows\nprint(workflows.RunStatus.COMPLETED.value, workflows.WorkflowError.__name__,"
                " callable(workflows.start), set(workflows.__all__) <= set(dir(workflows)))")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["completed", "WorkflowError", "True", "True"]


def test_an_unknown_public_name_is_an_attribute_error() -> None:
    import workflows

    with pytest.raises(AttributeError, match="no_such_name"):
        workflows.no_such_name  # noqa: B018 - the lookup is the test


def test_the_layer_contracts_hold() -> None:
    """import-linter's contracts (pyproject.toml) - the same check CI runs."""
    lint_imports = str(Path(sys.executable).with_name("lint-imports"))
    out = subprocess.run([lint_imports, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "broken" in out.stdout and " 0 broken" in out.stdout


def test_the_top_of_the_package_stays_small() -> None:
    """Modules live in packages by role (issue 25): at most 15 at the top of ``workflows/``,
    old paths served by the alias table, not by modules of their own."""
    top = sorted(p.name for p in (ROOT / "workflows").glob("*.py"))
    assert len(top) <= 15, top
    assert not {old.removeprefix("workflows.") + ".py" for old in (*workflows.MOVED, *workflows.STABLE)} & set(top)
