"""``python manage.py runs [--order ID] [--limit N]``: the fulfilment runs of orders, newest first.

Each line: the run's id, its status, the order's id and the order's status in the database.
"""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from shop.flows import fulfil_order
from shop.models import Order
from workflows import list_runs


class Command(BaseCommand):
    help = "List the fulfilment runs of orders (newest first), with each order's status."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--order", help="only the runs of this order (by its id)")
        parser.add_argument("--limit", type=int, default=50, help="at most this many runs (1 to 1000)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["order"]:
            page = list_runs(tag=f"order={options['order']}", workflow=fulfil_order, limit=options["limit"])
        else:
            page = list_runs(workflow=fulfil_order, limit=options["limit"])
        runs = list(page)
        orders = {str(o.id): o.status for o in Order.objects.filter(id__in=[r.tags["order"] for r in runs
                                                                           if r.tags and "order" in r.tags])}
        for run in runs:
            order = (run.tags or {}).get("order", "-")
            self.stdout.write(f"{run.run_id}  {run.status:<10} order {order}  {orders.get(order, 'missing')}")
        if not runs:
            self.stdout.write("no runs")
