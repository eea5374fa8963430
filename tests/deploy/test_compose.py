"""docker-compose.yml and the Dockerfile, checked without Docker.

The compose file parses, has a service per process, builds its one image once (every other
service runs it as built and never pulls it), asks for no variable (``${VAR:?}`` fails every
command, ``ps``, ``logs`` and ``down`` included), gives the hook secret only to the processes
that read it, stops every service with SIGTERM (and the worker with time for a warm shutdown),
publishes the ports its commands and the examples name, names only ``workflows`` commands that
the CLI's own parser accepts (its header's commands included), and sets only variables the
settings (or the example modules it runs) read, or standard ``AWS_*`` ones. The Dockerfile
copies only files that exist, installs the dependencies and extras pyproject.toml declares,
and leaves the compiler in its build stage. ``tests/docker/test_compose_stack.py`` builds and
runs the stack (``python -m pytest -m docker``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from workflows.cli.commands import build_parser
from workflows.settings import MIN_HOOK_SECRET_BYTES, Settings

ROOT = Path(__file__).resolve().parents[2]
SERVICES = {"aws", "init", "worker", "beat", "hooks", "cli"}
IMAGE = "celery-durable-workflows:local"
INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}")


@pytest.fixture(scope="module")
def compose_text() -> str:
    return (ROOT / "docker-compose.yml").read_text()


@pytest.fixture(scope="module")
def compose(compose_text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(compose_text)
    assert isinstance(loaded, dict)
    return loaded


def interpolate(value: Any) -> Any:
    """``${VAR:-default}`` as compose resolves it with no variable set."""
    if isinstance(value, str):
        return INTERPOLATION.sub(lambda m: m.group(3) or "", value)
    return value


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


def example_variables(modules: str) -> set[str]:
    """The variables the example modules named in ``WORKFLOWS_IMPORTS`` read from the environment."""
    names: set[str] = set()
    for module in modules.split(","):
        source = inspect.getsource(importlib.import_module(module.strip()))
        names |= set(re.findall(r"os\.environ\.get\(\"([A-Z_]+)\"", source))
    return names


def _argv(value: Any) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value)


def _entrypoint(service: dict[str, Any]) -> list[str]:
    if "entrypoint" in service:
        return _argv(service["entrypoint"])
    return _dockerfile_entrypoint()


def _dockerfile() -> str:
    """The Dockerfile with its continuation lines joined, as Docker reads it."""
    return (ROOT / "Dockerfile").read_text().replace("\\\n", "")


def _dockerfile_entrypoint() -> list[str]:
    for line in _dockerfile().splitlines():
        if line.startswith("ENTRYPOINT"):
            return list(yaml.safe_load(line.split(None, 1)[1]))
    return []


def _stages() -> list[str]:
    """The Dockerfile's stages, each from its FROM line."""
    return ["FROM" + part for part in re.split(r"^FROM", _dockerfile(), flags=re.MULTILINE)[1:]]


def _header_commands(compose_text: str) -> list[list[str]]:
    """The ``docker compose ...`` commands of the file's header comment, one argv each."""
    commands = []
    for line in compose_text.splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("# ").split("  #", 1)[0]
        for part in text.split("&&"):
            if part.strip().startswith("docker compose "):
                commands.append(shlex.split(part)[2:])
    return commands


def test_every_process_is_a_service_running_the_one_image(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == SERVICES
    for name, service in services.items():
        assert service["image"] == IMAGE, name
        for dependency in service.get("depends_on", {}):
            assert dependency in services, (name, dependency)
    assert services["worker"]["depends_on"]["init"]["condition"] == "service_completed_successfully"
    assert services["init"]["depends_on"]["aws"]["condition"] == "service_healthy"


def test_one_service_builds_the_image_and_the_others_never_build_or_pull_it(compose: dict[str, Any]) -> None:
    """Five `build: .` made five builds (five image ids), and a `run` that rebuilt its service's image
    recreated `aws`, whose image then looked stale: the emulator's state was gone."""
    services = compose["services"]
    assert [name for name, service in services.items() if "build" in service] == ["aws"]
    assert services["aws"]["build"] == "."
    for name, service in services.items():
        if name != "aws":
            assert service.get("pull_policy") == "never", name


def test_the_command_line_service_starts_nothing_else(compose: dict[str, Any]) -> None:
    """`docker compose run --rm cli ...` has no dependency to start, so it never touches `aws`;
    `up` does not start it."""
    cli = compose["services"]["cli"]
    assert "depends_on" not in cli
    assert cli["profiles"] == ["cli"]
    assert not any("cli" in service.get("depends_on", {}) for service in compose["services"].values())


def test_no_documented_command_recreates_or_restarts_the_emulator(compose_text: str,
                                                                  compose: dict[str, Any]) -> None:
    commands = _header_commands(compose_text)
    verbs = [argv[0] for argv in commands]
    assert {"up", "run", "logs", "restart", "build", "down"} <= set(verbs), verbs
    for argv in commands:
        if argv[0] == "run":
            assert argv[1:3] == ["--rm", "cli"], argv  # never a service with dependencies
        if argv[0] == "restart":
            assert "aws" not in argv and len(argv) > 1, argv  # a named service, never the emulator
        if argv[0] == "up" and any(not a.startswith("-") for a in argv[1:]):
            # Named services after a rebuild: without their dependencies (aws), which a new image id recreates.
            assert "--no-deps" in argv and "aws" not in argv and "init" not in argv, argv
        assert "--build" not in argv and "--force-recreate" not in argv, argv
    assert "restart" not in compose["services"]["aws"]  # a restarted emulator would come back empty


def test_every_documented_cli_command_exists(compose_text: str) -> None:
    parser = build_parser()
    runs = [argv[3:] for argv in _header_commands(compose_text) if argv[0] == "run"]
    assert runs
    for argv in runs:
        args = parser.parse_args(argv)
        assert callable(args.func), argv


def test_every_workflows_command_exists_in_the_cli(compose: dict[str, Any]) -> None:
    parser = build_parser()
    seen = set()
    for name, service in compose["services"].items():
        argv = _argv(service.get("command", []))
        if _entrypoint(service) != ["workflows"]:
            continue
        seen.add(argv[0])
        if argv == ["--help"]:  # the cli service run bare
            with pytest.raises(SystemExit) as exited:
                parser.parse_args(argv)
            assert exited.value.code == 0
            continue
        # As main() does: after `worker` / `beat` every argument belongs to celery.
        args = parser.parse_args(argv[:1] if argv[0] in ("worker", "beat") else argv)
        assert callable(args.func), name
    assert seen == {"local-aws", "init-aws", "worker", "beat", "--help"}


def test_the_hook_endpoint_serves_the_library_app(compose: dict[str, Any]) -> None:
    hooks = compose["services"]["hooks"]
    assert _entrypoint(hooks) == ["uvicorn"]
    module, _, attribute = hooks["command"][0].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_no_command_asks_for_a_variable(compose_text: str) -> None:
    """Compose resolves the whole file for every command: a `${VAR:?}` anywhere made `ps`,
    `logs` and `down` refuse to run until the hook secret was exported."""
    found = INTERPOLATION.findall(compose_text)
    assert found
    for name, operator, default in found:
        assert operator == ":-" and default, f"${{{name}}} has no default"


def test_the_hook_secret_only_where_it_is_read_with_a_local_default_the_settings_accept(
        compose: dict[str, Any]) -> None:
    """Only workers derive hook tokens (a workflow's `hook()`); the value is a local-only default
    unless WORKFLOWS_HOOK_SECRET is set where compose runs."""
    holders = [name for name, service in compose["services"].items()
               if "WORKFLOWS_HOOK_SECRET" in (service.get("environment") or {})]
    assert holders == ["worker"]
    value = compose["services"]["worker"]["environment"]["WORKFLOWS_HOOK_SECRET"]
    assert value.startswith("${WORKFLOWS_HOOK_SECRET:-")
    default = interpolate(value)
    assert len(default.encode()) >= MIN_HOOK_SECRET_BYTES
    assert Settings.from_env({"WORKFLOWS_HOOK_SECRET": default}).hook_secret == default


def test_every_variable_set_is_read_by_the_settings_or_the_examples(compose: dict[str, Any]) -> None:
    known = settings_variables()
    assert {"WORKFLOWS_HOOK_SECRET", "WORKFLOWS_IMPORTS", "AWS_ENDPOINT_URL"} <= known
    for name, service in compose["services"].items():
        environment = service.get("environment", {})
        names = environment if isinstance(environment, dict) else [e.split("=", 1)[0] for e in environment]
        examples = example_variables(environment.get("WORKFLOWS_IMPORTS", "")) if names else set()
        for variable in names:
            assert variable in known or variable in examples or variable.startswith("AWS_"), (name, variable)


def _seconds(duration: str) -> float:
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def test_every_service_stops_on_sigterm_within_its_grace(compose: dict[str, Any]) -> None:
    """`docker stop` sends SIGTERM, then SIGKILL after the grace period. Each main process ends on
    SIGTERM: Celery's worker (a warm shutdown: running steps finish) and beat, uvicorn, and
    `workflows local-aws` (which ignored it as PID 1 and was killed after 10 s:
    tests/docker/test_local_aws_signals.py)."""
    from workflows.local import server

    assert "SIGTERM" in inspect.getsource(server.serve_forever)
    for name, service in compose["services"].items():
        assert service.get("stop_signal", "SIGTERM") == "SIGTERM", name
        if name in ("init", "cli"):
            continue  # one-shot
        assert "stop_grace_period" in service, name
    grace = {name: _seconds(s["stop_grace_period"]) for name, s in compose["services"].items()
             if "stop_grace_period" in s}
    assert grace["aws"] <= 10 and grace["beat"] <= 10 and grace["hooks"] <= 10
    assert grace["worker"] >= 60  # time for running steps to finish


def _published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host address, host port with no variable set, container port) of each published port."""
    ports = []
    for entry in service.get("ports", []):
        host, host_port, container_port = interpolate(entry).rsplit(":", 2)
        ports.append((host, int(host_port), int(container_port)))
    return ports


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_ports_agree_with_the_commands_the_endpoint_and_the_examples(compose: dict[str, Any]) -> None:
    services = compose["services"]
    aws, hooks = services["aws"], services["hooks"]
    # The emulator: the port local-aws listens on, the one the processes and the healthcheck use.
    [(host, host_port, port)] = _published(aws)
    assert (host, host_port) == ("127.0.0.1", 5000)
    assert int(_flag(aws["command"], "--port")) == port
    assert f"127.0.0.1:{port}/" in aws["healthcheck"]["test"][-1]
    for name, service in services.items():
        endpoint = (service.get("environment") or {}).get("AWS_ENDPOINT_URL")
        assert endpoint in (None, f"http://aws:{port}"), name
    # The hook endpoint: uvicorn's port, published under the port the approval example's links name.
    [(host, host_port, port)] = _published(hooks)
    assert host == "127.0.0.1" and int(_flag(hooks["command"], "--port")) == port
    # The links name the published port, whatever HOOKS_PORT is; with none set, the example's own default.
    published = re.fullmatch(r"127\.0\.0\.1:(\$\{HOOKS_PORT:-\d+\}):\d+", hooks["ports"][0])
    assert published, hooks["ports"]
    host_port_expression = published.group(1)
    link_base = services["worker"]["environment"]["APPROVAL_BASE_URL"]
    assert link_base == f"http://127.0.0.1:{host_port_expression}"
    source = inspect.getsource(importlib.import_module("examples.approval"))
    assert f'os.environ.get("APPROVAL_BASE_URL", "http://127.0.0.1:{host_port}")' in source


def test_the_dockerfile_copies_only_files_that_exist() -> None:
    lines = [line.split() for line in _dockerfile().splitlines() if line.startswith("COPY")]
    assert lines
    for parts in lines:
        if any(p.startswith("--from=") for p in parts):
            continue  # from a build stage
        sources = [p for p in parts[1:-1] if not p.startswith("--")]
        assert sources, parts
        for source in sources:
            assert (ROOT / source).exists(), f"COPY {source}: no such file in the repository"
    assert _dockerfile_entrypoint() == ["workflows"]


def test_the_dockerfile_installs_what_pyproject_declares(tmp_path: Path) -> None:
    """The requirements the build writes (a Python one-liner reading pyproject.toml) hold every
    dependency, the `http` extra and the `local` extra's moto with the emulator's services only."""
    snippet = re.search(r"RUN python -c \"(.*?)\"\s*> requirements.txt", _dockerfile(), re.DOTALL)
    assert snippet, "the Dockerfile no longer writes requirements.txt from pyproject.toml"
    (tmp_path / "pyproject.toml").write_bytes((ROOT / "pyproject.toml").read_bytes())
    done = subprocess.run([sys.executable, "-c", snippet.group(1)], cwd=tmp_path, capture_output=True, text=True,
                          check=True)
    written = done.stdout.splitlines()
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = toml["project"]["optional-dependencies"]
    for requirement in toml["project"]["dependencies"] + extras["http"] + toml["build-system"]["requires"]:
        assert requirement in written, requirement
    [moto] = [r for r in extras["local"] if r.startswith("moto")]
    assert moto.replace("moto[server]", "moto[dynamodb,s3,sqs]") in written and moto not in written
    assert {"flask", "flask-cors"} <= set(written)  # what moto's server runs on (the rest of its `server` extra
    # is the libraries of services the stack does not use)


def test_the_image_leaves_the_compiler_and_pip_in_the_build_stage() -> None:
    *build, image = _stages()
    assert build and " AS build" in build[0].splitlines()[0]
    assert "gcc" in build[0]  # pycurl, compiled against the distribution's libcurl
    for word in ("gcc", "-dev", "pip install", "pip --python"):
        assert word not in image, word
    assert "COPY --from=build /opt/venv /opt/venv" in image
    assert "--only-binary=:all: --no-binary=pycurl" in build[0]  # nothing else is compiled
    assert "USER nobody" in image
