"""The test suite's own rules (issue 25): a test module that starts processes carries the
``e2e`` or ``crash`` marker, so ``python -m pytest -m "not e2e and not crash"`` is a fast loop
that starts none; and a test waits on a condition (``tests/waiting.py``), never for a fixed
time, unless the time itself is the test (said on the line)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
#: What starts a process in a test: the session's worker and beat, a spawned one, a subprocess
#: that lives on, a local cluster, a process pool, a browser.
STARTS = re.compile(r"\b(cluster|spawn)\b[,)]|Popen\(|Cluster\(|jobs=\d|webdriver\.")


def modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def marker(path: Path) -> str | None:
    """The marker of the module's ``pytestmark = pytest.mark.<name>``, if it has one."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["pytestmark"]:
            return ast.unparse(node.value).removeprefix("pytest.mark.")
    return None


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(TESTS)))
def test_a_module_that_starts_processes_carries_e2e_or_crash(path: Path) -> None:
    rel = path.relative_to(TESTS)
    if rel.parts[0] == "architecture":
        return  # runs the project's tools (ruff, mypy, lint-imports), no worker
    expected = {"e2e": "e2e", "crash": "crash"}.get(rel.parts[0])
    if expected is None and not STARTS.search(path.read_text()):
        return
    assert marker(path) in ({expected} if expected else {"e2e", "crash"}), \
        f"{rel} starts processes: give it a module-level pytestmark = pytest.mark.{expected or 'e2e'}"


def test_fixed_sleeps_say_why_the_time_is_the_test() -> None:
    unexplained = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "waiting.py" or not path.name.startswith(("test_", "conftest")):
            continue  # the helper itself; workflow and step bodies of test flows sleep as work
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*time\.sleep\(", line) and "#" not in line:
                unexplained.append(f"{path.relative_to(TESTS)}:{number}: {line.strip()}")
    assert unexplained == [], "wait with tests.waiting.wait_for, or say on the line why the time is the test"
