"""The AWS actions each process's code can ask for, read from the source: the declarations of
``workflows.core.storage.aws_actions`` and a call graph from each role's entry points.

The call graph is built with ``ast`` over the deployed packages (``workflows``, ``persistence``,
``beat``, without the simulator, soak, test helpers, in-memory store and local emulator, which no
deployed process runs). Its nodes are module-level functions, methods, classes and module-level
variables; a nested function or lambda is part of the function it is in. It over-approximates:

- a name goes to what it names through the module's imports (re-exports followed);
- ``obj.attr`` goes to the method ``attr`` of ``obj``'s class, and to its subclasses' overrides, when
  that class is known: ``self``, a parameter or variable annotated with a class of the packages, a
  variable assigned an instance (``Foo(...)``) or the result of a function or method whose return
  annotation names one, an attribute of ``self`` assigned any of these. A protocol's method goes
  to every method of that name (any implementation may run);
- ``obj.attr`` on an object of unknown class goes to every method named ``attr`` in the packages
  (every property, when it is not called); on an object of a class outside the packages (a string,
  a regex match, a boto3 client), nowhere;
- a used class reaches its dunder methods, its bases and its class body; a function referred to
  (a callback, a ``functools.partial``) is reached as if called.

What it cannot see: calls that go through a library (Celery calling a task, kombu calling the
channel), which the roles' entry points name; ``getattr`` with a computed name; code of the
user's workflows and steps.

A declaration ``service:Action@{param}`` is resolved at each call: the argument of ``param`` is a
literal, a module constant, or a parameter of the caller (which then declares the action on it in
turn); a call whose argument is none of these must be in a function that declares what it makes.
A write plan's ``own`` check is not sent: the store reads that item back (GetItem) when the plan
is refused, so a ``ConditionCheckItem`` declared by a check given as ``own=`` (or assigned to a
variable ``own``) is a ``GetItem``.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections import deque
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Union

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("workflows", "persistence", "beat")
#: Packages no deployed process runs.
OUTSIDE = ("workflows.sim", "workflows.soak", "workflows.testing", "workflows.memory", "workflows.local")
DECORATOR = "aws_actions"
ACTION = re.compile(r"^(dynamodb|sqs|s3|cloudformation):[A-Z][A-Za-z0-9]+@(\*|[a-z]+(/index)?|\{[a-z_]+\})$")
Action = tuple[str, str]  # ("dynamodb:Query", "runs/index")

#: The class of an object of a library or a builtin that is no collection (a string, a number, a regex
#: match, a boto3 client): its methods run none of the packages' code, nor return its objects.
FOREIGN = "<foreign>"
#: A builtin collection (a dict, a list): its methods run none of the packages' code, but may return
#: what it holds.
CONTAINER = "<container>"
#: A class key, FOREIGN, CONTAINER, or None (unknown).
Type = Union[str, None]
ATOMS = frozenset({"str", "int", "float", "bool", "bytes", "complex", "bytearray", "memoryview", "range"})
COLLECTIONS = frozenset({"list", "dict", "set", "frozenset", "tuple", "deque", "defaultdict", "OrderedDict", "Counter",
                         "Mapping", "MutableMapping", "Sequence", "MutableSequence", "Collection", "AbstractSet"})
#: Builtins whose result is a collection of what they are given.
COLLECTING_BUILTINS = frozenset({"list", "dict", "set", "frozenset", "tuple", "sorted", "reversed", "enumerate", "zip",
                                 "filter", "map", "iter"})
#: Builtins whose result is no object of the packages.
ATOM_BUILTINS = frozenset({"len", "str", "int", "float", "bool", "bytes", "repr", "open", "isinstance", "issubclass",
                           "range", "round", "abs", "sum", "any", "all", "hash", "id", "format", "ord", "chr",
                           "print", "callable", "hasattr", "divmod", "hex", "bytearray", "memoryview"})
#: Objects of a library the source types as ``Any``: the PynamoDB model classes of ``Models`` and
#: what ``model_of`` returns (their methods send requests, declared where they are called).
LIBRARY_ATTRIBUTES = frozenset({"persistence.models:Models"})
LIBRARY_RESULTS = frozenset({"persistence.plans:PlanStore.model_of"})
#: Bases that bring no method the graph would miss.
PLAIN_BASES = frozenset({"object", "Protocol", "Generic", "Enum", "IntEnum", "StrEnum", "str", "int", "float",
                         "NamedTuple", "TypedDict", "Exception", "BaseException", "ValueError", "TypeError",
                         "KeyError", "RuntimeError", "LookupError", "TimeoutError", "ABC"})


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    package: bool
    imports: dict[str, str] = field(default_factory=dict)  # local name -> dotted target
    defs: dict[str, str] = field(default_factory=dict)  # module-level name -> node key
    constants: dict[str, str] = field(default_factory=dict)  # NAME = "literal" at module level


@dataclass
class Node:
    """A module-level function, a method, a class or a module-level variable."""

    key: str  # "package.module:Qual.name"
    kind: str  # "function", "class", "var"
    module: str
    tree: ast.AST
    cls: str | None = None  # the class key of a method
    params: list[str] = field(default_factory=list)  # parameters (without self/cls); a dataclass's fields
    declared: set[Action] = field(default_factory=set)
    per_param: set[tuple[str, str]] = field(default_factory=set)  # ("dynamodb:GetItem", "table")
    elsewhere: str | None = None
    has_declaration: bool = False
    refs: set[str] = field(default_factory=set)
    actions: set[Action] = field(default_factory=set)  # declared, and resolved at its calls
    unresolved: list[str] = field(default_factory=list)  # calls whose table no declaration names


@dataclass
class Scope:
    """What a node's code knows of its names."""

    node: Node
    module: Module
    local: set[str]
    annotations: dict[str, ast.expr]
    values: dict[str, list[ast.expr]]
    fixed: dict[str, Type]
    elements: dict[str, list[ast.expr]]  # a loop's (or comprehension's) name -> what it iterates


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts[-1] == "__init__"
    if package:
        parts.pop()
    return ".".join(parts), package


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without annotations (a type named in one is not called)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for name, value in ast.iter_fields(node):
            if name in ("annotation", "returns"):
                continue
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, ast.AST))


def _body(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of a function (its nested functions, lambdas and classes included), of a class
    body without its methods, or of a module-level assignment's value; annotations left out."""
    if isinstance(tree, ast.ClassDef):
        for stmt in tree.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from _walk(stmt)
        for base in [*tree.bases, *tree.keywords]:
            yield from _walk(base)
    elif isinstance(tree, (ast.Assign, ast.AnnAssign)):
        if tree.value is not None:
            yield from _walk(tree.value)
    else:
        yield from _walk(tree)


def _last_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):
        return _last_name(expr.value)
    return None


def _static(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(_last_name(d) == "staticmethod" for d in fn.decorator_list)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    if method and not _static(fn) and names:
        names = names[1:]
    return names + [a.arg for a in fn.args.kwonlyargs]


def _fields(cls: ast.ClassDef) -> list[str]:
    return [s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


def _parse_declaration(node: Node, decorators: list[ast.expr]) -> None:
    for decorator in decorators:
        if not (isinstance(decorator, ast.Call) and _last_name(decorator.func) == DECORATOR):
            continue
        node.has_declaration = True
        for arg in decorator.args:
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and ACTION.match(arg.value)):
                raise ValueError(f"{node.key}: not a declaration of an action: {ast.unparse(arg)}")
            action, resource = arg.value.split("@")
            if resource.startswith("{"):
                param = resource[1:-1]
                if param not in node.params:
                    raise ValueError(f"{node.key}: declares {arg.value} but has no parameter {param!r}")
                node.per_param.add((action, param))
            else:
                node.declared.add((action, resource))
        for keyword in decorator.keywords:
            if keyword.arg == "elsewhere":
                node.elsewhere = ast.unparse(keyword.value)
        if not (node.declared or node.per_param or node.elsewhere):
            raise ValueError(f"{node.key}: an empty declaration")


def _annotation(expr: ast.expr | None) -> ast.expr | None:
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        try:
            return ast.parse(expr.value, mode="eval").body
        except SyntaxError:
            return None
    return expr


def _combine(types: Iterable[Type]) -> Type:
    found = set(types)
    classes = found - {FOREIGN, CONTAINER, None}
    if len(classes) == 1:
        return classes.pop()
    if found and found <= {FOREIGN, CONTAINER}:
        return FOREIGN if found == {FOREIGN} else CONTAINER
    return None


class Graph:
    """The declarations and the call graph of the deployed packages."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}
        self.nodes: dict[str, Node] = {}
        self.methods: dict[str, list[str]] = {}  # method name -> keys
        self.bases: dict[str, list[ast.expr]] = {}
        self.properties: set[str] = set()
        self.attributes: dict[tuple[str, str], list[tuple[str, ast.expr, bool]]] = {}  # (class, attr) -> values
        self._scopes: dict[str, Scope] = {}
        self._typing: set[tuple[str, int]] = set()  # (node, id(expr)) being typed: no loops
        for package in PACKAGES:
            for path in sorted((ROOT / package).rglob("*.py")):
                name, is_package = _module_name(path)
                if any(name == o or name.startswith(o + ".") for o in OUTSIDE):
                    continue
                self.modules[name] = Module(name, path, ast.parse(path.read_text(), str(path)), is_package)
        for module in self.modules.values():
            self._collect(module)
        for module in self.modules.values():
            self._imports(module)
        for node in list(self.nodes.values()):
            if node.cls is not None:
                self._self_attributes(node)
        for node in self.nodes.values():
            self._link(node)
        self._resolve_declarations()

    # -- nodes --------------------------------------------------------------------------------------
    def _add(self, node: Node, decorators: list[ast.expr]) -> None:
        _parse_declaration(node, decorators)
        self.nodes[node.key] = node

    def _collect(self, module: Module) -> None:
        for stmt in module.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{module.name}:{stmt.name}"
                self._add(Node(key, "function", module.name, stmt, params=_params(stmt, False)), stmt.decorator_list)
                module.defs[stmt.name] = key
            elif isinstance(stmt, ast.ClassDef):
                self._collect_class(module, stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    for name in [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]:
                        key = f"{module.name}:{name}"
                        self.nodes[key] = Node(key, "var", module.name, stmt)
                        module.defs[name] = key
                        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                            module.constants[name] = stmt.value.value

    def _collect_class(self, module: Module, cls: ast.ClassDef) -> None:
        key = f"{module.name}:{cls.name}"
        self._add(Node(key, "class", module.name, cls, params=_fields(cls)), cls.decorator_list)
        module.defs[cls.name] = key
        self.bases[key] = list(cls.bases)
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                self.attributes.setdefault((key, stmt.target.id), []).append((key, stmt.annotation, True))
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                method = f"{key}.{stmt.name}"
                self._add(Node(method, "function", module.name, stmt, cls=key, params=_params(stmt, True)),
                          stmt.decorator_list)
                self.methods.setdefault(stmt.name, []).append(method)
                if any(_last_name(d) in ("property", "cached_property", "setter") for d in stmt.decorator_list):
                    self.properties.add(method)

    def _self_attributes(self, node: Node) -> None:
        """``self.attr = value`` (or ``self.attr: T = value``) in a method: what ``self.attr`` may hold."""
        fn = node.tree
        assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.cls is not None
        arguments = [*fn.args.posonlyargs, *fn.args.args]
        if _static(fn) or not arguments:
            return
        me = arguments[0].arg
        for inner in ast.walk(fn):
            pairs: list[tuple[ast.expr, ast.expr, bool]] = []
            if isinstance(inner, ast.Assign):
                pairs = [(t, inner.value, False) for t in inner.targets]
            elif isinstance(inner, ast.AnnAssign):
                pairs = [(inner.target, inner.annotation, True)]
            for target, value, annotated in pairs:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                    self.attributes.setdefault((node.cls, target.attr), []).append((node.key, value, annotated))

    def _imports(self, module: Module) -> None:
        package = module.name if module.package else module.name.rpartition(".")[0]
        for stmt in ast.walk(module.tree):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        module.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        module.imports[top] = top
            elif isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - (stmt.level - 1)]
                    base = ".".join(parts + ([base] if base else []))
                for alias in stmt.names:
                    module.imports[alias.asname or alias.name] = f"{base}.{alias.name}"

    # -- names -------------------------------------------------------------------------------------
    def resolve_dotted(self, dotted: str, depth: int = 0) -> str | None:
        """The node key (or ``module:`` for a module) a dotted name designates in the packages."""
        if depth > 10:
            return None
        if dotted in self.modules:
            return dotted + ":"
        module, _, name = dotted.rpartition(".")
        if module in self.modules:
            found = self.modules[module]
            if name in found.defs:
                return found.defs[name]
            if name in found.imports:  # re-exported
                return self.resolve_dotted(found.imports[name], depth + 1)
            return None
        if module:
            outer = self.resolve_dotted(module, depth + 1)
            if outer is not None and not outer.endswith(":") and self.nodes[outer].kind == "class":
                method = f"{outer}.{name}"
                return method if method in self.nodes else None
        return None

    def resolve_name(self, module: Module, name: str) -> str | None:
        if name in module.defs:
            return module.defs[name]
        if name in module.imports:
            return self.resolve_dotted(module.imports[name])
        return None

    def _foreign_name(self, module: Module, name: str) -> bool:
        """A name of a builtin or of a library (not of the packages)."""
        if name in module.defs:
            return False
        if name in module.imports:
            return module.imports[name].split(".")[0] not in PACKAGES
        return hasattr(builtins, name)

    def designated(self, scope: Scope, expr: ast.expr) -> str | None:
        """The module (``name:``) or node a name or dotted name designates, if it is one."""
        if isinstance(expr, ast.Name):
            return None if expr.id in scope.local else self.resolve_name(scope.module, expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.designated(scope, expr.value)
            if base is None:
                return None
            if base.endswith(":"):
                return self.resolve_dotted(base[:-1] + "." + expr.attr)
            if self.nodes[base].kind == "class":
                found = self._class_member(base, expr.attr)
                return found[0] if found else None
        return None

    def resolve_expr(self, scope: Scope, expr: ast.expr, called: bool = True) -> list[str]:
        """The nodes ``expr`` (a name or an attribute) may designate."""
        if isinstance(expr, ast.Name):
            found = self.designated(scope, expr)
            return [found] if found and not found.endswith(":") else []
        if not isinstance(expr, ast.Attribute):
            return []
        is_super = isinstance(expr.value, ast.Call) and isinstance(expr.value.func, ast.Name) \
            and expr.value.func.id == "super"
        if is_super:
            return self._super_member(scope, expr.attr)
        if expr.attr.startswith("__") and expr.attr.endswith("__"):
            return []
        base = self.designated(scope, expr.value)
        if base is not None and base.endswith(":"):
            member = self.resolve_dotted(base[:-1] + "." + expr.attr)
            return [member] if member and not member.endswith(":") else []
        if base is not None and self.nodes[base].kind == "class":
            members = self._class_member(base, expr.attr)
            return members if members or self._closed(base) else self._by_name(expr.attr, called)
        if base is not None and self.nodes[base].kind == "function":
            decorated = [d for d in self.nodes[base].tree.decorator_list  # type: ignore[attr-defined]
                         if _last_name(d) != DECORATOR]
            return self._by_name(expr.attr, called) if decorated else []  # a plain function's attribute
        kind = self.type_of(scope, expr.value)
        if kind in (FOREIGN, CONTAINER):
            return []
        if kind is not None:
            lineage = self.lineage(kind)
            candidates = [m for m in self.methods.get(expr.attr, []) if self.nodes[m].cls in lineage]
            if any(self._protocol(self.nodes[m].cls or "") for m in candidates):
                return self._by_name(expr.attr, called)  # any implementation of the protocol
            if candidates or all(self._closed(c) for c in lineage):
                return candidates
        return self._by_name(expr.attr, called)

    @cache  # noqa: B019 - one graph per test session
    def lineage(self, cls: str) -> frozenset[str]:
        """The classes whose methods an instance of ``cls`` may run: those of the MRO of ``cls`` and
        of each of its subclasses (a mixin's ``self.commit`` is a sibling mixin's)."""
        found: set[str] = set()
        for sub in [cls, *(c for c in self.bases if cls in self.ancestors(c))]:
            found |= {sub, *self.ancestors(sub)}
        return frozenset(found)

    def _by_name(self, name: str, called: bool) -> list[str]:
        return [m for m in self.methods.get(name, []) if called or m in self.properties]

    def _super_member(self, scope: Scope, name: str) -> list[str]:
        cls = scope.node.cls
        if cls is None:
            return self._by_name(name, True)
        for base in self.base_classes(cls):
            found = self._class_member(base, name)
            if found:
                return found
        return []  # a library's base class

    def _class_member(self, cls: str, name: str, depth: int = 0) -> list[str]:
        if f"{cls}.{name}" in self.nodes:
            return [f"{cls}.{name}"]
        for base in self.base_classes(cls) if depth < 10 else []:
            found = self._class_member(base, name, depth + 1)
            if found:
                return found
        return []

    def _protocol(self, cls: str) -> bool:
        return any(_last_name(b) == "Protocol" for b in self.bases.get(cls, []))

    @cache  # noqa: B019 - one graph per test session
    def _closed(self, cls: str) -> bool:
        """Every base of ``cls`` is of the packages (and closed) or brings no method of its own."""
        module = self.modules[self.nodes[cls].module]
        for base in self.bases.get(cls, []):
            name = _last_name(base)
            if name in PLAIN_BASES:
                continue
            key = self.resolve_name(module, name) if isinstance(base, ast.Name) and name else None
            if key is None and isinstance(base, ast.Attribute):
                key = self.designated(self.scope(self.nodes[cls]), base)
            if key is None or key.endswith(":") or self.nodes[key].kind != "class" or not self._closed(key):
                return False
        return True

    def base_classes(self, cls: str) -> list[str]:
        module = self.modules[self.nodes[cls].module]
        found = []
        for base in self.bases.get(cls, []):
            target = base.value if isinstance(base, ast.Subscript) else base
            name = target.id if isinstance(target, ast.Name) else None
            key = self.resolve_name(module, name) if name else self.designated(self.scope(self.nodes[cls]), target)
            if key is not None and not key.endswith(":") and self.nodes[key].kind == "class":
                found.append(key)
        return found

    @cache  # noqa: B019 - one graph per test session
    def ancestors(self, cls: str) -> frozenset[str]:
        if not cls:
            return frozenset()
        found: set[str] = set()
        todo = self.base_classes(cls)
        while todo:
            base = todo.pop()
            if base not in found:
                found.add(base)
                todo += self.base_classes(base)
        return frozenset(found)

    # -- types -------------------------------------------------------------------------------------
    def scope(self, node: Node) -> Scope:
        if node.key in self._scopes:
            return self._scopes[node.key]
        module = self.modules[node.module]
        local: set[str] = set()
        annotations: dict[str, ast.expr] = {}
        values: dict[str, list[ast.expr]] = {}
        fixed: dict[str, Type] = {}
        elements: dict[str, list[ast.expr]] = {}
        if node.kind == "function":
            fn = node.tree
            assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            arguments = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            if fn.args.vararg:
                local.add(fn.args.vararg.arg)
            if fn.args.kwarg:
                local.add(fn.args.kwarg.arg)
            if node.cls is not None and arguments and not _static(fn):
                fixed[arguments[0].arg] = node.cls
                local.add(arguments[0].arg)
                arguments = arguments[1:]
            for argument in arguments:
                local.add(argument.arg)
                if argument.annotation is not None:
                    annotations[argument.arg] = argument.annotation
            for inner in ast.walk(fn):
                if inner is fn:
                    continue
                if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    local.add(inner.id)
                elif isinstance(inner, ast.arg):
                    local.add(inner.arg)
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    local.add(inner.name)
                elif isinstance(inner, ast.ExceptHandler) and inner.name:
                    local.add(inner.name)
                    fixed[inner.name] = FOREIGN if inner.type is not None and all(
                        isinstance(t, ast.Name) and hasattr(builtins, t.id)
                        for t in (inner.type.elts if isinstance(inner.type, ast.Tuple) else [inner.type])) else None
                if isinstance(inner, ast.Assign):
                    for target in inner.targets:
                        self._bind(target, inner.value, values)
                elif isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                    annotations[inner.target.id] = inner.annotation
                elif isinstance(inner, ast.NamedExpr):
                    values.setdefault(inner.target.id, []).append(inner.value)
                elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(
                        inner.target, ast.Name):
                    elements.setdefault(inner.target.id, []).append(inner.iter)
        scope = self._scopes[node.key] = Scope(node, module, local, annotations, values, fixed, elements)
        return scope

    @staticmethod
    def _bind(target: ast.expr, value: ast.expr, values: dict[str, list[ast.expr]]) -> None:
        if isinstance(target, ast.Name):
            values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for one, other in zip(target.elts, value.elts, strict=True):
                Graph._bind(one, other, values)

    def annotation_type(self, module: Module, expr: ast.expr | None, scope: Scope | None = None) -> Type:
        expr = _annotation(expr)
        if expr is None:
            return None
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            sides = [s for s in (expr.left, expr.right) if not (isinstance(s, ast.Constant) and s.value is None)]
            return _combine(self.annotation_type(module, s, scope) for s in sides)
        if isinstance(expr, ast.Subscript):
            name = _last_name(expr.value)
            if name == "Optional":
                return self.annotation_type(module, expr.slice, scope)
            if name in ("Union",) and isinstance(expr.slice, ast.Tuple):
                return _combine(self.annotation_type(module, s, scope) for s in expr.slice.elts
                                if not (isinstance(s, ast.Constant) and s.value is None))
            if name in ("type", "Callable", "Iterator", "Iterable", "Generator", "ClassVar", "Final"):
                return None
            return self.annotation_type(module, expr.value, scope)
        if isinstance(expr, ast.Name):
            if expr.id in ("Any", "object"):
                return None
            if expr.id in ATOMS:
                return FOREIGN
            if expr.id in COLLECTIONS:
                return CONTAINER
            key = self.resolve_name(module, expr.id)
            if key is not None and not key.endswith(":"):
                return key if self.nodes[key].kind == "class" else None
            return FOREIGN if self._foreign_name(module, expr.id) else None
        if isinstance(expr, ast.Attribute):
            key = self.designated(scope, expr) if scope is not None else None
            if key is not None and not key.endswith(":") and self.nodes[key].kind == "class":
                return key
            root = expr
            while isinstance(root, ast.Attribute):
                root = root.value  # type: ignore[assignment]
            if isinstance(root, ast.Name) and self._foreign_name(module, root.id):
                return FOREIGN
        return None

    def type_of(self, scope: Scope, expr: ast.expr) -> Type:
        """The class of the object ``expr`` evaluates to, as far as the source says."""
        mark = (scope.node.key, id(expr))
        if mark in self._typing:
            return None
        self._typing.add(mark)
        try:
            return self._type_of(scope, expr)
        finally:
            self._typing.discard(mark)

    def _type_of(self, scope: Scope, expr: ast.expr) -> Type:
        if isinstance(expr, (ast.Constant, ast.JoinedStr, ast.Compare, ast.UnaryOp)):
            return FOREIGN
        if isinstance(expr, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
                             ast.GeneratorExp)):
            return CONTAINER
        if isinstance(expr, ast.BinOp):
            return _combine([self.type_of(scope, expr.left), self.type_of(scope, expr.right)])
        if isinstance(expr, ast.IfExp):
            return _combine([self.type_of(scope, expr.body), self.type_of(scope, expr.orelse)])
        if isinstance(expr, ast.BoolOp):
            return _combine(self.type_of(scope, v) for v in expr.values)
        if isinstance(expr, ast.Await):
            return self.type_of(scope, expr.value)
        if isinstance(expr, ast.Name):
            return self._name_type(scope, expr.id)
        if isinstance(expr, ast.Attribute):
            return self._attribute_type(scope, expr)
        if isinstance(expr, ast.Call):
            return self._call_type(scope, expr)
        return None

    def _name_type(self, scope: Scope, name: str) -> Type:
        if name in scope.fixed:
            return scope.fixed[name]
        if name in scope.annotations:
            return self.annotation_type(scope.module, scope.annotations[name], scope)
        if name in scope.values or name in scope.elements:
            return _combine([*(self.type_of(scope, v) for v in scope.values.get(name, [])),
                             *(self._element_type(scope, v) for v in scope.elements.get(name, []))])
        if name in scope.local:
            return None
        key = self.resolve_name(scope.module, name)
        if key is not None:
            if key.endswith(":") or self.nodes[key].kind != "var":
                return None
            var = self.nodes[key]
            value = var.tree.value if isinstance(var.tree, (ast.Assign, ast.AnnAssign)) else None
            if isinstance(var.tree, ast.AnnAssign):
                return self.annotation_type(self.modules[var.module], var.tree.annotation)
            return self.type_of(self.scope(var), value) if value is not None else None
        return FOREIGN if self._foreign_name(scope.module, name) else None

    def _element_type(self, scope: Scope, iterable: ast.expr) -> Type:
        """What iterating ``iterable`` yields: a library object's items are of the library (a string's
        characters, a regex's matches); a collection's are what its annotation says, if it says."""
        if isinstance(iterable, (ast.List, ast.Tuple, ast.Set)):
            return _combine(self.type_of(scope, e) for e in iterable.elts)
        if isinstance(iterable, ast.Name) and iterable.id in scope.annotations:
            annotation = _annotation(scope.annotations[iterable.id])
            if isinstance(annotation, ast.Subscript) and _last_name(annotation.value) in (
                    *COLLECTIONS, "Iterable", "Iterator", "Sequence"):
                inner = annotation.slice.elts[0] if isinstance(annotation.slice, ast.Tuple) else annotation.slice
                return self.annotation_type(scope.module, inner, scope)
        return FOREIGN if self.type_of(scope, iterable) == FOREIGN else None

    def _attribute_type(self, scope: Scope, expr: ast.Attribute) -> Type:
        base = self.designated(scope, expr.value)
        if base is not None and base.endswith(":"):
            member = self.resolve_dotted(base[:-1] + "." + expr.attr)
            if member is not None and not member.endswith(":") and self.nodes[member].kind == "var":
                return self._name_type(self.scope(self.nodes[member]), member.rpartition(":")[2])
            return None
        owner = self.type_of(scope, expr.value)
        if owner in (FOREIGN, CONTAINER, None):
            return owner if owner == FOREIGN else None
        if owner in LIBRARY_ATTRIBUTES:
            return FOREIGN
        found: list[Type] = []
        for cls in [owner, *self.ancestors(owner)]:
            for where, value, annotated in self.attributes.get((cls, expr.attr), []):
                at = self.scope(self.nodes[where])
                found.append(self.annotation_type(at.module, value, at) if annotated else self.type_of(at, value))
            prop = f"{cls}.{expr.attr}"
            if prop in self.properties:
                fn = self.nodes[prop].tree
                assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                found.append(self.annotation_type(self.modules[self.nodes[prop].module], fn.returns))
        return _combine(found) if found else None

    def _call_type(self, scope: Scope, call: ast.Call) -> Type:
        func = call.func
        if isinstance(func, ast.Name) and func.id not in scope.local and self.resolve_name(
                scope.module, func.id) is None:
            if func.id == "cast" and call.args:
                return self.annotation_type(scope.module, call.args[0], scope)
            if func.id in ATOM_BUILTINS:
                return FOREIGN
            if func.id in COLLECTING_BUILTINS:
                return CONTAINER
            if func.id in scope.module.imports and self._foreign_name(scope.module, func.id):
                return FOREIGN  # a library's function or class
            return None
        if isinstance(func, (ast.Name, ast.Attribute)) and self.type_of(scope, func) == FOREIGN:
            return FOREIGN  # an instance of a library's class (a PynamoDB model's item)
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id not in scope.local and self.designated(
                    scope, func.value) is None and self._foreign_name(scope.module, func.value.id):
                return FOREIGN  # a function of a library's module (json.loads, re.compile)
            if self.type_of(scope, func.value) == FOREIGN:
                return FOREIGN  # a method of a library's object
        found: list[Type] = []
        for key in self.resolve_expr(scope, func):
            callee = self.nodes[key]
            if key in LIBRARY_RESULTS:
                found.append(FOREIGN)
            elif callee.kind == "class":
                found.append(key)
            elif callee.kind == "function":
                fn = callee.tree
                assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                found.append(self.annotation_type(self.modules[callee.module], fn.returns, self.scope(callee)))
        return _combine(found) if found else None

    # -- edges -------------------------------------------------------------------------------------
    def _link(self, node: Node) -> None:
        scope = self.scope(node)
        body = list(_body(node.tree))
        called = {id(inner.func) for inner in body if isinstance(inner, ast.Call)}
        for inner in body:
            if isinstance(inner, (ast.Name, ast.Attribute)) and isinstance(inner.ctx, ast.Load):
                node.refs.update(self.resolve_expr(scope, inner, id(inner) in called))
        if node.kind == "class":
            node.refs.update(k for k in self.nodes if k.startswith(node.key + ".__") and k.endswith("__"))
            node.refs.update(self.base_classes(node.key))

    # -- declarations ------------------------------------------------------------------------------
    def _calls(self, node: Node) -> Iterator[tuple[ast.Call, bool]]:
        """Each call in ``node``'s code, and whether it is (part of) a write plan's ``own`` check."""
        own: set[int] = set()
        body = list(_body(node.tree))
        for inner in body:
            if isinstance(inner, ast.keyword) and inner.arg == "own":
                own.update(id(n) for n in ast.walk(inner.value))
            if isinstance(inner, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "own" for t in inner.targets):
                own.update(id(n) for n in ast.walk(inner.value))
        for inner in body:
            if isinstance(inner, ast.Call):
                yield inner, id(inner) in own

    @staticmethod
    def _argument(call: ast.Call, callee: Node, param: str) -> ast.expr | None:
        for keyword in call.keywords:
            if keyword.arg == param:
                return keyword.value
        index = callee.params.index(param)
        positional = [a for a in call.args if not isinstance(a, ast.Starred)]
        if len(positional) == len(call.args) and index < len(positional):
            return positional[index]
        return None

    def _table(self, module: Module, expr: ast.expr | None) -> str | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            return expr.value
        if isinstance(expr, ast.Name):
            if expr.id in module.constants:
                return module.constants[expr.id]
            if expr.id in module.imports:
                source, _, name = module.imports[expr.id].rpartition(".")
                if source in self.modules:
                    return self.modules[source].constants.get(name)
        return None

    def _resolve_declarations(self) -> None:
        for node in self.nodes.values():
            node.actions = set(node.declared)
        changed = True
        while changed:
            changed = False
            for node in self.nodes.values():
                scope = self.scope(node)
                unresolved: list[str] = []
                for call, own in self._calls(node):
                    for callee_key in self.resolve_expr(scope, call.func):
                        callee = self.nodes[callee_key]
                        for action, param in sorted(callee.per_param):
                            if own and action == "dynamodb:ConditionCheckItem":
                                action = "dynamodb:GetItem"
                            arg = self._argument(call, callee, param)
                            table = self._table(scope.module, arg)
                            if table is not None:
                                changed |= (action, table) not in node.actions
                                node.actions.add((action, table))
                            elif isinstance(arg, ast.Name) and arg.id in node.params:
                                changed |= (action, arg.id) not in node.per_param
                                node.per_param.add((action, arg.id))
                            else:
                                unresolved.append(f"{scope.module.path.relative_to(ROOT)}:{call.lineno}: "
                                                  f"{ast.unparse(call)[:70]} ({action}@{{{param}}})")
                node.unresolved = unresolved

    # -- reach -------------------------------------------------------------------------------------
    def entry_keys(self, entry: str) -> list[str]:
        """The nodes of an entry point: ``module:function``, ``module:Class`` (its methods and those
        of its bases), ``module:Class.method``, ``module:*`` (its public functions and classes)."""
        module, _, name = entry.partition(":")
        if module not in self.modules:
            raise KeyError(f"entry point {entry}: no module {module}")
        if name == "*":
            keys = [k for n, k in self.modules[module].defs.items()
                    if not n.startswith("_") and self.nodes[k].kind != "var"]
        else:
            keys = [f"{module}:{name}"]
        found: list[str] = []
        for key in keys:
            if key not in self.nodes:
                raise KeyError(f"entry point {entry}: no {key}")
            found.append(key)
            if self.nodes[key].kind == "class":
                found += self._all_methods(key)
        return found

    def _all_methods(self, cls: str) -> list[str]:
        return [k for c in [cls, *self.ancestors(cls)] for k in self.nodes if self.nodes[k].cls == c]

    def reach(self, entries: Iterable[str], cut: Iterable[str] = ()) -> dict[str, str | None]:
        """Each node reachable from ``entries`` (not through those of ``cut``), with the node it was
        first reached from."""
        for key in cut:
            if key not in self.nodes:
                raise KeyError(f"no {key} to cut")
        parent: dict[str, str | None] = dict.fromkeys(cut)
        todo: deque[str] = deque()
        for key in (k for e in entries for k in self.entry_keys(e)):
            if key not in parent:
                parent[key] = None
                todo.append(key)
        while todo:
            key = todo.popleft()
            for ref in sorted(self.nodes[key].refs):
                if ref not in parent:
                    parent[ref] = key
                    todo.append(ref)
        for key in cut:
            del parent[key]
        return parent

    def path(self, reached: dict[str, str | None], key: str) -> list[str]:
        """How ``key`` was reached: from an entry point to it."""
        path: list[str] = []
        at: str | None = key
        while at is not None:
            path.append(at)
            at = reached[at]
        return path[::-1]

    def actions(self, entries: Iterable[str], cut: Iterable[str] = ()) -> dict[Action, list[str]]:
        """Each action the code reachable from ``entries`` (not through ``cut``) declares, with the
        nodes that declare it."""
        found: dict[Action, list[str]] = {}
        for key in sorted(self.reach(entries, cut)):
            for action in self.nodes[key].actions:
                found.setdefault(action, []).append(key)
        return found


@lru_cache(maxsize=1)
def graph() -> Graph:
    return Graph()


# -- the requests in the source ----------------------------------------------------------------------
#: Each boto3 operation the packages call, and the IAM actions it needs.
BOTO3 = {
    "put_object": ("s3:PutObject",), "get_object": ("s3:GetObject",), "delete_object": ("s3:DeleteObject",),
    "copy_object": ("s3:GetObject", "s3:PutObject"), "list_objects_v2": ("s3:ListBucket",),
    "head_bucket": ("s3:ListBucket",), "create_bucket": ("s3:CreateBucket",),
    "get_bucket_lifecycle_configuration": ("s3:GetLifecycleConfiguration",),
    "put_bucket_lifecycle_configuration": ("s3:PutLifecycleConfiguration",),
    "send_message": ("sqs:SendMessage",), "send_message_batch": ("sqs:SendMessage",),
    "receive_message": ("sqs:ReceiveMessage",), "delete_message": ("sqs:DeleteMessage",),
    "change_message_visibility": ("sqs:ChangeMessageVisibility",), "get_queue_url": ("sqs:GetQueueUrl",),
    "get_queue_attributes": ("sqs:GetQueueAttributes",), "set_queue_attributes": ("sqs:SetQueueAttributes",),
    "purge_queue": ("sqs:PurgeQueue",), "create_queue": ("sqs:CreateQueue",), "list_queues": ("sqs:ListQueues",),
    "describe_time_to_live": ("dynamodb:DescribeTimeToLive",), "update_time_to_live": ("dynamodb:UpdateTimeToLive",),
    "describe_table": ("dynamodb:DescribeTable",), "update_table": ("dynamodb:UpdateTable",),
    "create_table": ("dynamodb:CreateTable",),
    "describe_stacks": ("cloudformation:DescribeStacks",),
    "describe_stack_events": ("cloudformation:DescribeStackEvents",),
    "create_stack": ("cloudformation:CreateStack",), "update_stack": ("cloudformation:UpdateStack",),
    "get_waiter": ("cloudformation:DescribeStacks",),
}
#: Celery sends a task as an SQS message (kombu).
CELERY = {"send_task": ("sqs:SendMessage",)}
#: kombu's SQS channel methods our channel calls through ``super()``.
KOMBU = {"_put": ("sqs:SendMessage",), "_schedule_queue": ("sqs:ReceiveMessage",)}
#: PynamoDB: a model class's requests, an index's, and a model instance's.
MODEL_OPS = {"get": "dynamodb:GetItem", "batch_get": "dynamodb:BatchGetItem", "query": "dynamodb:Query",
             "scan": "dynamodb:Scan", "count": "dynamodb:Query", "batch_write": "dynamodb:BatchWriteItem",
             "exists": "dynamodb:DescribeTable", "create_table": "dynamodb:CreateTable"}
INDEX_OPS = {"query": "dynamodb:Query", "scan": "dynamodb:Scan", "count": "dynamodb:Query"}
INSTANCE_OPS = {"save": "dynamodb:PutItem", "update": "dynamodb:UpdateItem", "delete": "dynamodb:DeleteItem",
                "refresh": "dynamodb:GetItem"}
#: PynamoDB classes whose use sends requests (a transaction commits when its block ends).
PYNAMODB_REQUESTS = {"TransactWrite", "TransactGet"}
LIBRARIES = ("pynamodb", "boto3", "botocore", "kombu", "celery")


@dataclass(frozen=True)
class Request:
    """An AWS request in the source: where, and the actions it needs (resource ``?``: unknown)."""

    node: str
    line: int
    text: str
    actions: tuple[Action, ...]


def model_tables() -> dict[str, str]:
    """The table of each model of ``Models`` (``persistence.plans.MODELS``, read from the source)."""
    tree = ast.parse((ROOT / "persistence" / "plans.py").read_text())
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and "MODELS" in ast.unparse(
                stmt.targets[0] if isinstance(stmt, ast.Assign) else stmt.target):
            value = ast.literal_eval(stmt.value)  # type: ignore[arg-type]
            return {model: table for table, model in value.items()}
    raise AssertionError("no MODELS in persistence/plans.py")


class Requests:
    """The AWS requests in the source, function by function: calls of boto3 operations, Celery's
    ``send_task``, kombu's channel (through ``super()``), and PynamoDB models, indexes and items."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.tables = model_tables()
        self.found: list[Request] = []
        for node in graph.nodes.values():
            if node.kind in ("function", "class"):
                self.found += self._scan(node)

    def _model(self, scope: Scope, expr: ast.expr, depth: int = 0) -> tuple[str, str] | None:
        """``("model" | "index" | "instance", table or "?")`` if ``expr`` is a PynamoDB model, one of its
        indexes, or an instance of one."""
        if depth > 5:
            return None
        if isinstance(expr, ast.Attribute):
            text = ast.unparse(expr)
            if text.startswith("self.m.") and text.count(".") == 2:
                return "model", self.tables.get(expr.attr, "?")
            inner = self._model(scope, expr.value, depth + 1)
            if inner is not None and inner[0] == "model" and expr.attr.startswith("by_"):
                return "index", inner[1] + "/index" if inner[1] != "?" else "?"
            return None
        if isinstance(expr, ast.Name):
            if expr.id == "model":
                return "model", "?"
            for value in scope.values.get(expr.id, []):
                found = self._model(scope, value, depth + 1)
                if found is not None:
                    return found
            for iterable in scope.elements.get(expr.id, []):
                table = self._rows(scope, iterable, depth + 1)
                if table is not None:
                    return "instance", table
            return None
        if isinstance(expr, ast.Call):
            if isinstance(expr.func, ast.Attribute) and expr.func.attr == "model_of":
                return "model", "?"
            inner = self._model(scope, expr.func, depth + 1)
            if inner is not None and inner[0] == "model":
                return "instance", inner[1]
        return None

    def _rows(self, scope: Scope, expr: ast.expr, depth: int) -> str | None:
        """The table whose items ``expr`` holds, if it is what a model's or index's read returns."""
        if depth > 5:
            return None
        if isinstance(expr, ast.Name):
            for value in scope.values.get(expr.id, []):
                table = self._rows(scope, value, depth + 1)
                if table is not None:
                    return table
            return None
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in ("list", "sorted") \
                and expr.args:
            return self._rows(scope, expr.args[0], depth + 1)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in (
                "query", "scan", "batch_get"):
            found = self._model(scope, expr.func.value, depth + 1)
            if found is not None and found[0] in ("model", "index"):
                return found[1].removesuffix("/index")
        return None

    def _actions(self, scope: Scope, call: ast.Call) -> tuple[Action, ...]:
        func = call.func
        if isinstance(func, ast.Name) and func.id in PYNAMODB_REQUESTS:
            return (("dynamodb:TransactWriteItems", "?"),)
        if not isinstance(func, ast.Attribute):
            return ()
        name = func.attr
        if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
            return tuple((a, "?") for a in KOMBU.get(name, ()))
        if name == "get_paginator" and call.args and isinstance(call.args[0], ast.Constant):
            return tuple((a, "?") for a in BOTO3.get(str(call.args[0].value), ()))
        if name in BOTO3 and not (isinstance(func.value, ast.Name) and func.value.id == "model"):
            if name not in MODEL_OPS or self._model(scope, func.value) is None:
                return tuple((a, "?") for a in BOTO3[name])
        if name in CELERY:
            return tuple((a, "?") for a in CELERY[name])
        if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Attribute) \
                and func.value.func.attr == "_get_connection" and name == "query":
            owner = self._model(scope, func.value.func.value)
            table = owner[1] if owner else "?"
            index = any(k.arg == "index_name" for k in call.keywords)
            return (("dynamodb:Query", table + "/index" if index and table != "?" else table),)
        found = self._model(scope, func.value)
        if found is None:
            return (("dynamodb:?", "?"),) if name in ("query", "scan", "batch_get", "batch_write") else ()
        kind, table = found
        ops = {"model": MODEL_OPS, "index": INDEX_OPS, "instance": INSTANCE_OPS}[kind]
        return ((ops[name], table),) if name in ops else ()

    def _scan(self, node: Node) -> list[Request]:
        scope = self.graph.scope(node)
        found = []
        body = list(_body(node.tree))
        called = {id(inner.func) for inner in body if isinstance(inner, ast.Call)}
        for inner in body:
            actions: tuple[Action, ...] = ()
            if isinstance(inner, ast.Call):
                actions = self._actions(scope, inner)
            elif isinstance(inner, ast.Attribute) and id(inner) not in called and inner.attr in INSTANCE_OPS:
                found_model = self._model(scope, inner.value)  # a bound request passed on (functools.partial)
                if found_model is not None and found_model[0] == "instance":
                    actions = ((INSTANCE_OPS[inner.attr], found_model[1]),)
            if actions:
                found.append(Request(node.key, getattr(inner, "lineno", 0), ast.unparse(inner)[:80], actions))
        return found


# -- the graph against the calls a run makes ------------------------------------------------------------
class CallTrace:
    """Records, while active, each call from a function of the packages to another (``sys.settrace``
    on this thread and those it starts): ``(caller node, callee node)``, skipping a callee already on
    the stack (a callback its caller's caller passed down) and frames of ``functools`` and
    ``contextlib`` between them."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.edges: set[tuple[str, str]] = set()
        self._below: set[tuple[str, str]] = set()
        self._keys: dict[object, str | None] = {}

    def _key(self, frame: object) -> str | None:
        code = frame.f_code  # type: ignore[attr-defined]
        if code in self._keys:
            return self._keys[code]
        module = frame.f_globals.get("__name__", "")  # type: ignore[attr-defined]
        qualname = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
        key = f"{module}:{qualname}"
        found = key if module in self.graph.modules and key in self.graph.nodes else None
        self._keys[code] = found
        return found

    def _trace(self, frame: object, event: str, arg: object) -> None:
        key = self._key(frame)
        if key is None:
            return None
        parent = frame.f_back  # type: ignore[attr-defined]
        while parent is not None and self._key(parent) is None and parent.f_globals.get(
                "__name__", "") in ("functools", "contextlib"):
            parent = parent.f_back
        caller = self._key(parent) if parent is not None else None
        pair = (caller or "", key)
        if caller is None or caller == key or pair in self.edges or pair in self._below:
            return None
        above = parent.f_back
        while above is not None:
            if self._key(above) == key:
                self._below.add(pair)
                return None
            above = above.f_back
        self.edges.add(pair)
        return None

    def __enter__(self) -> CallTrace:
        import sys
        import threading

        sys.settrace(self._trace)
        threading.settrace(self._trace)
        return self

    def __exit__(self, *exc: object) -> None:
        import sys
        import threading

        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]

    def unexplained(self) -> list[tuple[str, str]]:
        """The recorded calls the graph does not reach from the caller, nor from a caller of the
        caller or of that one (what passed the callback down), dunder methods left out (Python
        calls those: a ``__getattr__`` proxy's targets are reached from its callers)."""
        callers: dict[str, set[str]] = {}
        for caller, callee in self.edges:
            callers.setdefault(callee, set()).add(caller)
        reached: dict[str, dict[str, str | None]] = {}

        def reach(key: str) -> dict[str, str | None]:
            if key not in reached:
                reached[key] = self.graph.reach([key]) if self.graph.nodes[key].kind != "var" else {}
            return reached[key]

        found = []
        for caller, callee in sorted(self.edges):
            if callee.partition(":")[2].rpartition(".")[2].startswith("__") or callee in reach(caller):
                continue
            up = callers.get(caller, set())
            if any(callee in reach(c) for c in up | {d for c in up for d in callers.get(c, set())}):
                continue
            found.append((caller, callee))
        return found
