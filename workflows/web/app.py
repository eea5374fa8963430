"""The dashboard's ASGI app: server-rendered pages and confirmed actions, with the hook endpoint.

Routes (below wherever the app is mounted)::

    GET  /runs                    runs, newest first (filters: status, workflow, tag; cursor paging)
    GET  /runs/{run_id}           a run: timeline, arguments, result, steps, hooks, history, links
    POST /runs/{run_id}/cancel    cancel (a confirmation page first)
    POST /runs/{run_id}/signal    send a signal: name + JSON payload (a confirmation page first)
    POST /runs/{run_id}/update    send an update: name + JSON payload (a confirmation page first), show its answer
    POST /runs/{run_id}/fork      fork at op ``at``, or without ``at`` rerun a failed run (a confirmation page first)
    GET  /schedules               schedules: timetable, next fires, overlap policy, state
    POST /schedules/action        pause, resume or trigger a schedule (a confirmation page first)
    GET|POST /batches, GET /batches/{id}, POST /batches/{id}/stop   batch operations (``web/batches.py``)
    GET  /metrics                 Prometheus metrics (when ``WORKFLOWS_METRICS`` is on)
    GET|POST /login, POST /logout the credential form and the session cookie
    POST /hooks/{token}, GET /healthz   the hook endpoint (``workflows.web.hooks``), unchanged

Every dashboard page and action needs the credential (see ``auth``); without
``WORKFLOWS_DASHBOARD_TOKEN`` the dashboard answers 404 and only the hook endpoint works.
"""

from __future__ import annotations

import functools
import logging
import secrets
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs, urlencode

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..client import STATUSES, cancel, send_signal
from ..codec import printable
from ..core.storage.ports import SessionStore
from ..errors import (
    InvalidExport,
    InvalidName,
    InvalidSchedule,
    InvalidTags,
    NotFound,
    RunEnded,
    SerializationError,
    UnknownStep,
    UnknownWorkflow,
    WorkflowError,
)
from ..forking import fork_run, rerun
from ..schedules import pause_schedule, resume_schedule, trigger_schedule
from .auth import SESSION_COOKIE, Credentials, session_hash
from .batches import BatchPages
from .hooks import ClientGone, HooksApp, HttpError, Receive, Scope, Send, read_body, route_path
from .hooks import create_app as create_hooks_app
from .throttle import SignInThrottle
from .updates import send_and_wait
from .views import run_view, runs_page, schedules_page, status_counts, time_window, when

FORM_LIMIT = 300 * 1024  # a signal payload up to the default payload limit, form-encoded
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
#: Messages shown after an action, by key (a redirect never carries text of its own).
NOTICES = {"cancelled": "Cancellation requested.", "signalled": "Signal sent.",
           "forked": "Forked: this new run reuses the original's outcomes before the fork position.",
           "paused": "Schedule paused.",
           "resumed": "Schedule resumed.", "triggered": "Schedule fired: a run started.",
           "not-started": "Not started now: the overlap policy skipped or buffered the fire."}
#: HTTP status of a refused action, most specific first (a workflow or step this process does not
#: know is no missing item: 409, as before they became NotFound errors).
ERROR_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (UnknownWorkflow, 409), (UnknownStep, 409), (NotFound, 404), (RunEnded, 409), (SerializationError, 422),
    (InvalidTags, 422), (InvalidExport, 422), (InvalidSchedule, 422), (InvalidName, 422), (WorkflowError, 409),
)
SCHEDULE_ACTIONS = {"pause": "Pause", "resume": "Resume", "trigger": "Trigger now"}

Handler = Callable[[Request, "Auth"], Awaitable[Response]]
log = logging.getLogger("workflows.web")


class Auth:
    """Who a request is: how it proved the credential, and its CSRF token."""

    def __init__(self, session_id: str | None, csrf: str) -> None:
        self.session_id, self.csrf = session_id, csrf


class Refused(Exception):
    """A request answered with an error page of ``status`` (and ``headers``)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(Path(__file__).with_name("templates")), autoescape=True,
                      finalize=printable)  # a lone surrogate stored by an older version is shown escaped
    env.filters["when"] = when
    env.globals["statuses"] = STATUSES
    return env


class Dashboard:
    """The pages and actions; ``credentials`` None means the dashboard is off."""

    def __init__(self, credentials: Credentials | None, hooks: HooksApp,
                 sessions: Callable[[], SessionStore] | None = None, throttle: SignInThrottle | None = None) -> None:
        self.credentials = credentials
        self.hooks = hooks
        self.sessions = sessions or _engine_store
        self.throttle = throttle or SignInThrottle()
        self.templates = _environment()

    def render(self, request: Request, name: str, code: int = 200, auth: Auth | None = None,
               headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
        """A page from a template; every payload in it is HTML-escaped (autoescape)."""
        base = request.scope.get("root_path", "")
        html = self.templates.get_template(name).render(base=base, csrf=auth.csrf if auth else "",
                                                        signed_in=auth is not None, **context)
        return HTMLResponse(html, status_code=code, headers={**SECURITY_HEADERS, **(headers or {})})

    def refusal(self, request: Request, exc: Refused) -> HTMLResponse:
        """The error page of a refused request."""
        return self.render(request, "error.html", exc.status, headers=exc.headers, message=exc.message)

    def redirect(self, request: Request, path: str, notice: str | None = None) -> RedirectResponse:
        """A 303 to a dashboard path (below the mount point)."""
        query = f"?{urlencode({'notice': notice})}" if notice else ""
        return RedirectResponse(request.scope.get("root_path", "") + path + query, status_code=303,
                                headers=SECURITY_HEADERS)

    # -- credentials ---------------------------------------------------------------------------

    async def authenticate(self, request: Request) -> Auth | None:
        """The request's proof of the credential: a bearer header, or a session cookie not signed out.

        A wrong bearer token counts as a failed sign-in of the client address (see ``throttle``)."""
        if self.credentials is None:
            raise Refused(404, "The dashboard is off: set WORKFLOWS_DASHBOARD_TOKEN to turn it on.")
        authorization = request.headers.get("authorization")
        if authorization is not None:
            self.check_throttle(request)
            if self.credentials.bearer_matches(authorization):
                return Auth(None, "")
            self.sign_in_failed(request, "bearer header")
        session_id = self.credentials.session_id(request.cookies.get(SESSION_COOKIE))
        if session_id is None or await self.call(self.sessions().session_ended, session_hash(session_id)):
            return None
        return Auth(session_id, self.credentials.csrf_token(session_id))

    def check_throttle(self, request: Request) -> None:
        """Refuse (429) a client address past its failed sign-ins, before its token is checked."""
        wait = self.throttle.retry_after(client_address(request))
        if wait is not None:
            raise Refused(429, f"Too many failed sign-ins from this address: try again in {int(wait + 0.999)} s.",
                          {"retry-after": str(int(wait + 0.999))})

    def sign_in_failed(self, request: Request, how: str) -> None:
        """Count and log a failed sign-in (the client address, never the token given)."""
        address = client_address(request)
        self.throttle.failed(address)
        log.warning("dashboard sign-in failed (%s) from %s", how, address)

    def guarded(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """Wrap a handler: refuse a request without the credential, and a form without its CSRF token."""
        async def endpoint(request: Request) -> Response:
            try:
                auth = await self.authenticate(request)
                if auth is None:
                    return self.render(request, "login.html", 401, message="Sign in to see this page.")
                if request.method == "POST":
                    form = await read_form(request)
                    request.state.form = form
                    if auth.session_id is not None and not self.credentials_ok(auth, form.get("csrf")):
                        raise Refused(403, "This form has expired or did not come from the dashboard. "
                                           "Open the page again and retry.")
                return await handler(request, auth)
            except Refused as exc:
                return self.refusal(request, exc)
        return endpoint

    def credentials_ok(self, auth: Auth, csrf: str | None) -> bool:
        """Whether a form's CSRF token belongs to the request's session."""
        return (self.credentials is not None and auth.session_id is not None
                and self.credentials.csrf_matches(auth.session_id, csrf))

    async def login_form(self, request: Request) -> Response:
        """GET /login."""
        if self.credentials is None:
            return self.render(request, "error.html", 404, message="The dashboard is off.")
        return self.render(request, "login.html")

    async def login(self, request: Request) -> Response:
        """POST /login: a right token gets a session cookie."""
        if self.credentials is None:
            return self.render(request, "error.html", 404, message="The dashboard is off.")
        try:
            self.check_throttle(request)
            form = await read_form(request)
        except Refused as exc:
            return self.refusal(request, exc)
        if not self.credentials.token_matches(form.get("token")):
            self.sign_in_failed(request, "sign-in form")
            return self.render(request, "login.html", 401, message="That is not the dashboard token.")
        response = self.redirect(request, "/runs")
        response.set_cookie(SESSION_COOKIE, self.credentials.new_session(),
                            max_age=int(self.credentials.session_seconds), path=request.scope.get("root_path") or "/",
                            httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return response

    async def logout(self, request: Request, auth: Auth) -> Response:
        """POST /logout: end the session on the server (every web process then refuses a copy of
        its cookie), then forget the cookie."""
        if auth.session_id is not None and self.credentials is not None:
            until = self.credentials.expiry(request.cookies.get(SESSION_COOKIE, ""))
            await self.call(self.sessions().end_session, session_hash(auth.session_id), until)
        response = self.redirect(request, "/login")
        response.delete_cookie(SESSION_COOKIE, path=request.scope.get("root_path") or "/")
        return response

    # -- pages ---------------------------------------------------------------------------------

    async def home(self, request: Request, auth: Auth) -> Response:
        """GET /: the runs."""
        return self.redirect(request, "/runs")

    async def runs(self, request: Request, auth: Auth) -> Response:
        """GET /runs."""
        query = request.query_params
        status, workflow, cursor = query.get("status") or "", query.get("workflow") or "", query.get("cursor") or ""
        start, end, tag = query.get("from") or "", query.get("to") or "", query.get("tag") or ""
        since, until = await self.call(time_window, start, end)
        data = await self.call(runs_page, status, workflow, cursor, since, until, tag)
        counts = await self.call(status_counts, since, until)
        filters = {"status": status, "workflow": workflow, "tag": tag, "from": start, "to": end}
        next_query = urlencode({k: v for k, v in (*filters.items(), ("cursor", data["next_cursor"])) if v})
        return self.render(request, "runs.html", auth=auth, status=status, workflow=workflow, start=start, end=end,
                           tag=tag, cursor=cursor, first_query=urlencode({k: v for k, v in filters.items() if v}),
                           next_query=next_query if data["next_cursor"] else "", runs=data["runs"],
                           notice=NOTICES.get(query.get("notice", "")), **counts)

    async def run(self, request: Request, auth: Auth) -> Response:
        """GET /runs/{run_id}."""
        data = await self.call(run_view, request.path_params["run_id"])
        return self.render(request, "run.html", auth=auth, notice=NOTICES.get(request.query_params.get("notice", "")),
                           **data)

    async def schedules(self, request: Request, auth: Auth) -> Response:
        """GET /schedules."""
        data = await self.call(schedules_page, request.query_params.get("cursor"))
        return self.render(request, "schedules.html", auth=auth, actions=SCHEDULE_ACTIONS,
                           notice=NOTICES.get(request.query_params.get("notice", "")), **data)

    # -- actions: a confirmation page, then the action ------------------------------------------

    def confirm(self, request: Request, auth: Auth, question: str, fields: dict[str, str],
                detail: str | None = None, label: str = "Payload:") -> Response:
        """The confirmation page of an action: the same form again, with ``confirm=yes``."""
        return self.render(request, "confirm.html", auth=auth, question=question, detail=detail, label=label,
                           action=request.url.path, fields=fields)

    async def cancel_run(self, request: Request, auth: Auth) -> Response:
        """POST /runs/{run_id}/cancel."""
        run_id = request.path_params["run_id"]
        if request.state.form.get("confirm") != "yes":
            return self.confirm(request, auth, f"Cancel run {run_id}?", {})
        await self.call(cancel, run_id)
        return self.redirect(request, f"/runs/{run_id}", "cancelled")

    async def signal_run(self, request: Request, auth: Auth) -> Response:
        """POST /runs/{run_id}/signal: ``name`` and ``payload`` (JSON text)."""
        run_id, form = request.path_params["run_id"], request.state.form
        name, text, payload = named_payload(form, "A signal")
        if form.get("confirm") != "yes":
            return self.confirm(request, auth, f"Send signal {name!r} to run {run_id}?",
                                {"name": name, "payload": text}, detail=text)
        await self.call(send_signal, run_id, name, payload)
        return self.redirect(request, f"/runs/{run_id}", "signalled")

    async def update_run(self, request: Request, auth: Auth) -> Response:
        """POST /runs/{run_id}/update: ``name`` and ``payload`` (JSON text); shows the answer (``web/updates.py``)."""
        run_id, form = request.path_params["run_id"], request.state.form
        name, text, payload = named_payload(form, "An update")
        if form.get("confirm") != "yes":
            # One update id per confirmation page: submitting it twice applies the update once.
            return self.confirm(request, auth, f"Send update {name!r} to run {run_id}?",
                                {"name": name, "payload": text, "update_id": secrets.token_hex(16)}, detail=text)
        update_id = form.get("update_id") or secrets.token_hex(16)
        result = await self.call(send_and_wait, run_id, name, payload, update_id)
        return self.render(request, "update.html", auth=auth, run_id=run_id, update_name=name, result=result)

    async def fork_run(self, request: Request, auth: Auth) -> Response:
        """POST /runs/{run_id}/fork: ``at`` (an op position), or none to rerun a failed run."""
        run_id, form = request.path_params["run_id"], request.state.form
        at_text = form.get("at", "").strip()
        at = parse_position(at_text) if at_text else None
        if form.get("confirm") != "yes":
            question = (f"Fork run {run_id} at op #{at}?" if at is not None
                        else f"Rerun run {run_id} from its failed step?")
            # One key per confirmation page: submitting it twice makes one run.
            return self.confirm(request, auth, question, {"at": at_text, "key": secrets.token_hex(16)})
        key = form.get("key") or None
        await run_in_threadpool(self.hooks.load_workflows)  # the new run needs the workflow's definition
        if at is None:
            fork = await self.call(functools.partial(rerun, run_id, idempotency_key=key))
        else:
            fork = await self.call(functools.partial(fork_run, run_id, at, idempotency_key=key))
        return self.redirect(request, f"/runs/{fork.run_id}", "forked")

    async def schedule_action(self, request: Request, auth: Auth) -> Response:
        """POST /schedules/action: ``schedule_id`` and ``action`` (pause, resume, trigger)."""
        form = request.state.form
        schedule_id, action = form.get("schedule_id", ""), form.get("action", "")
        if action not in SCHEDULE_ACTIONS:
            raise Refused(422, "Unknown schedule action.")
        if form.get("confirm") != "yes":
            return self.confirm(request, auth, f"{SCHEDULE_ACTIONS[action]} schedule {schedule_id}?",
                                {"schedule_id": schedule_id, "action": action})
        if action == "pause":
            await self.call(pause_schedule, schedule_id)
            return self.redirect(request, "/schedules", "paused")
        await run_in_threadpool(self.hooks.load_workflows)  # firing needs the workflow's definition
        if action == "resume":
            await self.call(resume_schedule, schedule_id)
            return self.redirect(request, "/schedules", "resumed")
        run = await self.call(trigger_schedule, schedule_id)
        return self.redirect(request, "/schedules", "triggered" if run is not None else "not-started")

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking library call in a thread; a refused one becomes an error page."""
        try:
            return await run_in_threadpool(fn, *args)
        except WorkflowError as exc:
            status = next(code for kind, code in ERROR_STATUS if isinstance(exc, kind))
            raise Refused(status, f"{type(exc).__name__}: {exc}") from None

    def routes(self) -> list[Route]:
        """The dashboard's routes."""
        g = self.guarded
        return [
            Route("/", g(self.home)),
            Route("/login", self.login_form, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", g(self.logout), methods=["POST"]),
            Route("/runs", g(self.runs)),
            Route("/runs/{run_id}", g(self.run)),
            Route("/runs/{run_id}/cancel", g(self.cancel_run), methods=["POST"]),
            Route("/runs/{run_id}/signal", g(self.signal_run), methods=["POST"]),
            Route("/runs/{run_id}/update", g(self.update_run), methods=["POST"]),
            Route("/runs/{run_id}/fork", g(self.fork_run), methods=["POST"]),
            Route("/schedules", g(self.schedules)),
            Route("/schedules/action", g(self.schedule_action), methods=["POST"]),
            Route("/metrics", g(self.metrics)),
            *BatchPages(self).routes(),
        ]

    async def metrics(self, request: Request, auth: Auth) -> Response:
        """The Prometheus metrics of this process (of every process sharing ``PROMETHEUS_MULTIPROC_DIR``)."""
        from ..settings import get_settings

        if not get_settings().metrics:
            raise Refused(404, "Metrics are off: set WORKFLOWS_METRICS=1 (pip install '.[metrics]').")
        from ..observe.metrics import exposition

        body, content_type = exposition()
        return Response(body, headers={"content-type": content_type})


def _engine_store() -> SessionStore:
    from ..runtime import get_engine

    return get_engine().store


def client_address(request: Request) -> str:
    """The client's address as the server saw it (the proxy's, unless uvicorn trusts its headers)."""
    return request.client.host if request.client else "unknown"


async def read_form(request: Request) -> dict[str, str]:
    """A url-encoded form body (the last value of each field), read with a running count: refused
    (413) over ``FORM_LIMIT`` and (408) when it has not all come within ``WORKFLOWS_WEB_BODY_TIMEOUT``."""
    from ..settings import get_settings

    try:
        body = await read_body(request.scope, request.receive, FORM_LIMIT, get_settings().web_body_timeout)
    except HttpError as exc:
        message = "The form is too large." if exc.status == 413 else f"The form did not arrive in time ({exc.message})."
        raise Refused(exc.status, message, {"connection": "close"}) from None
    except ClientGone:
        raise Refused(400, "The client went away before sending its form.") from None
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=20)
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "The form could not be read.") from None
    return {key: values[-1] for key, values in fields.items()}


def parse_position(text: str) -> int:
    """An op position typed in a form."""
    if not text.isdigit() or len(text) > 9:
        raise Refused(422, f"An op position is a whole number of 0 or more, got {text[:40]!r}.")
    return int(text)


def named_payload(form: dict[str, str], what: str) -> tuple[str, str, Any]:
    """A signal's or an update's form: its name, its payload as typed (``null`` if empty) and decoded."""
    name, text = form.get("name", "").strip(), form.get("payload", "").strip() or "null"
    payload = parse_json(text)
    if not name:
        raise Refused(422, f"{what} needs a name.")
    return name, text, payload


def parse_json(text: str) -> Any:
    """A signal payload typed into the form; refused when it is not JSON."""
    from .hooks import parse_body

    try:
        return parse_body(text.encode())
    except SerializationError:
        raise Refused(422, "The payload is not valid JSON.") from None


class WebApp:
    """One ASGI app: the hook endpoint's paths go to ``workflows.web.hooks``, the rest to the dashboard."""

    def __init__(self, dashboard: Starlette, hooks: HooksApp) -> None:
        self.dashboard, self.hooks = dashboard, hooks

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = route_path(scope)
            if path == "/healthz" or path.startswith("/hooks/"):
                await self.hooks(scope, receive, send)
                return
        await self.dashboard(scope, receive, send)


def create_app(token: str | None = None, *, hooks: HooksApp | None = None,
               sessions: SessionStore | None = None) -> WebApp:
    """Build the dashboard together with the hook endpoint.

    Args:
        token: the dashboard credential; default ``WORKFLOWS_DASHBOARD_TOKEN``. Without one
            the dashboard is off (404) and only the hook endpoint answers.
        hooks: the hooks app to serve under ``/hooks/`` (default: a new ``workflows.web.hooks`` app).
        sessions: where signed-out sessions are kept (default: the engine's store, DynamoDB).
    """
    if token is None:
        from ..settings import get_settings

        token = get_settings().dashboard_token
    hooks = hooks or create_hooks_app()
    dashboard = Dashboard(Credentials(token) if token else None, hooks,
                          None if sessions is None else (lambda: sessions))
    return WebApp(Starlette(routes=dashboard.routes()), hooks)
