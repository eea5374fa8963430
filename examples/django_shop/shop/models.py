"""An order, written by the view and updated by the workflow's steps (in a Celery worker)."""

import uuid

from django.db import models


class Order(models.Model):
    class Status(models.TextChoices):
        NEW = "new"
        PAID = "paid"
        SHIPPED = "shipped"

    #: Chosen by the client (or by the view when it gives none): a POST retried after a lost
    #: response names the same order, and so the same run (its idempotency key is made of it).
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    sku = models.CharField(max_length=64)
    quantity = models.PositiveIntegerField(default=1)
    cents = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.NEW)
    receipt = models.CharField(max_length=64, blank=True)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"order {self.id} ({self.status})"
