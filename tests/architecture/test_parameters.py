"""No public function takes more than 6 loose parameters (issue 25, item 4): options travel in
value objects (``StartOptions``, ``SchedulePolicy``, ``Timetable``, ``RetryPolicy``) or as
``**options`` beside them, the way Celery's ``apply_async(args, kwargs, **options)`` does."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "beat")
MAX_PARAMETERS = 6
#: Modules being rewritten elsewhere (the Store port shrinks to "commit a write plan" plus reads;
#: the engine, the context and the step loop with it): their signatures change with that work.
REWRITTEN = (
    "workflows/core/storage/ports.py", "workflows/core/engine.py", "workflows/core/replay/context.py",
    "workflows/core/execution/step_loop.py", "workflows/core/replay/in_place.py", "workflows/core/ops/steps.py",
    "workflows/core/model/control.py", "workflows/core/model/records.py", "workflows/memory/",
    "workflows/core/storage/writes/",  # the Store port's writes, built once as plans: they keep the port's signatures
)
#: Functions whose only callers are in the rewritten modules: they change with their callers.
CALLED_FROM_REWRITTEN = {
    "workflows/core/execution/attempts.py:run_attempt",  # workflows/core/ops/steps.py calls it
}


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The loose parameters of ``fn``: not self/cls, not ``*args``, not ``**kwargs``."""
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)]
    return names[1:] if method and names[:1] in (["self"], ["cls"]) else names


def is_overload(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A typing stub of a function that takes ``**options`` (a decorator's documented options)."""
    return any(ast.unparse(d) in ("overload", "typing.overload") for d in fn.decorator_list)


def public_functions() -> Iterator[tuple[str, int]]:
    """``(file:qualified name, parameter count)`` of every public function and method."""
    def walk(node: ast.AST, rel: str, prefix: str, method: bool) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                yield from walk(child, rel, f"{prefix}{child.name}.", True)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not child.name.startswith("_") \
                    and not is_overload(child):
                yield f"{rel}:{prefix}{child.name}", len(parameters(child, method))

    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(REWRITTEN):
                yield from walk(ast.parse(path.read_text()), rel, "", False)


def test_no_public_function_takes_more_than_six_loose_parameters() -> None:
    found = dict(public_functions())
    assert len(found) > 300  # the walk saw the packages
    over = {name: count for name, count in found.items()
            if count > MAX_PARAMETERS and name not in CALLED_FROM_REWRITTEN}
    assert over == {}, "bundle options into a value object (workflows/options.py) or take them as **options"


def test_the_exemptions_still_exist() -> None:
    found = dict(public_functions())
    assert CALLED_FROM_REWRITTEN <= found.keys()
