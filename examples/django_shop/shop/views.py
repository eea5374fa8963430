"""The order endpoint: ``POST /orders`` with ``{"id": <uuid, optional>, "sku", "quantity", "cents"}``."""

import json
import uuid

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .orders import place_order


@csrf_exempt  # an API for programs, which send no session cookie
@require_POST
def create_order(request: HttpRequest) -> JsonResponse:
    """Create an order and start its fulfilment when the order is committed.

    A client that lost the response sends the same body again, ``id`` included: the second
    call finds the order and gets the same run. Answers 201 for a new order, 200 for a known one.
    """
    try:
        body = json.loads(request.body)
        order_id = uuid.UUID(body["id"]) if body.get("id") else None
        sku, quantity, cents = str(body["sku"]), int(body.get("quantity", 1)), int(body["cents"])
    except (ValueError, KeyError, TypeError) as exc:
        return JsonResponse({"error": f"bad order: {exc}"}, status=400)
    order, created, started = place_order(order_id, sku, quantity, cents)
    # The run starts when the view's transaction commits: here, at the end of place_order's block
    # (with ATOMIC_REQUESTS, after the view returns, and the answer has no run id).
    run_id = started[0].run_id if started else None
    return JsonResponse({"order": str(order.id), "run": run_id, "status": order.status},
                        status=201 if created else 200)
