"""Every stored state and kind is an enum of ``workflows/core/model/states.py`` (docs/architecture.md,
"Words"): code compares a status, a state, a kind or an outcome with a member, never with a string
literal, so a typo is an AttributeError at import time rather than a branch that is never taken."""

from __future__ import annotations

import ast
import enum
from pathlib import Path

from tests.conftest import ROOT
from workflows.core.model import states

PACKAGES = ("workflows", "persistence", "beat")
WORDS = ("status", "state", "kind", "outcome")
#: Files whose string comparisons are not of the engine's states, each with why.
NOT_OURS = {
    "workflows/codec.py": "the JSON type tags of the wire format (datetime, date...)",
    "workflows/deploy/stack.py": "CloudFormation's own stack statuses",
    "persistence/provision.py": "DynamoDB's own TimeToLiveStatus",
    "workflows/sim/world.py": "the simulator's process and moment kinds (worker, beat, deliver...), never stored",
    "workflows/sim/outage.py": "the simulator's process kinds",
}
SOAK = "workflows/soak/"  # the soak driver's workload names (chain, waiter...), never stored


def _named(node: ast.AST) -> str | None:
    """The name a compared expression reads: ``x.status``, ``status``, ``x["status"]``,
    ``x.get("status")``, or a write plan's attribute ``A("status")``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        return str(node.args[0].value) if called in ("get", "A") else None
    return None


def _literal(node: ast.AST) -> bool:
    """A string literal, or a tuple, set or list of them."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)) and node.elts:
        return all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return False


def string_comparisons(path: Path) -> list[str]:
    """``line: source`` of each comparison of a state-like name with a string literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for a, b in zip(sides, sides[1:], strict=False):
            for name, other in ((_named(a), b), (_named(b), a)):
                if name and any(w in name.lower() for w in WORDS) and _literal(other):
                    found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))]


def test_no_state_is_compared_with_a_string() -> None:
    found = []
    for path in _sources():
        relative = path.relative_to(ROOT).as_posix()
        if relative in NOT_OURS or relative.startswith(SOAK):
            continue
        found += [f"{relative}:{hit}" for hit in string_comparisons(path)]
    assert found == [], "compare with a member of workflows/core/model/states.py:\n" + "\n".join(found)


def test_the_rule_sees_each_form_it_forbids(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text('a = run.status == "completed"\nb = hook["status"] != "pending"\n'
                      'c = item.get("state") in ("active", "paused")\nd = A("status") == "pending"\n'
                      'e = kind == "step"\nf = run.status == RunStatus.COMPLETED\ng = name == "x"\n')
    assert [hit.split(":")[0] for hit in string_comparisons(source)] == ["1", "2", "3", "4", "5"]


def test_the_enums_live_in_one_module() -> None:
    defined = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) or ast.unparse(b) == "_Word"
                                                      for b in node.bases):
                defined.append(f"{path.relative_to(ROOT).as_posix()}:{node.name}")
    assert all(d.startswith("workflows/core/model/states.py:") for d in defined), defined


def test_each_member_is_its_stored_word() -> None:
    for kind in (states.RunStatus, states.OpKind, states.TimerKind, states.EventStatus, states.HookStatus,
                 states.ScheduleState, states.BatchState, states.CandidateKind):
        assert issubclass(kind, enum.Enum)
        for member in kind:
            assert member == member.value and str(member) == f"{member}" == member.value
            assert member in {member.value}  # hashes as its string: sets and dict keys of stored words hold
