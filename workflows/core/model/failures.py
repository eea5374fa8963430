"""Failures keep their type: a step's exception as structured JSON data, and the declared
exception classes that workflow code catches by type.

A failed step's outcome keeps, besides its error text (``Type: message``), a :class:`Failure`:
the exception's type name, module-qualified name, message and traceback text, then its cause
(``raise ... from``) or context chain, each bounded in size (:data:`MAX_FAILURE_CHARS` in all).
It is JSON, never pickled, and stored in the data field of the step's failed outcome (where a
completed step keeps its result).

An application declares the exception classes its workflows catch by type, with
:func:`declare_error` (a class decorator) or ``@step(errors=[...])``. When such a step fails,
the replay rebuilds the declared class from the JSON (its ``args`` and JSON attributes, without
calling ``__init__``: nothing a payload names is imported or called) and raises it at the step's
call; other types raise :class:`~workflows.errors.StepFailed` carrying the chain. Which class to
rebuild is decided once, when the failure is recorded (the nearest declared class in its MRO),
so a replay raises what the first execution raised.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ... import codec
from ...errors import ChildFailed, RegistrationError, RunFailed, SerializationError, StepFailed
from .states import EventStatus

#: The most characters a failure takes in its record (the chain's tail is dropped past it).
MAX_FAILURE_CHARS = 8000
#: The most exceptions of a chain kept (the raised one first, then its cause or context).
MAX_CHAIN = 4
_MESSAGE_CHARS = 1000
_TRACEBACK_CHARS = 1500
_STATE_CHARS = 1000  # a declared exception's args and attributes, encoded

E = TypeVar("E", bound=type[BaseException])

_declared: dict[str, type[BaseException]] = {}
_lock = threading.Lock()


def qualified_name(cls: type[BaseException]) -> str:
    """The module-qualified name a failure records for ``cls`` (``app.errors.Declined``)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def declare_error(cls: E) -> E:
    """Declare an exception class that workflows catch by type when a step raises it (a class decorator).

    A step failure of this class (or a subclass that is not declared itself) is rebuilt from its
    recorded JSON and raised at the step's call, on the first execution and on every replay.

    A class is known by its module-qualified name: declaring it again (a module reloaded) replaces
    the earlier class.

    Raises:
        RegistrationError: ``cls`` is not an exception class (a subclass of ``Exception``).
    """
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise RegistrationError(f"declare_error needs an Exception subclass, got {cls!r}")
    with _lock:
        _declared[qualified_name(cls)] = cls
    return cls


def declared(name: str) -> type[BaseException] | None:
    """The declared class recorded as ``name``, if this process declared it."""
    return _declared.get(name)


def declared_names() -> dict[str, type[BaseException]]:
    """Every declared class by name (a copy: ``registry.scope`` restores it)."""
    with _lock:
        return dict(_declared)


def restore_declared(saved: dict[str, type[BaseException]]) -> None:
    """Put back the declarations :func:`declared_names` returned (tests' ``registry.scope``)."""
    with _lock:
        _declared.clear()
        _declared.update(saved)


def _nearest_declared(cls: type[BaseException]) -> str | None:
    for base in cls.__mro__:
        name = qualified_name(base)
        if _declared.get(name) is base:
            return name
    return None


@dataclass(frozen=True)
class FailureLink:
    """One exception of a failure's chain.

    Attributes:
        type: the class's name (``Declined``).
        qualname: its module-qualified name (``app.errors.Declined``).
        message: ``str(exc)``, cut to 1,000 characters.
        traceback: the traceback text of where it was raised (the innermost frames kept).
        relation: how it links to the exception before it: ``"cause"`` (``raise ... from``),
            ``"context"`` (raised while handling it), or None for the first.
    """

    type: str
    qualname: str
    message: str
    traceback: str = ""
    relation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The link as JSON data."""
        return {"type": self.type, "qualname": self.qualname, "message": self.message,
                "traceback": self.traceback, "relation": self.relation}


@dataclass(frozen=True)
class Failure:
    """A step's exception as structured data: its chain (the raised exception first), and, for a
    declared class, which one to rebuild (``declared``) from ``state`` (its args and attributes)."""

    chain: tuple[FailureLink, ...]
    declared: str | None = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """The raised exception's class name."""
        return self.chain[0].type if self.chain else "?"

    @property
    def qualname(self) -> str:
        """The raised exception's module-qualified class name."""
        return self.chain[0].qualname if self.chain else "?"

    @property
    def message(self) -> str:
        """The raised exception's message."""
        return self.chain[0].message if self.chain else ""

    def to_dict(self) -> dict[str, Any]:
        """The failure as JSON data: ``chain`` (each link's type, qualname, message, traceback and
        relation), and ``declared`` and ``state`` for a declared class."""
        body: dict[str, Any] = {"chain": [link.to_dict() for link in self.chain]}
        if self.declared is not None:
            body.update(declared=self.declared, state=self.state)
        return body

    @classmethod
    def from_dict(cls, body: dict[str, Any]) -> Failure:
        """The failure :meth:`to_dict` gave."""
        chain = tuple(FailureLink(str(link["type"]), str(link["qualname"]), str(link.get("message", "")),
                                  str(link.get("traceback", "")), link.get("relation"))
                      for link in body.get("chain", []))
        return cls(chain, body.get("declared"), dict(body.get("state") or {}))

    def to_json(self) -> str:
        """The failure as JSON text (``{"failure": {...}}``), as a failed outcome's data holds it."""
        return json.dumps({"failure": self.to_dict()}, separators=(",", ":"))

    def describe_chain(self) -> str:
        """The chain as lines of text, the raised exception first (the CLI's and dashboard's view)."""
        lines: list[str] = []
        for link in self.chain:
            if link.relation == "cause":
                lines.append("caused by:")
            elif link.relation == "context":
                lines.append("while handling:")
            lines.append(f"{link.qualname}: {link.message}")
            lines.extend("  " + line for line in link.traceback.rstrip("\n").splitlines())
        return "\n".join(lines)


def _cut(text: str, limit: int, keep_end: bool = False) -> str:
    if len(text) <= limit:
        return text
    return "..." + text[-(limit - 3):] if keep_end else text[:limit - 3] + "..."


def _links(exc: BaseException) -> list[FailureLink]:
    links: list[FailureLink] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    relation: str | None = None
    while current is not None and id(current) not in seen and len(links) < MAX_CHAIN:
        seen.add(id(current))
        try:
            message = str(current)
        except Exception:  # noqa: BLE001 - a __str__ that fails must not hide the failure
            message = f"<{type(current).__name__} with an unprintable message>"
        tb = "".join(traceback.format_tb(current.__traceback__)) if current.__traceback__ is not None else ""
        links.append(FailureLink(type(current).__name__, qualified_name(type(current)),
                                 _cut(message, _MESSAGE_CHARS), _cut(tb, _TRACEBACK_CHARS, keep_end=True), relation))
        carried = getattr(current, "failure", None) if isinstance(current, StepFailed) else None
        if current.__cause__ is None and isinstance(carried, Failure):  # the step's own chain, recorded
            links.extend(dataclasses.replace(link, relation="cause" if i == 0 else link.relation)
                         for i, link in enumerate(carried.chain[:MAX_CHAIN - len(links)]))
            break
        if current.__cause__ is not None:
            current, relation = current.__cause__, "cause"
        elif current.__context__ is not None and not current.__suppress_context__:
            current, relation = current.__context__, "context"
        else:
            current = None
    return links


def _state(exc: BaseException) -> dict[str, Any]:
    """A declared exception's args and JSON attributes (each left out if it is no JSON data)."""
    state: dict[str, Any] = {}
    for key, value in (("args", list(exc.args)), ("attrs", dict(vars(exc)))):
        try:
            state[key] = codec.loads(codec.dumps(value, what="exception state", limit=_STATE_CHARS))
        except (SerializationError, TypeError, ValueError):
            if key == "attrs":  # keep the attributes that are data, one by one
                kept = {}
                for name, item in vars(exc).items():
                    try:
                        kept[name] = codec.loads(codec.dumps(item, what="attribute", limit=_STATE_CHARS))
                    except (SerializationError, TypeError, ValueError):
                        continue
                state[key] = kept if len(codec.dumps(kept)) <= _STATE_CHARS else {}
            else:
                state[key] = [_cut(str(exc), _MESSAGE_CHARS)]
    return state


def capture(exc: BaseException) -> Failure:
    """The structured failure of ``exc`` (bounded: see :data:`MAX_FAILURE_CHARS`)."""
    name = _nearest_declared(type(exc))
    failure = Failure(tuple(_links(exc)), name, _state(exc) if name is not None else {})
    while len(failure.to_json()) > MAX_FAILURE_CHARS and len(failure.chain) > 1:
        failure = Failure(failure.chain[:-1], failure.declared, failure.state)
    if len(failure.to_json()) > MAX_FAILURE_CHARS:  # one link with its state: keep its message
        link = failure.chain[0]
        failure = Failure((FailureLink(link.type, link.qualname, link.message),), failure.declared,
                          failure.state if len(json.dumps(failure.state)) <= _STATE_CHARS else {})
    return failure


def parse(data: str | None) -> Failure | None:
    """The failure a failed outcome's data holds; None for records written before failures kept
    their type (their data is empty) or data that is no failure."""
    if not data or not data.startswith('{"failure":'):
        return None
    try:
        return Failure.from_dict(json.loads(data)["failure"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def rebuild(failure: Failure) -> BaseException | None:
    """The declared exception a failure names, rebuilt from its JSON state (``__init__`` is not
    called: its ``args`` and attributes are set); None if it names none this process declared."""
    cls = declared(failure.declared) if failure.declared else None
    if cls is None:
        return None
    args = failure.state.get("args")
    exc = cls.__new__(cls, *(args if isinstance(args, list) else [failure.message]))
    exc.args = tuple(args) if isinstance(args, list) else (failure.message,)
    attrs = failure.state.get("attrs")
    if isinstance(attrs, dict):
        for key, value in attrs.items():
            try:
                setattr(exc, str(key), value)
            except (AttributeError, TypeError):  # a read-only property: the value stays in the failure
                continue
    return exc


def run_failure(run_id: str, error: str | None, data: str | None) -> RunFailed:
    """What a client's ``result()`` raises for a failed run: RunFailed with the run's structured
    failure (its ``result`` holds it, as a failed step's record does) and, when the raised type is
    declared here, that exception rebuilt as its ``cause``."""
    failure = parse(data)
    return RunFailed(run_id, error, failure=failure, cause=rebuild(failure) if failure is not None else None)


def child_failure(run_id: str, status: str, error: str | None, data: str | None) -> ChildFailed:
    """What a parent's wait for a child that did not complete raises: ChildFailed with the child's
    structured failure and, when its type is declared here, the child's exception as its ``cause``."""
    failure = parse(data) if status == EventStatus.FAILED else None
    return ChildFailed(run_id, status, error, failure=failure, cause=rebuild(failure) if failure is not None else None)


def step_failure(name: str, error: str | None, data: str | None) -> BaseException:
    """What a workflow's step call raises for a failed step: the declared exception rebuilt (its
    ``__cause__`` the :class:`~workflows.errors.StepFailed`), else the StepFailed carrying the chain."""
    failure = parse(data)
    failed = StepFailed(name, error, failure=failure)
    rebuilt = rebuild(failure) if failure is not None else None
    if rebuilt is None:
        return failed
    rebuilt.__cause__ = failed
    return rebuilt
