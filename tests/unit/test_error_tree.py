"""The tree drawn in ``workflows/errors.py``'s docstring is the module's classes and their bases,
and the engine's control flow is out of the public errors (issue 25)."""

from __future__ import annotations

import inspect
import re
import warnings

import pytest

from workflows import errors
from workflows.core.model import control

BRANCH = re.compile(r"^(?P<indent>[ │]*)(?:├── |└── )(?P<name>\w+)")


def drawn_edges() -> set[tuple[str, str]]:
    """Every (parent, child) the docstring's tree draws."""
    doc = errors.__doc__ or ""
    lines = doc[doc.index("WorkflowError\n"):].splitlines()
    stack, edges = ["WorkflowError"], set()
    for line in lines[1:]:
        match = BRANCH.match(line.removeprefix("    "))
        if match is None:
            if stack != ["WorkflowError"] and not line.strip():
                break
            continue
        depth = len(match["indent"]) // 4 + 1
        del stack[depth:]
        edges.add((stack[-1], match["name"]))
        stack.append(match["name"])
    return edges


def library_errors() -> dict[str, type]:
    return {name: cls for name, cls in vars(errors).items()
            if inspect.isclass(cls) and issubclass(cls, errors.WorkflowError) and cls.__module__ == errors.__name__}


def test_the_drawn_tree_is_the_classes_and_their_bases() -> None:
    classes = library_errors()
    actual = {(base.__name__, name) for name, cls in classes.items() for base in cls.__bases__
              if base.__name__ in classes}
    assert drawn_edges() == actual


def test_every_invalid_error_derives_from_invalid_input() -> None:
    invalid = [cls for name, cls in library_errors().items() if name.startswith("Invalid") and name != "InvalidInput"]
    assert len(invalid) >= 5
    assert all(issubclass(cls, errors.InvalidInput) for cls in invalid)


def test_control_flow_is_not_a_public_error() -> None:
    for cls in (control.Suspend, control.ContinueAsNew, control.ReplayAborted, control.ReplayStopped,
                control.OutcomeRecorded):
        assert not issubclass(cls, errors.WorkflowError)
        assert cls.__name__ not in vars(errors)


@pytest.mark.parametrize("name", ["Suspend", "ContinueAsNew", "ReplayAborted", "ReplayStopped"])
def test_moved_control_flow_is_importable_from_errors_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match="workflows.core.model.control"):
        assert getattr(errors, name) is getattr(control, name)


def test_a_dead_name_is_gone() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("Cancelled", "OutcomeRecorded"):
            with pytest.raises(AttributeError):
                getattr(errors, name)
