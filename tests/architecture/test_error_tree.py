"""The errors a user reads form a small tree, apart from the engine's control flow (issue 41).

The rules, checked on ``workflows.errors``:

- **At most 15 groups.** ``WorkflowError`` has at most ``MAX_GROUPS`` direct subclasses: a user
  can hold the list in their head and pick what to catch.
- **One parent each.** Every class under ``WorkflowError`` has exactly one base inside the
  project's tree (the error it is a kind of); no error is drawn under two groups.
- **Builtins on groups only.** A builtin exception (``ValueError``, ``LookupError``,
  ``TimeoutError``...) is mixed in only by a group, a class directly under ``WorkflowError``, so
  that every error of the group is one (``except ValueError`` keeps catching every
  ``InvalidInput``). The one leaf allowed a builtin of its own is listed in ``LEAF_BUILTINS``,
  with the reason.
- **Control flow is not an error.** The engine's control flow (``Suspend``, ``ContinueAsNew``,
  ``ReplayAborted``, ``ReplayStopped``, ``StaleHistory``, ``OutcomeRecorded``, the replayer's
  ``StepBodyReached``, the simulator's ``Crash``) never derives from ``WorkflowError``, and no
  module but ``workflows/errors.py`` defines a subclass of one of its errors (read from the
  source: nothing is imported for it).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from workflows import errors
from workflows.core.model import control

ROOT = Path(__file__).resolve().parents[2]
MAX_GROUPS = 15
#: Leaves that mix in a builtin their group does not: class name -> the builtin, and why.
LEAF_BUILTINS: dict[str, tuple[type[BaseException], str]] = {
    "InvalidArguments": (TypeError, "arguments that do not fit a signature are a TypeError in Python; "
                                    "the rest of InvalidInput is not"),
}


def tree() -> dict[str, type]:
    """The classes under ``WorkflowError`` defined in ``workflows.errors``, by their own name (an
    alias kept for an old name is the same class)."""
    return {cls.__name__: cls for cls in vars(errors).values()
            if inspect.isclass(cls) and issubclass(cls, errors.WorkflowError) and cls.__module__ == errors.__name__
            and cls is not errors.WorkflowError}


def groups() -> list[str]:
    return sorted(name for name, cls in tree().items() if errors.WorkflowError in cls.__bases__)


def test_the_root_has_at_most_15_direct_subclasses() -> None:
    found = groups()
    assert len(found) <= MAX_GROUPS, f"WorkflowError has {len(found)} direct subclasses (at most {MAX_GROUPS}): {found}"


def test_every_error_has_one_parent_in_the_tree() -> None:
    several = {name: [base.__name__ for base in cls.__bases__ if issubclass(base, errors.WorkflowError)]
               for name, cls in tree().items()}
    several = {name: parents for name, parents in several.items() if len(parents) != 1}
    assert not several, f"errors with more than one parent in the tree: {several}"


def test_builtins_are_mixed_in_by_groups_only() -> None:
    misplaced = {}
    for name, cls in tree().items():
        builtins = [base for base in cls.__bases__ if not issubclass(base, errors.WorkflowError)]
        if not builtins or errors.WorkflowError in cls.__bases__:
            continue
        allowed = LEAF_BUILTINS.get(name)
        if allowed is None or builtins != [allowed[0]]:
            misplaced[name] = [base.__name__ for base in builtins]
    assert not misplaced, f"builtins mixed in below a group (mix them into the group instead): {misplaced}"


def test_control_flow_is_not_an_error() -> None:
    from workflows.sim.actors import Crash
    from workflows.testing.replayer import StepBodyReached

    flow = [cls for cls in vars(control).values() if inspect.isclass(cls) and issubclass(cls, BaseException)
            and cls.__module__ == control.__name__]
    assert {cls.__name__ for cls in flow} >= {"Suspend", "ContinueAsNew", "ReplayAborted", "ReplayStopped",
                                              "StaleHistory", "OutcomeRecorded"}
    errs = [cls.__name__ for cls in [*flow, StepBodyReached, Crash] if issubclass(cls, errors.WorkflowError)]
    assert not errs, f"engine control flow derived from WorkflowError: {errs}"


def test_errors_are_defined_in_the_errors_module_only() -> None:
    names = set(tree()) | {"WorkflowError"}
    elsewhere = []
    for path in sorted((ROOT / "workflows").rglob("*.py")):
        if path == ROOT / "workflows" / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef):
                bases = {base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute)
                         else "" for base in node.bases}
                if bases & names:
                    elsewhere.append(f"{path.relative_to(ROOT)}: {node.name}{sorted(bases & names)}")
    assert not elsewhere, f"errors derived outside workflows/errors.py: {elsewhere}"
