"""The Django example (examples/django_shop) against the session's local AWS server.

The project gets queues and tables of its own (prefixes below the session's), so the session's
beat, sweeping the shared tables, never sends its timers to a worker that knows none of its
code, and its SQLite file lives in a directory of the session. Django runs only in processes
the tests start (``manage.py shell -c``, ``celery -A shop_site worker``): the project installs
workflows into its Celery app when it loads, which must not happen in the test process. This
process reads the project's runs from its tables and its orders from the SQLite file.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.conftest import IN_CI, ROOT
from workflows.core.engine import Engine
from workflows.runtime import build_engine, use_engine
from workflows.settings import Settings

EXAMPLE = ROOT / "examples" / "django_shop"


@pytest.fixture(scope="session", autouse=True)
def django_installed() -> None:
    try:
        import django  # noqa: F401
    except ImportError:
        if IN_CI:
            pytest.fail("django is required in CI (pip install -e '.[dev]')")
        pytest.skip("SKIPPED LOUDLY: django is not installed (pip install -e '.[django]')")


@pytest.fixture(scope="session")
def shop_settings(settings: Settings) -> Settings:
    from persistence.provision import create_queues, create_tables

    shop = settings.with_(queue_prefix=settings.queue_prefix + "shop-", table_prefix=settings.table_prefix + "shop-")
    create_tables(shop)
    create_queues(shop)
    return shop


@pytest.fixture(scope="session")
def shop_env(shop_settings: Settings, proc_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
             ) -> dict[str, str]:
    """The environment of the project's processes, its database migrated."""
    env = {**proc_env, "DJANGO_SETTINGS_MODULE": "shop_site.settings",
           "SHOP_DATA_DIR": str(tmp_path_factory.mktemp("shop-data")), "SHOP_BROKER_URL": shop_settings.broker_url(),
           "WORKFLOWS_QUEUE_PREFIX": shop_settings.queue_prefix, "WORKFLOWS_TABLE_PREFIX": shop_settings.table_prefix,
           "WORKFLOWS_IMPORTS": "",  # the project's workflows are found by its Celery app (autodiscover_tasks)
           "WORKFLOWS_SWEEP_INTERVAL": "1", "PYTHONPATH": f"{EXAMPLE}{os.pathsep}{ROOT}"}
    manage(env, "migrate", "--no-input")
    return env


@pytest.fixture(scope="session")
def shop_engine(shop_settings: Settings) -> Engine:
    return build_engine(shop_settings)


@pytest.fixture(autouse=True)
def reads_the_shop(shop_engine: Engine) -> Iterator[None]:
    """This process reads the project's runs from its tables."""
    with use_engine(shop_engine):
        yield


def manage(env: dict[str, str], *args: str) -> str:
    """Run ``python manage.py <args>`` in the project; return what it printed."""
    out = subprocess.run([sys.executable, "manage.py", *args], cwd=EXAMPLE, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def shell(env: dict[str, str], code: str) -> str:
    """Run ``code`` with ``manage.py shell -c`` (Django set up, the project loaded); return its last line."""
    return manage(env, "shell", "-c", code).strip().splitlines()[-1]


def order_row(env: dict[str, str], order_id: str) -> dict[str, Any] | None:
    """The order's row in the project's SQLite file (None if there is none)."""
    with contextlib.closing(sqlite3.connect(Path(env["SHOP_DATA_DIR"]) / "db.sqlite3", timeout=20)) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM shop_order WHERE id = ?", (uuid.UUID(order_id).hex,)).fetchone()
    return dict(row) if row else None
