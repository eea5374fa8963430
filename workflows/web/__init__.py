"""The web dashboard: runs, their timelines and history, schedules, and confirmed actions.

Served together with the hook endpoint (``workflows.web.hooks``, also served as ``workflows.http``) by one ASGI app::

    workflows web --port 8000                       # WORKFLOWS_DASHBOARD_TOKEN must be set
    uvicorn --factory workflows.web:create_app      # the same app, served by uvicorn itself
    starlette_app.mount("/ops", workflows.web.create_app())

Needs the ``web`` extra (starlette, jinja2, uvicorn). See docs/dashboard.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..settings import Settings
    from .app import WebApp

#: The largest request line and headers uvicorn's h11 parser buffers (bytes); more is a 400.
MAX_HEADER_BYTES = 16 * 1024
#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE_SECONDS = 5


def server_options(settings: Settings) -> dict[str, Any]:
    """The uvicorn options ``workflows web`` serves with (docs/dashboard.md gives the same as flags):
    at most ``web_max_connections`` connections (503 past them), the h11 parser with a header
    limit, and a short keep-alive. The body deadline (``web_body_timeout``) is the app's own.
    Forwarding headers are believed only from ``web_trusted_proxies`` (uvicorn would believe them from
    loopback by default)."""
    trusted = ",".join(settings.web_trusted_proxies)
    return {"http": "h11", "limit_concurrency": settings.web_max_connections,
            "proxy_headers": bool(trusted), "forwarded_allow_ips": trusted,
            "timeout_keep_alive": KEEP_ALIVE_SECONDS, "h11_max_incomplete_event_size": MAX_HEADER_BYTES,
            "timeout_graceful_shutdown": 30}


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
