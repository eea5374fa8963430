"""The crash suite reuses the end-to-end fixtures (real processes on the local stack)."""

from tests.e2e.conftest import cluster, proc_env, spawn  # noqa: F401
