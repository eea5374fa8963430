"""The compose stack's test (marker ``docker``) runs only when a marker expression names it.

It builds the image and runs the whole stack for minutes, so ``python -m pytest`` (README's
command, CI's) and the fast loop's ``-m "not e2e and not crash"`` leave it out without naming
it; ``python -m pytest -m docker`` runs it. Other tests here run as the rest of the suite does.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "docker" in (config.getoption("markexpr") or ""):
        return  # the expression decides: -m docker runs it, -m "not docker" leaves it out
    deselected = [item for item in items if item.get_closest_marker("docker")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("docker")]
