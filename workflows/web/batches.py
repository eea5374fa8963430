"""The dashboard's batch pages: start a batch from a filter (confirmed, with a preview of the runs
it selects), follow its progress, stop it.

Routes (below the dashboard's mount point)::

    GET  /batches                 the newest batches and the form of a new one (``?before=ID``: the next page)
    POST /batches                 start a batch (a confirmation page first, with the first runs it selects)
    GET  /batches/{batch_id}      a batch's progress (refreshes while it runs)
    POST /batches/{batch_id}/stop stop it (a confirmation page first)
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..batches import get_batch, list_batches, start_batch, stop_batch
from ..batches.api import selection_of
from ..batches.driver import select_page
from ..core.model.batches import OPERATIONS
from ..options import RunFilter, TimeRange
from ..runtime import get_engine
from .views import time_window

if TYPE_CHECKING:
    from .app import Auth, Dashboard

#: The batches a page lists.
PAGE = 50
#: The runs a confirmation page shows of a new batch's selection.
PREVIEW = 20
#: The fields of the new-batch form, re-posted by its confirmation page.
FIELDS = ("operation", "status", "workflow", "tag", "from", "to", "rate", "reason", "name", "payload", "tags")
NOTICES = {"started": "Batch started: beat drives it at its rate.", "stopped": "Batch stopped."}


def _tags(text: str) -> dict[str, str | None]:
    """``k=v, k2=`` typed in the form: the tags to set (an empty value removes the key)."""
    pairs = [p.strip() for p in text.split(",") if p.strip()]
    return {k.strip(): (v.strip() or None) for k, _, v in (p.partition("=") for p in pairs)}


class BatchPages:
    """The batch pages of a :class:`~workflows.web.app.Dashboard`."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def routes(self) -> list[Route]:
        """The batch routes, each guarded like every dashboard page."""
        g = self.dashboard.guarded
        return [Route("/batches", g(self.batches), methods=["GET"]),
                Route("/batches", g(self.start), methods=["POST"]),
                Route("/batches/{batch_id}", g(self.batch), methods=["GET"]),
                Route("/batches/{batch_id}/stop", g(self.stop), methods=["POST"])]

    async def batches(self, request: Request, auth: Auth) -> Response:
        """GET /batches."""
        before = request.query_params.get("before") or None
        found = await self.dashboard.call(functools.partial(list_batches, PAGE, before=before))
        older = found[-1].batch_id if len(found) == PAGE else None
        return self.dashboard.render(request, "batches.html", auth=auth, batches=found, operations=OPERATIONS,
                                     older=older, paged=before is not None,
                                     notice=NOTICES.get(request.query_params.get("notice", "")))

    async def batch(self, request: Request, auth: Auth) -> Response:
        """GET /batches/{batch_id}: its progress."""
        found = await self.dashboard.call(get_batch, request.path_params["batch_id"])
        return self.dashboard.render(request, "batch.html", auth=auth, batch=found,
                                     params=json.dumps(found.params, default=str) if found.params else "",
                                     notice=NOTICES.get(request.query_params.get("notice", "")))

    async def start(self, request: Request, auth: Auth) -> Response:
        """POST /batches: the form's operation and filter (a confirmation page first)."""
        from .app import Refused, parse_json

        form = {k: request.state.form.get(k, "").strip() for k in FIELDS}
        operation = form["operation"]
        if operation not in OPERATIONS:
            raise Refused(422, "Choose an operation: " + ", ".join(OPERATIONS) + ".")
        since, until = await self.dashboard.call(time_window, form["from"], form["to"])
        run_filter = RunFilter(status=form["status"] or None, workflow=form["workflow"] or None,
                               tag=form["tag"] or None, created=TimeRange(since, until))
        params: dict[str, Any] = {}
        if operation == "cancel" and form["reason"]:
            params["reason"] = form["reason"]
        if operation == "signal":
            params = {"name": form["name"], "payload": parse_json(form["payload"] or "null")}
        if operation == "tag":
            params["tags"] = _tags(form["tags"])
        rate = None
        if form["rate"]:
            try:
                rate = float(form["rate"])
            except ValueError:
                raise Refused(422, f"The rate is runs per second, got {form['rate'][:40]!r}.") from None
        if request.state.form.get("confirm") != "yes":
            preview = await self.dashboard.call(self.preview, run_filter)
            question = f"{operation.capitalize()} the runs this filter selects ({preview['filter']})?"
            detail = "\n".join(preview["runs"]) + ("\n... and more" if preview["more"] else "") or "No run yet."
            return self.dashboard.confirm(request, auth, question, form, detail=detail,
                                          label="The first runs it selects now:")
        batch_id = await self.dashboard.call(functools.partial(start_batch, operation, run_filter, rate=rate,
                                                               **params))
        return self.dashboard.redirect(request, f"/batches/{batch_id}", "started")

    @staticmethod
    def preview(run_filter: RunFilter) -> dict[str, Any]:
        """The filter in words and the first runs it selects now (checked as a batch would be)."""
        engine = get_engine()
        selection = selection_of(run_filter, engine.now())
        page = select_page(engine, selection, None, PREVIEW)
        runs = [f"{r.run_id}  {r.workflow}  {r.status}" for r in page]
        return {"filter": selection.describe(), "runs": runs, "more": page.next_cursor is not None}

    async def stop(self, request: Request, auth: Auth) -> Response:
        """POST /batches/{batch_id}/stop."""
        batch_id = request.path_params["batch_id"]
        if request.state.form.get("confirm") != "yes":
            return self.dashboard.confirm(request, auth, f"Stop batch {batch_id}?", {})
        await self.dashboard.call(stop_batch, batch_id)
        return self.dashboard.redirect(request, f"/batches/{batch_id}", "stopped")
