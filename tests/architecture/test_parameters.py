"""No function takes more than 6 loose parameters (issue 41, item 7), with no exemption: options
travel in value objects (``StartOptions``, ``SchedulePolicy``, ``RetryPolicy``, ``RunEnding``,
``LeaseRenewal``...) or as ``**options`` beside them, the way Celery's ``apply_async(args, kwargs,
**options)`` does. Private, nested and port functions count as public ones do."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "beat", "persistence")
MAX_PARAMETERS = 6


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The loose parameters of ``fn``: not self/cls, not ``*args``, not ``**kwargs``."""
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    return names[1:] if method and names[:1] in (["self"], ["cls"]) else names


def is_overload(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A typing stub of a function that takes ``**options`` (a decorator's documented options)."""
    return any(ast.unparse(d) in ("overload", "typing.overload") for d in fn.decorator_list)


def functions(source: str, rel: str) -> Iterator[tuple[str, int]]:
    """``(file:qualified name, parameter count)`` of every function and method in ``source``."""
    def walk(node: ast.AST, prefix: str, method: bool) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.", True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not is_overload(child):
                    yield f"{rel}:{prefix}{child.name}", len(parameters(child, method))
                yield from walk(child, f"{prefix}{child.name}.", False)

    yield from walk(ast.parse(source), "", False)


def all_functions() -> Iterator[tuple[str, int]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield from functions(path.read_text(), path.relative_to(ROOT).as_posix())


def test_no_function_takes_more_than_six_loose_parameters() -> None:
    found = dict(all_functions())
    assert len(found) > 2000  # the walk saw the packages, private and nested functions too
    over = {name: count for name, count in found.items() if count > MAX_PARAMETERS}
    assert over == {}, "bundle options into a value object (workflows/options.py) or take them as **options"


def test_the_rule_counts_what_it_says() -> None:
    source = """
class Store:
    def seven(self, a, b, c, d, e, f, g): ...
    def six(self, a, b, c, d, e, f, *rest, **options): ...
def outer(a):
    def _inner(a, b, c, d, e, f, *, g): ...
"""
    found = dict(functions(source, "m.py"))
    assert found == {"m.py:Store.seven": 7, "m.py:Store.six": 6, "m.py:outer": 1, "m.py:outer._inner": 7}
