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


#: The builtins users catch, kept by every error that was one before the tree was regrouped (issue 41).
BUILTINS = {
    ValueError: ["InvalidInput", "InvalidTags", "InvalidDuration", "InvalidDebounce", "InvalidSchedule",
                 "InvalidStartTime", "InvalidChildOptions", "InvalidPriority", "InvalidBatch", "InvalidEventKey"],
    TypeError: ["InvalidArguments"],
    LookupError: ["NotFound", "RunNotFound", "ScheduleNotFound", "BatchNotFound", "HookNotFound", "EventNotSet"],
    TimeoutError: ["WaitTimeout", "EventTimeout", "UpdateTimeout", "StepTimeout"],
}


@pytest.mark.parametrize("builtin", list(BUILTINS), ids=lambda b: b.__name__)
def test_an_error_that_was_a_builtin_still_is(builtin: type) -> None:
    assert [name for name in BUILTINS[builtin] if not issubclass(getattr(errors, name), builtin)] == []


@pytest.mark.parametrize(("name", "group"), [
    ("InvalidName", "RegistrationError"), ("InvalidPriority", "RegistrationError"), ("InvalidName", "InvalidInput"),
    ("InvalidTags", "InvalidInput"), ("InvalidExport", "InvalidInput"), ("ScheduleAlreadyExists", "Duplicate"),
    ("FanOutFailed", "ParallelError"), ("UpdateRunEnded", "UpdateError"), ("HookExpired", "HookError"),
])
def test_an_error_keeps_the_group_users_catch_it_by(name: str, group: str) -> None:
    assert issubclass(getattr(errors, name), getattr(errors, group))


def test_every_group_is_importable_from_the_package() -> None:
    import workflows

    for cls in errors.WorkflowError.__subclasses__():
        if cls.__module__ == errors.__name__ and cls is not errors.Stalled:
            assert getattr(workflows, cls.__name__) is cls


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
