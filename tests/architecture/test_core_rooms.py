"""The core in rooms (docs/architecture.md, "The core's rooms"): ``workflows/core`` holds the rooms
and the engine's resume loop, no loose module; an import inside a function says why it is there.
The order of the rooms is import-linter's contract (``pyproject.toml``), run by test_imports.py."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

CORE = ROOT / "workflows" / "core"
ROOMS = {"background", "ops", "execution", "replay", "admission", "storage", "model"}


def test_the_core_is_its_rooms_and_the_engine() -> None:
    entries = {p.name for p in CORE.iterdir() if p.name != "__pycache__"}
    assert entries == ROOMS | {"__init__.py", "engine.py"}
    for room in ROOMS:
        assert ast.get_docstring(ast.parse((CORE / room / "__init__.py").read_text())), room


def _imports_in_functions(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each import inside a function body, outside ``if TYPE_CHECKING``."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.append((inner.lineno, lines[inner.lineno - 1]))
    return found


def test_an_import_inside_a_function_says_why() -> None:
    silent = []
    for path in sorted(CORE.rglob("*.py")):
        for line, text in _imports_in_functions(path):
            if "#" not in text:
                silent.append(f"{path.relative_to(ROOT)}:{line}: {text.strip()}")
    assert not silent, "an import inside a function needs a comment saying why:\n" + "\n".join(silent)
