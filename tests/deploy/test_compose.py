"""docker-compose.yml and the Dockerfile, checked without Docker (none is available to the tests).

The compose file parses, has a service per process, names only ``workflows`` commands that the
CLI's own parser accepts, sets only variables the settings read (or standard ``AWS_*`` ones),
and the Dockerfile copies only files that exist.
"""

from __future__ import annotations

import importlib
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflows.cli.commands import build_parser
from workflows.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"aws", "init", "worker", "beat", "hooks"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


class _Recording(dict):  # type: ignore[type-arg]
    """An empty environment that remembers every name read from it."""

    def __init__(self) -> None:
        super().__init__()
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return default


def settings_variables() -> set[str]:
    env = _Recording()
    Settings.from_env(env)
    return env.read


def _entrypoint(service: dict[str, Any]) -> list[str]:
    if "entrypoint" in service:
        value = service["entrypoint"]
        return shlex.split(value) if isinstance(value, str) else list(value)
    return _dockerfile_entrypoint()


def _dockerfile_entrypoint() -> list[str]:
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("ENTRYPOINT"):
            return list(yaml.safe_load(line.split(None, 1)[1]))
    return []


def test_every_process_is_a_service_built_from_the_dockerfile(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        assert service.get("build") == ".", name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
    assert services["worker"]["depends_on"]["init"]["condition"] == "service_completed_successfully"


def test_every_workflows_command_exists_in_the_cli(compose: dict[str, Any]) -> None:
    parser = build_parser()
    seen = set()
    for name, service in compose["services"].items():
        command = service.get("command", [])
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if _entrypoint(service) != ["workflows"]:
            continue
        seen.add(argv[0])
        # As main() does: after `worker` / `beat` every argument belongs to celery.
        args = parser.parse_args(argv[:1] if argv[0] in ("worker", "beat") else argv)
        assert callable(args.func), name
    assert seen == {"local-aws", "init-aws", "worker", "beat"}


def test_the_hook_endpoint_serves_the_library_app(compose: dict[str, Any]) -> None:
    hooks = compose["services"]["hooks"]
    assert _entrypoint(hooks) == ["uvicorn"]
    module, _, attribute = hooks["command"][0].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_every_variable_set_is_read_by_the_settings(compose: dict[str, Any]) -> None:
    known = settings_variables()
    assert {"WORKFLOWS_HOOK_SECRET", "WORKFLOWS_IMPORTS", "AWS_ENDPOINT_URL"} <= known
    for name, service in compose["services"].items():
        environment = service.get("environment", {})
        names = environment if isinstance(environment, dict) else [e.split("=", 1)[0] for e in environment]
        for variable in names:
            assert variable in known or variable.startswith("AWS_"), (name, variable)
    # The hook secret is never a value in the file: compose refuses to start without one.
    secret = compose["services"]["worker"]["environment"]["WORKFLOWS_HOOK_SECRET"]
    assert secret.startswith("${WORKFLOWS_HOOK_SECRET:?")


def test_the_dockerfile_copies_only_files_that_exist() -> None:
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY")]
    assert lines
    for parts in lines:
        sources = [p for p in parts[1:-1] if not p.startswith("--")]
        assert sources, parts
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    assert _dockerfile_entrypoint() == ["workflows"]


def test_the_dockerfile_installs_extras_that_exist() -> None:
    import re

    section = (ROOT / "pyproject.toml").read_text().split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    extras = set(re.findall(r"^([a-z]+) = \[", section, re.MULTILINE))
    installs = re.findall(r"pip install [^\n]*'\.\[([a-z,]+)\]'", (ROOT / "Dockerfile").read_text())
    assert installs and set(installs[0].split(",")) <= extras
    assert {"local", "http"} <= set(installs[0].split(","))  # the emulator and uvicorn run from this image
