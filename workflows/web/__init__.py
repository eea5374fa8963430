"""The web dashboard: runs, their timelines and history, schedules, and confirmed actions.

Served together with the hook endpoint (``workflows.http``) by one ASGI app::

    workflows web --port 8000                       # WORKFLOWS_DASHBOARD_TOKEN must be set
    uvicorn --factory workflows.web:create_app      # the same app, served by uvicorn itself
    starlette_app.mount("/ops", workflows.web.create_app())

Needs the ``web`` extra (starlette, jinja2, uvicorn). See docs/dashboard.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import WebApp


def create_app(token: str | None = None, **options: Any) -> WebApp:
    """Build the dashboard with the hook endpoint (see :func:`workflows.web.app.create_app`).

    Raises:
        ImportError: the ``web`` extra is not installed (the message says how to install it).
    """
    try:
        from .app import create_app as build
    except ImportError as exc:
        raise ImportError(f"the dashboard needs the 'web' extra: pip install 'celery-durable-workflows[web]' "
                          f"({exc})") from exc
    return build(token, **options)
